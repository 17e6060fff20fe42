#include "runtime/cgroup/systemd_scope.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-bus.h>

#include "runtime/base/files.h"
#include "runtime/cgroup/cgroup2.h"
#include "runtime/cgroup/cgroup_fs.h"

namespace sandbox::cgroup {
namespace {

using std::chrono::steady_clock;

constexpr const char* kSystemd = "org.freedesktop.systemd1";
constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";
// A method call to the manager, and the wait for the scope's start job. Generous: under
// emulation or on a loaded desktop a unit start can take seconds.
constexpr uint64_t kCallTimeoutUsec = 10'000'000;
constexpr auto kJobTimeout = std::chrono::seconds(15);

struct BusUnref {
  void operator()(sd_bus* bus) const { sd_bus_flush_close_unref(bus); }
};
struct MessageUnref {
  void operator()(sd_bus_message* message) const { sd_bus_message_unref(message); }
};
struct SlotUnref {
  void operator()(sd_bus_slot* slot) const { sd_bus_slot_unref(slot); }
};
using Bus = std::unique_ptr<sd_bus, BusUnref>;
using Message = std::unique_ptr<sd_bus_message, MessageUnref>;
using Slot = std::unique_ptr<sd_bus_slot, SlotUnref>;

// An sd_bus_error freed on scope exit.
class BusError {
 public:
  BusError() = default;
  BusError(const BusError&) = delete;
  BusError& operator=(const BusError&) = delete;
  ~BusError() { sd_bus_error_free(&error_); }
  sd_bus_error* get() { return &error_; }
  bool Is(const char* name) const { return sd_bus_error_has_name(&error_, name) != 0; }
  // The manager's own words when it sent an error, else the errno's.
  std::string Text(int r) const {
    if (sd_bus_error_is_set(&error_) != 0 && error_.message != nullptr) return error_.message;
    return std::strerror(-r);
  }

 private:
  sd_bus_error error_ = SD_BUS_ERROR_NULL;
};

Error BusFailure(std::string_view what, int r) {
  return MakeError(ErrorCode::kSandboxUnavailable, "{}: {}", what, std::strerror(-r));
}

std::string Env(const char* name) {
  const char* value = ::getenv(name);
  return value != nullptr ? value : "";
}

// The user's bus, where sd_bus_open_user() looks for it: DBUS_SESSION_BUS_ADDRESS, else
// $XDG_RUNTIME_DIR/bus (the socket user@UID.service listens on).
Result<Bus> OpenUserBus() {
  std::string address = Env("DBUS_SESSION_BUS_ADDRESS");
  std::string runtime_dir = Env("XDG_RUNTIME_DIR");
  if (address.empty() && runtime_dir.empty()) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "no user bus to ask (neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is "
                "set: no systemd user manager runs for this login)");
  }
  sd_bus* raw = nullptr;
  int r = sd_bus_open_user(&raw);
  if (r < 0) {
    return Fail(BusFailure(fmt::format("cannot reach the user bus at {}",
                                       address.empty() ? runtime_dir + "/bus" : address),
                           r));
  }
  return Bus(raw);
}

Result<Message> NewManagerCall(sd_bus* bus, const char* method) {
  sd_bus_message* raw = nullptr;
  int r = sd_bus_message_new_method_call(bus, &raw, kSystemd, kManagerPath, kManager, method);
  if (r < 0) return Fail(BusFailure(fmt::format("build {}", method), r));
  return Message(raw);
}

Result<Message> Call(sd_bus* bus, sd_bus_message* call, const char* method, BusError& error) {
  sd_bus_message* reply = nullptr;
  int r = sd_bus_call(bus, call, kCallTimeoutUsec, error.get(), &reply);
  if (r < 0) {
    return Fail(MakeError(ErrorCode::kSandboxUnavailable,
                          "the user's systemd manager refused {}: {}", method, error.Text(r)));
  }
  return Message(reply);
}

// Manager.StartTransientUnit(name, "fail", [PIDs, Delegate, ...], []). Returns the job's path.
Result<std::string> StartScope(sd_bus* bus, const std::string& name, BusError& error) {
  SBX_ASSIGN_OR_RETURN(Message call, NewManagerCall(bus, "StartTransientUnit"));
  sd_bus_message* m = call.get();
  std::string description = fmt::format("mcp-sandbox server {} and its sandboxes", ::getpid());
  int r = sd_bus_message_append(m, "ss", name.c_str(), "fail");
  if (r >= 0) r = sd_bus_message_open_container(m, 'a', "(sv)");
  if (r >= 0)
    r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, static_cast<uint32_t>(::getpid()));
  // The point of it all: the cgroup subtree below the scope is ours to manage.
  if (r >= 0) r = sd_bus_message_append(m, "(sv)", "Delegate", "b", 1);
  if (r >= 0) r = sd_bus_message_append(m, "(sv)", "Description", "s", description.c_str());
  // A failed scope is unloaded too, so its name is free for the next server.
  if (r >= 0) r = sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed");
  if (r >= 0) r = sd_bus_message_close_container(m);
  if (r >= 0) r = sd_bus_message_append(m, "a(sa(sv))", 0);
  if (r < 0) return Fail(BusFailure("build StartTransientUnit", r));
  SBX_ASSIGN_OR_RETURN(Message reply, Call(bus, m, "StartTransientUnit", error));
  const char* job = nullptr;
  r = sd_bus_message_read(reply.get(), "o", &job);
  if (r < 0) return Fail(BusFailure("read StartTransientUnit's reply", r));
  return std::string(job);
}

// Manager.KillUnit(name, "all", SIGKILL) then Manager.StopUnit(name, "replace"): a scope's
// processes are not ours to signal one by one (the sandboxes' pid-namespace inits ignore
// SIGTERM), and stopping alone would wait out TimeoutStopSec.
Status KillAndStop(sd_bus* bus, const std::string& name) {
  for (const char* method : {"KillUnit", "StopUnit"}) {
    SBX_ASSIGN_OR_RETURN(Message call, NewManagerCall(bus, method));
    int r = std::strcmp(method, "KillUnit") == 0
                ? sd_bus_message_append(call.get(), "ssi", name.c_str(), "all", SIGKILL)
                : sd_bus_message_append(call.get(), "ss", name.c_str(), "replace");
    if (r < 0) return Fail(BusFailure(fmt::format("build {}", method), r));
    BusError error;
    auto reply = Call(bus, call.get(), method, error);
    // Gone meanwhile (it emptied and was collected): that is what we wanted.
    if (!reply && !error.Is("org.freedesktop.systemd1.NoSuchUnit")) {
      return Fail(std::move(reply.error()).Context(name));
    }
  }
  return {};
}

struct JobWait {
  std::string job;
  std::string result;  // "done" on success; empty until JobRemoved arrives
};

int OnJobRemoved(sd_bus_message* message, void* userdata, sd_bus_error*) {
  auto* wait = static_cast<JobWait*>(userdata);
  uint32_t id = 0;
  const char* path = nullptr;
  const char* unit = nullptr;
  const char* result = nullptr;
  if (sd_bus_message_read(message, "uoss", &id, &path, &unit, &result) < 0) return 0;
  if (wait->job == path) wait->result = result;
  return 0;
}

// Whether /proc/self/cgroup's v2 path ends in "/<unit>".
bool InUnit(const std::string& unit) {
  auto entries = ReadProcCgroup();
  if (!entries) return false;
  std::optional<std::string> path = V2PathOf(*entries);
  std::string suffix = "/" + unit;
  return path && path->size() >= suffix.size() &&
         path->compare(path->size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Waits for the job's JobRemoved signal (the match must be installed before the job was started,
// or the signal can be missed), then checks that this process is in the scope.
Status WaitForScope(sd_bus* bus, JobWait& wait, const std::string& unit) {
  auto deadline = steady_clock::now() + kJobTimeout;
  while (wait.result.empty()) {
    int r = sd_bus_process(bus, nullptr);
    if (r < 0) return Fail(BusFailure("read the user bus", r));
    if (r > 0) continue;  // more may be queued
    auto left = deadline - steady_clock::now();
    if (left <= steady_clock::duration::zero()) {
      return Fail(ErrorCode::kSandboxUnavailable,
                  "the user's systemd manager did not start {} within {} s", unit,
                  std::chrono::duration_cast<std::chrono::seconds>(kJobTimeout).count());
    }
    r = sd_bus_wait(bus, std::chrono::duration_cast<std::chrono::microseconds>(left).count());
    if (r < 0) return Fail(BusFailure("wait on the user bus", r));
  }
  if (wait.result != "done") {
    return Fail(ErrorCode::kSandboxUnavailable,
                "the user's systemd manager could not start {} (job result: {})", unit,
                wait.result);
  }
  if (!InUnit(unit)) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "{} started, but this process is not in it (/proc/self/cgroup)", unit);
  }
  return {};
}

// Whether any process is in `dir` (a cgroup directory): a missing directory holds none.
bool HoldsProcesses(const std::string& dir) {
  auto pids = ReadPids(dir + "/cgroup.procs");
  return pids && !pids->empty();
}

}  // namespace

std::string ScopeNameFor(const std::string& owner, pid_t pid) {
  return fmt::format("{}-{}.scope", owner, pid);
}

bool IsScopeOf(const std::string& owner, const std::string& unit) {
  const std::string prefix = owner + "-";
  const std::string suffix = ".scope";
  if (unit.size() <= prefix.size() + suffix.size() || unit.rfind(prefix, 0) != 0 ||
      unit.compare(unit.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  for (size_t i = prefix.size(); i < unit.size() - suffix.size(); ++i) {
    if (unit[i] < '0' || unit[i] > '9') return false;
  }
  return true;
}

Result<std::string> MoveIntoDelegatedScope(const std::string& owner) {
  SBX_ASSIGN_OR_RETURN(Bus bus, OpenUserBus());
  const std::string unit = ScopeNameFor(owner, ::getpid());
  JobWait wait;
  sd_bus_slot* raw_slot = nullptr;
  int r = sd_bus_match_signal(bus.get(), &raw_slot, kSystemd, kManagerPath, kManager, "JobRemoved",
                              OnJobRemoved, &wait);
  if (r < 0) return Fail(BusFailure("subscribe to JobRemoved", r));
  Slot slot(raw_slot);

  BusError error;
  auto job = StartScope(bus.get(), unit, error);
  if (!job && error.Is("org.freedesktop.systemd1.UnitExists")) {
    // Our pid names it, and we are not in it: a crashed server of this state dir had this pid.
    spdlog::info("cgroup: stopping {}, left by an earlier server with this pid", unit);
    SBX_TRY(KillAndStop(bus.get(), unit));
    BusError retry_error;
    job = StartScope(bus.get(), unit, retry_error);
  }
  if (!job) return Fail(std::move(job.error()));
  wait.job = *job;
  SBX_TRY(WaitForScope(bus.get(), wait, unit));
  return unit;
}

Result<int> SweepStaleScopes(const std::string& owner, const std::string& mount) {
  SBX_ASSIGN_OR_RETURN(Bus bus, OpenUserBus());
  SBX_ASSIGN_OR_RETURN(Message call, NewManagerCall(bus.get(), "ListUnitsByPatterns"));
  std::string pattern = owner + "-*.scope";
  const char* patterns[] = {pattern.c_str(), nullptr};
  int r = sd_bus_message_append_strv(call.get(), nullptr);
  if (r >= 0) r = sd_bus_message_append_strv(call.get(), const_cast<char**>(patterns));
  if (r < 0) return Fail(BusFailure("build ListUnitsByPatterns", r));
  BusError error;
  SBX_ASSIGN_OR_RETURN(Message reply, Call(bus.get(), call.get(), "ListUnitsByPatterns", error));

  struct Unit {
    std::string name;
    std::string path;
  };
  std::vector<Unit> units;
  r = sd_bus_message_enter_container(reply.get(), 'a', "(ssssssouso)");
  while (r > 0) {
    const char* name = nullptr;
    const char* path = nullptr;
    r = sd_bus_message_read(reply.get(), "(ssssssouso)", &name, nullptr, nullptr, nullptr, nullptr,
                            nullptr, &path, nullptr, nullptr, nullptr);
    if (r > 0 && IsScopeOf(owner, name)) units.push_back({name, path});
  }
  if (r < 0) return Fail(BusFailure("read ListUnitsByPatterns' reply", r));

  int stopped = 0;
  for (const Unit& unit : units) {
    char* cgroup = nullptr;
    BusError property_error;
    r = sd_bus_get_property_string(bus.get(), kSystemd, unit.path.c_str(),
                                   "org.freedesktop.systemd1.Scope", "ControlGroup",
                                   property_error.get(), &cgroup);
    if (r < 0) continue;  // collected meanwhile
    std::string dir = mount + cgroup;
    ::free(cgroup);
    // A live server sits in its scope's own cgroup (just started) or in its leaf "server".
    if (HoldsProcesses(dir) || HoldsProcesses(dir + "/" + kServerLeaf)) continue;
    spdlog::info("cgroup: stopping {}: its server is gone", unit.name);
    SBX_TRY(KillAndStop(bus.get(), unit.name));
    ++stopped;
  }
  return stopped;
}

}  // namespace sandbox::cgroup
