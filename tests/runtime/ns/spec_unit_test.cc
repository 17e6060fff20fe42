// Unit tests of the namespace backend's plain data: the mount plan, id maps and host id claims,
// process identities, session records, child failure messages. No privileges, no children.
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "runtime/base/files.h"
#include "runtime/ns/child_setup.h"
#include "runtime/ns/devices.h"
#include "runtime/ns/kernel_counters.h"
#include "runtime/ns/mounts.h"
#include "runtime/ns/proc_masks.h"
#include "runtime/ns/process_identity.h"
#include "runtime/ns/session_record.h"
#include "runtime/ns/userns.h"
#include "tests/support/test_support.h"

using namespace sandbox;
using namespace sandbox::ns;

namespace {

MountInputs Inputs() {
  MountInputs in;
  in.rootfs = "/images/abc/rootfs";
  in.agent_dir = "/opt/agent";
  in.tmp_bytes = 256ull << 20;
  in.data_bytes = 1ull << 30;
  return in;
}

const MountOp* Find(const MountPlan& plan, const std::string& what) {
  for (const auto& op : plan.ops) {
    if (op.what == what) return &op;
  }
  return nullptr;
}

size_t IndexOf(const MountPlan& plan, const std::string& what) {
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    if (plan.ops[i].what == what) return i;
  }
  return plan.ops.size();
}

}  // namespace

TEST_CASE("mount plan: order of the baseline", "[unit][ns]") {
  MountPlan plan = BuildMountPlan(Inputs());
  REQUIRE(plan.ops.size() > 20);
  CHECK(plan.ops[0].kind == MountOpKind::kMakePrivate);
  CHECK(plan.ops[0].target == "/");
  CHECK(plan.ops[1].kind == MountOpKind::kBind);
  CHECK(plan.ops[1].source == "/images/abc/rootfs");
  CHECK(plan.ops[1].target == "/images/abc/rootfs");
  CHECK(plan.ops[1].recursive);
  CHECK(plan.ops[2].kind == MountOpKind::kChdir);
  // Once chdir'd into the rootfs, every target is relative (looked up from the rootfs).
  for (size_t i = 3; i < plan.ops.size(); ++i) {
    INFO(plan.ops[i].what);
    if (plan.ops[i].kind != MountOpKind::kSetFsIds) {
      CHECK(!plan.ops[i].target.empty());
      CHECK(plan.ops[i].target[0] != '/');
    }
  }
  // Host paths are used only before the fs ids change; /dev is populated after.
  size_t fsids = IndexOf(plan, "switch fs ids to the sandbox user");
  CHECK(IndexOf(plan, "bind /.sandbox") < fsids);
  CHECK(IndexOf(plan, "mount /proc") < fsids);
  CHECK(IndexOf(plan, "mount /tmp") < fsids);
  CHECK(IndexOf(plan, "mount /dev") < fsids);
  CHECK(fsids < IndexOf(plan, "create /dev/null"));
  CHECK(IndexOf(plan, "make /dev read-only") == plan.ops.size() - 1);
  // Masks come after /proc is mounted.
  CHECK(IndexOf(plan, "mount /proc") < IndexOf(plan, "mask /proc/kcore"));
}

TEST_CASE("mount plan: flags and options", "[unit][ns]") {
  MountPlan plan = BuildMountPlan(Inputs());
  const MountOp* ro = Find(plan, "make / read-only");
  REQUIRE(ro);
  CHECK(ro->flags == (MS_RDONLY | MS_NOSUID | MS_NODEV));
  CHECK(ro->recursive);

  const MountOp* proc = Find(plan, "mount /proc");
  REQUIRE(proc);
  CHECK(proc->fstype == "proc");
  CHECK(proc->flags == (MS_NOSUID | MS_NODEV | MS_NOEXEC));

  const MountOp* tmp = Find(plan, "mount /tmp");
  REQUIRE(tmp);
  CHECK(tmp->fstype == "tmpfs");
  CHECK(tmp->data == "size=268435456,mode=1777,uid=1000,gid=1000");
  CHECK((tmp->flags & (MS_NOSUID | MS_NODEV)) == (MS_NOSUID | MS_NODEV));

  const MountOp* data = Find(plan, "mount /mnt/data");
  REQUIRE(data);
  CHECK(data->data == "size=1073741824,mode=0755,uid=1000,gid=1000");

  const MountOp* pts = Find(plan, "mount /dev/pts");
  REQUIRE(pts);
  CHECK(pts->data == "newinstance,ptmxmode=0666,mode=0620");

  const MountOp* shm = Find(plan, "mount /dev/shm");
  REQUIRE(shm);
  CHECK(shm->flags == (MS_NOSUID | MS_NODEV | MS_NOEXEC));
  CHECK(shm->data.find("size=67108864") == 0);

  const MountOp* agent = Find(plan, "bind /.sandbox");
  REQUIRE(agent);
  CHECK(agent->source == "/opt/agent");
  CHECK(Find(plan, "make /.sandbox read-only") != nullptr);
  CHECK(Find(plan, "bind /mnt/wheelhouse") == nullptr);
  CHECK(Find(plan, "mount /sys") == nullptr);  // no /sys at all
}

TEST_CASE("mount plan: wheelhouse masks and devices", "[unit][ns]") {
  MountInputs in = Inputs();
  in.wheelhouse = "/srv/wheels";
  MountPlan plan = BuildMountPlan(in);
  const MountOp* wheels = Find(plan, "bind /mnt/wheelhouse");
  REQUIRE(wheels);
  CHECK(wheels->source == "/srv/wheels");
  CHECK(wheels->target == "mnt/wheelhouse");
  auto points = RequiredMountPoints(in);
  CHECK(std::find(points.begin(), points.end(), "mnt/wheelhouse") != points.end());

  for (std::string_view path : MaskedProcPaths()) {
    const MountOp* mask = Find(plan, "mask " + std::string(path));
    REQUIRE(mask);
    CHECK(mask->kind == MountOpKind::kMaskPath);
    CHECK(mask->source == "/dev/null");
  }
  for (const char* path : {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
                           "/proc/interrupts", "/proc/acpi", "/proc/scsi"}) {
    CHECK(Find(plan, std::string("mask ") + path) != nullptr);
  }
  for (const char* path :
       {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}) {
    const MountOp* op = Find(plan, std::string("make ") + path + " read-only");
    REQUIRE(op);
    CHECK((op->flags & MS_RDONLY) != 0);
  }
  for (std::string_view dev : SandboxDevices()) {
    const MountOp* bind = Find(plan, "bind /dev/" + std::string(dev));
    REQUIRE(bind);
    CHECK(bind->source == "/dev/" + std::string(dev));
  }
  const MountOp* ptmx = Find(plan, "symlink /dev/ptmx");
  REQUIRE(ptmx);
  CHECK(ptmx->source == "pts/ptmx");
  CHECK(Find(plan, "symlink /dev/fd")->source == "/proc/self/fd");
}

TEST_CASE("child failures read as step: errno", "[unit][ns]") {
  ChildPlan plan;
  plan.mounts = BuildMountPlan(Inputs());
  plan.exec_path = "/.sandbox/sandbox-init";
  size_t proc = IndexOf(plan.mounts, "mount /proc");
  ChildFailure mount{static_cast<int32_t>(ChildStep::kMount), static_cast<int32_t>(proc), EPERM};
  CHECK(DescribeChildFailure(plan, mount) == "mount /proc: EPERM");
  ChildFailure exec{static_cast<int32_t>(ChildStep::kExec), 0, ENOENT};
  CHECK(DescribeChildFailure(plan, exec) == "execve /.sandbox/sandbox-init: ENOENT");
  ChildFailure caps{static_cast<int32_t>(ChildStep::kClearCapabilities), 0, EPERM};
  CHECK(DescribeChildFailure(plan, caps) == "clear capabilities: EPERM");
  plan.rlimits = {{RLIMIT_NOFILE, 1024, 1024}};
  ChildFailure rlimit{static_cast<int32_t>(ChildStep::kRlimit), 0, EPERM};
  CHECK(DescribeChildFailure(plan, rlimit) == "setrlimit RLIMIT_NOFILE: EPERM");
  ChildFailure junk{9999, -4, 0};
  CHECK(!DescribeChildFailure(plan, junk).empty());
  plan.argv = {"/bin/sh", "-c", "true"};
  plan.env = {"A=1"};
  plan.Finalize();
  CHECK(std::string(plan.argv_ptrs()[2]) == "true");
  CHECK(plan.argv_ptrs()[3] == nullptr);
  CHECK(std::string(plan.env_ptrs()[0]) == "A=1");
  CHECK(plan.env_ptrs()[1] == nullptr);
}

TEST_CASE("id maps", "[unit][ns]") {
  CHECK(IdMapLine(1000, 268435456) == "1000 268435456 1\n");
  CHECK(IdMapLine(1000, 1234) == "1000 1234 1\n");
}

TEST_CASE("host ids: unique among live claims and across allocators and reusable after release",
          "[unit][ns]") {
  testing::TempDir tmp;
  HostIdAllocator a(tmp.Join("ids"));
  HostIdAllocator b(tmp.Join("ids"));  // another server on the same host
  std::set<uint32_t> ids;
  for (int i = 0; i < 50; ++i) {
    auto id = (i % 2 ? a : b).Claim("sess_" + std::to_string(i));
    REQUIRE(id);
    CHECK(*id >= HostIdAllocator::kHostIdBase);
    CHECK(*id < HostIdAllocator::kHostIdBase + HostIdAllocator::kHostIdCount);
    CHECK(ids.insert(*id).second);
  }
  // Claims of a live server are not stale.
  CHECK(a.StaleClaims().empty());
  for (uint32_t id : ids) a.Release(id);
  auto again = a.Claim("sess_again");
  REQUIRE(again);
  a.Release(*again);

  // A claim written by a server that is gone is stale.
  REQUIRE(WriteFile(tmp.Join("ids") + "/" + std::to_string(HostIdAllocator::kHostIdBase + 7),
                    "999999 1 sess_dead\n"));
  auto stale = a.StaleClaims();
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].host_id == HostIdAllocator::kHostIdBase + 7);
  CHECK(stale[0].session_id == "sess_dead");
}

TEST_CASE("process identity: /proc/<pid>/stat parsing", "[unit][ns]") {
  // comm may hold spaces and parens; starttime is field 22.
  std::string line =
      "4242 (we ird) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 "
      "200 18446744073709551615";
  auto start = ParseStatStartTime(line);
  REQUIRE(start);
  CHECK(*start == 987654);
  CHECK(!ParseStatStartTime("garbage"));
  CHECK(!ParseStatStartTime("1 (x) S 1 2"));

  auto self = IdentifyProcess(::getpid());
  REQUIRE(self);
  CHECK(self->pid == ::getpid());
  CHECK(self->IsAlive());
  ProcessIdentity other_start{self->pid, self->start_time + 1};
  CHECK(!other_start.IsAlive());
  auto parsed = ProcessIdentity::Parse(self->ToString());
  REQUIRE(parsed);
  CHECK(*parsed == *self);
  CHECK(!ProcessIdentity::Parse("x 1"));
  CHECK(!IdentifyProcess(0x3fffffff));
  CHECK(IdentifyProcess(0x3fffffff).error().code == ErrorCode::kNotFound);
}

TEST_CASE("session records: JSON round trip with junk skipped", "[unit][ns]") {
  testing::TempDir tmp;
  SessionRecords records(tmp.Join("sessions"));
  SessionRecord record;
  record.session_id = "sess_0123456789ab";
  record.init = {1234, 5678};
  record.server = {42, 43};
  record.host_uid = 0x10000005;
  record.host_uid_claimed = true;
  record.cgroups = {"/sys/fs/cgroup/memory/mcp-sandbox/sess_0123456789ab"};
  record.rootfs = "/var/lib/mcp-sandbox/images/abc/rootfs";
  REQUIRE(records.Write(record));
  REQUIRE(WriteFile(tmp.Join("sessions") + "/junk.json", "{not json"));
  REQUIRE(WriteFile(tmp.Join("sessions") + "/other.txt", "ignored"));
  auto all = records.ReadAll();
  REQUIRE(all.size() == 1);
  CHECK(all[0].session_id == record.session_id);
  CHECK(all[0].init == record.init);
  CHECK(all[0].server == record.server);
  CHECK(all[0].host_uid == record.host_uid);
  CHECK(all[0].host_uid_claimed);
  CHECK(all[0].cgroups == record.cgroups);
  CHECK(all[0].rootfs == record.rootfs);
  records.Remove(record.session_id);
  CHECK(records.ReadAll().empty());
}

TEST_CASE("a session record nested 100 000 deep is refused, a normal one read", "[unit][ns]") {
  SessionRecord record;
  record.session_id = "sess_0123456789ab";
  record.init.pid = 42;
  record.host_uid = 1000;
  std::string text = RecordToJson(record);
  REQUIRE(RecordFromJson(text));
  // The same record with one more field nested deep: refused before anything recursive reads it.
  std::string deep = text.substr(0, text.rfind('}')) + ",\"x\":" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  CHECK_FALSE(RecordFromJson(deep));
}

TEST_CASE("kernel counters: a root server's sandbox has its own uid's whole budget", "[unit][ns]") {
  KernelCounters host;
  host.inotify_instances = 128;
  host.inotify_watches = 192536;
  host.fanotify_groups = 128;
  host.fanotify_marks = 205039;
  host.sigpending = 96365;
  host.msgqueue_bytes = 819200;
  KernelCounters caps = SandboxCaps(host, /*own_host_uid=*/true, 10);
  CHECK(caps.inotify_instances == 128);
  CHECK(caps.inotify_watches == 192536);
  CHECK(caps.sigpending == 96365);
  CHECK(caps.msgqueue_bytes == 819200);
}

TEST_CASE("kernel counters: an unprivileged server's sandboxes leave the user half", "[unit][ns]") {
  KernelCounters host;
  host.inotify_instances = 128;
  host.inotify_watches = 192536;
  host.fanotify_groups = 128;
  host.fanotify_marks = 205039;
  host.sigpending = 96365;
  host.msgqueue_bytes = 819200;
  for (int sessions : {1, 2, 4}) {
    INFO(sessions);
    KernelCounters caps = SandboxCaps(host, /*own_host_uid=*/false, sessions);
    // All sandboxes together take at most half of each budget (the floors are below it here).
    CHECK(caps.inotify_instances * static_cast<uint64_t>(sessions) <= host.inotify_instances / 2);
    CHECK(caps.inotify_watches * static_cast<uint64_t>(sessions) <= host.inotify_watches / 2);
    CHECK(caps.sigpending * static_cast<uint64_t>(sessions) <= host.sigpending / 2);
    CHECK(caps.msgqueue_bytes * static_cast<uint64_t>(sessions) <= host.msgqueue_bytes / 2);
    CHECK(caps.inotify_instances >= kMinSandboxInotifyInstances);
  }
  KernelCounters ten = SandboxCaps(host, false, 10);
  CHECK(ten.inotify_instances == 8);  // a share of 6 is below the floor of 8: 80 of 128 in all
  CHECK(ten.inotify_watches == 9626);
  CHECK(ten.sigpending == 4818);
  CHECK(ten.msgqueue_bytes == 40960);
  // Many sessions: the floor, never more than the host has.
  KernelCounters many = SandboxCaps(host, false, 10000);
  CHECK(many.inotify_instances == kMinSandboxInotifyInstances);
  CHECK(many.sigpending == kMinSandboxSigpending);
  KernelCounters tiny;
  tiny.inotify_instances = 4;
  CHECK(SandboxCaps(tiny, false, 10).inotify_instances == 4);
  CHECK(SandboxCaps(tiny, false, 10).inotify_watches == 0);  // absent stays absent
}

TEST_CASE(
    "kernel counters: sysctls and rlimits for the child, written before /proc/sys is "
    "read-only",
    "[unit][ns]") {
  KernelCounters caps;
  caps.inotify_instances = 16;
  caps.inotify_watches = 4096;
  caps.sigpending = 100;
  caps.msgqueue_bytes = 65536;
  auto sysctls = SandboxSysctls(caps);
  auto value_of = [&](const std::string& path) -> std::string {
    for (const auto& s : sysctls) {
      if (s.path == path) return s.value;
    }
    return "absent";
  };
  CHECK(value_of("proc/sys/user/max_inotify_instances") == "16");
  CHECK(value_of("proc/sys/user/max_inotify_watches") == "4096");
  CHECK(value_of("proc/sys/user/max_user_namespaces") == "0");
  CHECK(value_of("proc/sys/user/max_fanotify_groups") == "absent");  // 0: no such counter

  auto rlimits = SandboxCounterRlimits(caps);
  REQUIRE(rlimits.size() == 2);
  CHECK(rlimits[0].resource == RLIMIT_SIGPENDING);
  CHECK(rlimits[0].soft == 100);
  CHECK(rlimits[1].resource == RLIMIT_MSGQUEUE);
  CHECK(rlimits[1].hard == 65536);

  MountInputs in = Inputs();
  in.sysctls = sysctls;
  MountPlan plan = BuildMountPlan(in);
  size_t proc = IndexOf(plan, "mount /proc");
  size_t write = IndexOf(plan, "set /proc/sys/user/max_inotify_instances");
  size_t read_only = IndexOf(plan, "make /proc/sys read-only");
  REQUIRE(write < plan.ops.size());
  CHECK(plan.ops[write].kind == MountOpKind::kWriteFile);
  CHECK(plan.ops[write].data == "16");
  CHECK(proc < write);
  CHECK(write < read_only);

  EnforcedLimits described;
  DescribeCaps(caps, false, described);
  REQUIRE(described.limits.size() == 4);
  CHECK(described.limits[0].name == "inotify_instances");
  CHECK(described.limits[0].value == "16");
  CHECK(described.limits[2].name == "signals_pending");
  CHECK(described.limits[3].value == "64KiB");
}

TEST_CASE("tmpfs sizes are derived from the memory limit", "[unit][ns]") {
  // Issue 12 item 7: tmpfs pages are the sandbox's memory; both mounts together leave a
  // quarter of the memory limit to the processes.
  CHECK(Limits{}.memory_bytes == 512ull << 20);
  CHECK(Limits{}.disk_bytes == 256ull << 20);
  CHECK(Limits{}.tmp_bytes == 128ull << 20);
  for (uint64_t memory : {32ull << 20, 256ull << 20, 512ull << 20, 3ull << 30, 64ull << 30}) {
    INFO(memory);
    CHECK(DefaultDataBytes(memory) + TmpBytesFor(memory) <= memory / 4 * 3);
    CHECK(DefaultDataBytes(memory) <= MaxDataBytes(memory));
    CHECK(DefaultDataBytes(memory) <= 1ull << 30);
  }
}
