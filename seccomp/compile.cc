#include "seccomp/compile.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/base/fd.h"
#include "seccomp/program_cache.h"

namespace sandbox::seccomp {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the prologue reads the low word of an argument at its first byte");

// The x32 ABI marks its syscalls with this bit on AUDIT_ARCH_X86_64 (__X32_SYSCALL_BIT).
constexpr uint32_t kX32SyscallBit = 0x40000000;

struct ScmpCtxRelease {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using ScmpCtx = std::unique_ptr<void, ScmpCtxRelease>;

tl::unexpected<Error> FailScmp(std::string_view call, std::string_view arg, int rc) {
  // libseccomp returns -errno.
  return tl::unexpected<Error>(SysError(call, arg, -rc));
}

scmp_compare ToScmp(Cmp op) {
  switch (op) {
    case Cmp::kEq:
      return SCMP_CMP_EQ;
    case Cmp::kNe:
      return SCMP_CMP_NE;
    case Cmp::kLt:
      return SCMP_CMP_LT;
    case Cmp::kLe:
      return SCMP_CMP_LE;
    case Cmp::kGt:
      return SCMP_CMP_GT;
    case Cmp::kGe:
      return SCMP_CMP_GE;
    case Cmp::kMaskedEq:
      return SCMP_CMP_MASKED_EQ;
  }
  return _SCMP_CMP_MAX;
}

// A conditional refusal that goes to the prologue (see compile.h).
struct EarlyRefusal {
  uint32_t nr;
  int errno_value;
  std::vector<ArgCondition> args;
};

// A tiny classic-BPF assembler with forward labels, enough for the prologue.
class Assembler {
 public:
  using Label = size_t;

  Label NewLabel() {
    labels_.push_back(kUnbound);
    return labels_.size() - 1;
  }
  void Bind(Label label) { labels_[label] = code_.size(); }

  void LoadWord(uint32_t offset) { Emit(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void And(uint32_t mask) { Emit(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask)); }
  void Return(uint32_t value) { Emit(BPF_STMT(BPF_RET | BPF_K, value)); }
  void Goto(Label target) {
    Emit(BPF_STMT(BPF_JMP | BPF_JA, 0));
    fixups_.push_back({code_.size() - 1, Field::kK, target});
  }
  // Compares A with k (op: BPF_JEQ, BPF_JGT, BPF_JGE); on_true/on_false default to the next
  // instruction.
  void Jump(uint16_t op, uint32_t k, std::optional<Label> on_true, std::optional<Label> on_false) {
    Emit(BPF_JUMP(static_cast<uint16_t>(BPF_JMP | op | BPF_K), k, 0, 0));
    if (on_true) fixups_.push_back({code_.size() - 1, Field::kTrue, *on_true});
    if (on_false) fixups_.push_back({code_.size() - 1, Field::kFalse, *on_false});
  }

  Result<std::vector<sock_filter>> Finish() && {
    for (const Fixup& fixup : fixups_) {
      const size_t target = labels_[fixup.label];
      if (target == kUnbound || target <= fixup.at) {
        return Fail(ErrorCode::kInternal, "seccomp prologue: unbound or backward label");
      }
      const size_t offset = target - fixup.at - 1;
      sock_filter& insn = code_[fixup.at];
      if (fixup.field == Field::kK) {
        insn.k = static_cast<uint32_t>(offset);
      } else if (offset > 255) {
        return Fail(ErrorCode::kInternal, "seccomp prologue: conditional jump of {} > 255", offset);
      } else if (fixup.field == Field::kTrue) {
        insn.jt = static_cast<uint8_t>(offset);
      } else {
        insn.jf = static_cast<uint8_t>(offset);
      }
    }
    return std::move(code_);
  }

 private:
  static constexpr size_t kUnbound = static_cast<size_t>(-1);
  enum class Field { kTrue, kFalse, kK };
  struct Fixup {
    size_t at;
    Field field;
    Label label;
  };
  void Emit(sock_filter insn) { code_.push_back(insn); }

  std::vector<sock_filter> code_;
  std::vector<size_t> labels_;
  std::vector<Fixup> fixups_;
};

constexpr uint32_t ArgLowWordOffset(unsigned index) {
  return static_cast<uint32_t>(offsetof(struct seccomp_data, args) + 8 * index);
}

Result<std::vector<sock_filter>> BuildPrologue(const PolicySpec& spec,
                                               const std::vector<EarlyRefusal>& early) {
  Assembler a;
  const Assembler::Label filter = a.NewLabel();
  const Assembler::Label unknown = a.NewLabel();
  std::map<int, Assembler::Label> refuse;  // errno -> its return instruction
  for (const EarlyRefusal& rule : early) {
    if (!refuse.contains(rule.errno_value)) refuse[rule.errno_value] = a.NewLabel();
  }

  // Other architectures and x32 numbers are for libseccomp's program to kill (BADARCH); it also
  // knows what to do with nr == -1 (a tracer cancelling the call).
  a.LoadWord(offsetof(struct seccomp_data, arch));
  a.Jump(BPF_JEQ, AUDIT_ARCH_X86_64, std::nullopt, filter);
  a.LoadWord(offsetof(struct seccomp_data, nr));
  a.Jump(BPF_JGE, kX32SyscallBit, filter, std::nullopt);

  a.Jump(BPF_JGT, spec.reviewed_through_nr, unknown, std::nullopt);
  for (const SyscallRange& range : spec.unassigned) {
    const Assembler::Label after = a.NewLabel();
    a.Jump(BPF_JGE, range.first, std::nullopt, after);
    a.Jump(BPF_JGT, range.last, after, unknown);
    a.Bind(after);
  }

  // Refusals grouped by syscall. A still holds nr when a group does not match; a group that
  // matches ends in its refusal or in the filter proper, never in the next group.
  std::map<uint32_t, std::vector<const EarlyRefusal*>> by_nr;
  for (const EarlyRefusal& rule : early) by_nr[rule.nr].push_back(&rule);
  for (const auto& [nr, rules] : by_nr) {
    const Assembler::Label next_group = a.NewLabel();
    a.Jump(BPF_JEQ, nr, std::nullopt, next_group);
    for (const EarlyRefusal* rule : rules) {
      const Assembler::Label next_rule = a.NewLabel();
      for (const ArgCondition& arg : rule->args) {
        a.LoadWord(ArgLowWordOffset(arg.index));
        if (arg.value != 0xffffffffULL) a.And(static_cast<uint32_t>(arg.value));
        a.Jump(BPF_JEQ, static_cast<uint32_t>(arg.value_two), std::nullopt, next_rule);
      }
      a.Goto(refuse[rule->errno_value]);
      a.Bind(next_rule);
    }
    a.Goto(filter);
    a.Bind(next_group);
  }
  a.Goto(filter);

  a.Bind(unknown);
  a.Return(SECCOMP_RET_ERRNO | static_cast<uint32_t>(spec.unknown_errno));
  for (const auto& [err, label] : refuse) {
    a.Bind(label);
    a.Return(SECCOMP_RET_ERRNO | static_cast<uint32_t>(err));
  }
  a.Bind(filter);
  return std::move(a).Finish();
}

// seccomp_export_bpf writes to an fd; a memfd keeps it in memory.
Result<std::vector<sock_filter>> ExportBpf(scmp_filter_ctx ctx) {
  Fd fd(memfd_create("sandbox-seccomp-bpf", MFD_CLOEXEC));
  if (!fd) return FailSys("memfd_create", "sandbox-seccomp-bpf");
  if (int rc = seccomp_export_bpf(ctx, fd.get()); rc < 0) {
    return FailScmp("seccomp_export_bpf", "", rc);
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return FailSys("fstat", "memfd");
  const auto bytes = static_cast<size_t>(st.st_size);
  if (bytes == 0 || bytes % sizeof(sock_filter) != 0) {
    return Fail(ErrorCode::kInternal, "seccomp_export_bpf wrote {} bytes", bytes);
  }
  std::vector<sock_filter> program(bytes / sizeof(sock_filter));
  auto* out = reinterpret_cast<char*>(program.data());
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = pread(fd.get(), out + done, bytes - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return FailSys("pread", "memfd");
    done += static_cast<size_t>(n);
  }
  return program;
}

bool InUnassigned(const PolicySpec& spec, uint32_t nr) {
  for (const SyscallRange& range : spec.unassigned) {
    if (nr >= range.first && nr <= range.last) return true;
  }
  return false;
}

// A conditional refusal the prologue can test: 32-bit masked compares only.
Status CheckPrologueExpressible(const std::string& name, const std::vector<ArgCondition>& args) {
  for (const ArgCondition& arg : args) {
    if (arg.op != Cmp::kMaskedEq || arg.value == 0 || arg.value > 0xffffffffULL ||
        (arg.value_two & ~arg.value) != 0) {
      return Fail(ErrorCode::kInvalidArgument,
                  "{}: a conditional refusal with the default errno must test the low 32 bits "
                  "with SCMP_CMP_MASKED_EQ (mask <= 0xffffffff, value inside the mask)",
                  name);
    }
  }
  return {};
}

}  // namespace

std::optional<uint32_t> X86_64SyscallNumber(const std::string& name) {
  const int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name.c_str());
  // Negative: unknown (__NR_SCMP_ERROR) or a pseudo-number for a syscall x86_64 does not have.
  if (nr < 0) return std::nullopt;
  return static_cast<uint32_t>(nr);
}

std::string X86_64SyscallName(uint32_t nr) {
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, static_cast<int>(nr));
  if (name == nullptr) return {};
  std::string result(name);
  free(name);  // NOLINT(cppcoreguidelines-no-malloc): libseccomp allocates with malloc
  return result;
}

Result<BpfProgram> CompilePolicy(const PolicySpec& spec) {
  const auto started = std::chrono::steady_clock::now();
  if (Status valid = ValidatePolicySpec(spec); !valid) {
    return Fail(std::move(valid).error().Context("seccomp policy"));
  }
  if (seccomp_arch_native() != SCMP_ARCH_X86_64) {
    return Fail(ErrorCode::kSandboxUnavailable,
                "the seccomp policy is written for x86_64; this machine's native ABI is another");
  }

  ScmpCtx ctx(seccomp_init(SCMP_ACT_ERRNO(static_cast<uint32_t>(spec.default_errno))));
  if (!ctx) return Fail(ErrorCode::kInternal, "seccomp_init failed");
  // i386 (int 0x80) and x32 are not in the filter: kill the whole process, not only the thread,
  // so nothing half-dead is left behind.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
      rc < 0) {
    return FailScmp("seccomp_attr_set", "ACT_BADARCH", rc);
  }
  // Never set by us through libseccomp: the caller sets no_new_privs itself (install.h).
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc < 0) {
    return FailScmp("seccomp_attr_set", "CTL_NNP", rc);
  }
  // A binary tree over ~300 syscalls instead of a linear scan (libseccomp >= 2.5).
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2); rc < 0) {
    spdlog::debug("seccomp: binary-tree optimisation unavailable ({})", ErrnoName(-rc));
  }

  std::vector<EarlyRefusal> early;
  for (const SyscallRule& rule : spec.rules) {
    for (const std::string& name : rule.names) {
      const std::optional<uint32_t> nr = X86_64SyscallNumber(name);
      if (!nr) {
        return Fail(ErrorCode::kInvalidArgument,
                    "seccomp policy: libseccomp {}.{}.{} knows no x86_64 syscall '{}'",
                    seccomp_version()->major, seccomp_version()->minor, seccomp_version()->micro,
                    name);
      }
      if (*nr > spec.reviewed_through_nr || InUnassigned(spec, *nr)) {
        return Fail(ErrorCode::kInvalidArgument,
                    "seccomp policy: '{}' ({}) is in the range answered with ENOSYS; move "
                    "reviewed_through_nr after reviewing the table",
                    name, *nr);
      }
      const bool refuses_like_default =
          rule.action == Action::kErrno && rule.errno_value == spec.default_errno;
      if (refuses_like_default && rule.args.empty()) continue;  // the default action says it
      if (refuses_like_default) {
        SBX_TRY(CheckPrologueExpressible(name, rule.args));
        early.push_back({*nr, rule.errno_value, rule.args});
        continue;
      }
      const uint32_t action = rule.action == Action::kAllow
                                  ? SCMP_ACT_ALLOW
                                  : SCMP_ACT_ERRNO(static_cast<uint32_t>(rule.errno_value));
      std::vector<scmp_arg_cmp> conditions;
      for (const ArgCondition& arg : rule.args) {
        conditions.push_back({arg.index, ToScmp(arg.op), arg.value, arg.value_two});
      }
      // _exact: fail rather than let libseccomp rewrite the rule.
      if (int rc = seccomp_rule_add_exact_array(ctx.get(), action, static_cast<int>(*nr),
                                                static_cast<unsigned>(conditions.size()),
                                                conditions.data());
          rc < 0) {
        return FailScmp("seccomp_rule_add", name, rc);
      }
    }
  }

  SBX_ASSIGN_OR_RETURN(std::vector<sock_filter> body, ExportBpf(ctx.get()));
  SBX_ASSIGN_OR_RETURN(std::vector<sock_filter> program, BuildPrologue(spec, early));
  const size_t prologue_size = program.size();
  program.insert(program.end(), body.begin(), body.end());
  if (program.size() > BPF_MAXINSNS) {
    return Fail(ErrorCode::kInvalidArgument, "seccomp program of {} instructions (kernel max {})",
                program.size(), BPF_MAXINSNS);
  }
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - started;
  spdlog::debug("seccomp: compiled {} BPF instructions ({} prologue) in {:.2f} ms", program.size(),
                prologue_size, took.count());
  return BpfProgram(std::move(program));
}

namespace {

// The file set by KeepCompiledPolicyIn, read once by the first CompiledPolicy().
std::string& KeptPolicyPath() {
  static std::string path;
  return path;
}

}  // namespace

void KeepCompiledPolicyIn(std::string path) { KeptPolicyPath() = std::move(path); }

Result<const BpfProgram*> CompiledPolicy() {
  // A function-local static is initialised once, thread-safely (C++11 [stmt.dcl]/4); the error,
  // if any, is cached too: the policy and libseccomp do not change while the process runs.
  static const Result<BpfProgram> compiled = LoadOrCompileSandboxPolicy(KeptPolicyPath());
  if (!compiled) return Fail(compiled.error());
  return &*compiled;
}

}  // namespace sandbox::seccomp
