// sd-bus through libsystemd_on_demand.cc (libsystemd opened at its first use): the calls
// systemd_scope.cc makes reach the real libsystemd, the variadic append and read included, on a
// private session bus of a real dbus-daemon. Skipped (with the reason) without dbus-daemon.
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <systemd/sd-bus.h>

#include "tests/support/test_support.h"

namespace sandbox::cgroup::libsystemd_on_demand_test {
namespace {

// dbus-daemon --session on a socket of its own, stopped at the end of the test.
class PrivateBus {
 public:
  explicit PrivateBus(const std::string& dir) {
    address_ = "unix:path=" + dir + "/bus";
    std::string command =
        "dbus-daemon --session --fork --print-pid --address=" + address_ + " 2>/dev/null";
    if (FILE* out = ::popen(command.c_str(), "r")) {
      if (std::fscanf(out, "%d", &pid_) != 1) pid_ = 0;
      ::pclose(out);
    }
  }
  ~PrivateBus() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
  }
  bool up() const { return pid_ > 0; }
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  int pid_ = 0;
};

struct Bus {
  sd_bus* bus = nullptr;
  ~Bus() { sd_bus_flush_close_unref(bus); }
};
struct Message {
  sd_bus_message* message = nullptr;
  ~Message() { sd_bus_message_unref(message); }
};

int Call(sd_bus* bus, const char* method, const char* name, sd_bus_error* error, Message& reply) {
  Message call;
  int r = sd_bus_message_new_method_call(bus, &call.message, "org.freedesktop.DBus",
                                         "/org/freedesktop/DBus", "org.freedesktop.DBus", method);
  if (r < 0) return r;
  if (name != nullptr && (r = sd_bus_message_append(call.message, "s", name)) < 0) return r;
  return sd_bus_call(bus, call.message, 0, error, &reply.message);
}

TEST_CASE("libsystemd on demand: sd-bus calls reach a real bus", "[unit]") {
  testing::TempDir dir;
  PrivateBus daemon(dir.path());
  if (!daemon.up()) {
    WARN("skipped: no dbus-daemon to start (package dbus-daemon)");
    return;
  }
  ::setenv("DBUS_SESSION_BUS_ADDRESS", daemon.address().c_str(), 1);
  Bus bus;
  int opened = sd_bus_open_user(&bus.bus);
  ::unsetenv("DBUS_SESSION_BUS_ADDRESS");
  REQUIRE(opened >= 0);

  // A variadic append and read: NameHasOwner("org.freedesktop.DBus") -> true.
  sd_bus_error error = SD_BUS_ERROR_NULL;
  Message has_owner;
  REQUIRE(Call(bus.bus, "NameHasOwner", "org.freedesktop.DBus", &error, has_owner) >= 0);
  int owned = 0;
  REQUIRE(sd_bus_message_read(has_owner.message, "b", &owned) >= 0);
  CHECK(owned == 1);

  // A container: ListNames -> "as", holding the bus's own name.
  Message names;
  REQUIRE(Call(bus.bus, "ListNames", nullptr, &error, names) >= 0);
  REQUIRE(sd_bus_message_enter_container(names.message, 'a', "s") > 0);
  std::vector<std::string> listed;
  const char* name = nullptr;
  while (sd_bus_message_read(names.message, "s", &name) > 0) listed.emplace_back(name);
  CHECK(std::find(listed.begin(), listed.end(), "org.freedesktop.DBus") != listed.end());

  // An error reply comes back named.
  Message no_owner;
  CHECK(Call(bus.bus, "GetNameOwner", "org.example.Nobody", &error, no_owner) < 0);
  CHECK(sd_bus_error_is_set(&error) != 0);
  CHECK(sd_bus_error_has_name(&error, "org.freedesktop.DBus.Error.NameHasNoOwner") != 0);
  sd_bus_error_free(&error);
  CHECK(sd_bus_error_is_set(&error) == 0);
}

}  // namespace
}  // namespace sandbox::cgroup::libsystemd_on_demand_test
