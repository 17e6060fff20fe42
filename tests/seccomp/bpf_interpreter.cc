#include "tests/seccomp/bpf_interpreter.h"

#include <linux/audit.h>

#include <cstring>

namespace sandbox::seccomp::testing {

std::optional<uint32_t> RunBpf(const std::vector<sock_filter>& program, const seccomp_data& data) {
  uint32_t a = 0;
  uint32_t x = 0;
  uint32_t mem[BPF_MEMWORDS] = {};
  size_t pc = 0;
  auto load = [&](uint32_t offset) -> std::optional<uint32_t> {
    // seccomp allows only aligned 32-bit loads inside struct seccomp_data.
    if (offset % 4 != 0 || offset + 4 > sizeof(seccomp_data)) return std::nullopt;
    uint32_t word = 0;
    std::memcpy(&word, reinterpret_cast<const char*>(&data) + offset, sizeof(word));
    return word;
  };
  while (pc < program.size()) {
    const sock_filter& insn = program[pc++];
    const uint16_t code = insn.code;
    switch (BPF_CLASS(code)) {
      case BPF_LD: {
        if (code == (BPF_LD | BPF_W | BPF_ABS)) {
          std::optional<uint32_t> word = load(insn.k);
          if (!word) return std::nullopt;
          a = *word;
        } else if (code == (BPF_LD | BPF_IMM)) {
          a = insn.k;
        } else if (code == (BPF_LD | BPF_MEM) && insn.k < BPF_MEMWORDS) {
          a = mem[insn.k];
        } else if (code == (BPF_LD | BPF_W | BPF_LEN)) {
          a = sizeof(seccomp_data);
        } else {
          return std::nullopt;
        }
        break;
      }
      case BPF_LDX: {
        if (code == (BPF_LDX | BPF_IMM)) {
          x = insn.k;
        } else if (code == (BPF_LDX | BPF_MEM) && insn.k < BPF_MEMWORDS) {
          x = mem[insn.k];
        } else if (code == (BPF_LDX | BPF_W | BPF_LEN)) {
          x = sizeof(seccomp_data);
        } else {
          return std::nullopt;
        }
        break;
      }
      case BPF_ST:
        if (insn.k >= BPF_MEMWORDS) return std::nullopt;
        mem[insn.k] = a;
        break;
      case BPF_STX:
        if (insn.k >= BPF_MEMWORDS) return std::nullopt;
        mem[insn.k] = x;
        break;
      case BPF_ALU: {
        const uint32_t operand = BPF_SRC(code) == BPF_X ? x : insn.k;
        switch (BPF_OP(code)) {
          case BPF_ADD:
            a += operand;
            break;
          case BPF_SUB:
            a -= operand;
            break;
          case BPF_MUL:
            a *= operand;
            break;
          case BPF_DIV:
            if (operand == 0) return std::nullopt;
            a /= operand;
            break;
          case BPF_MOD:
            if (operand == 0) return std::nullopt;
            a %= operand;
            break;
          case BPF_AND:
            a &= operand;
            break;
          case BPF_OR:
            a |= operand;
            break;
          case BPF_XOR:
            a ^= operand;
            break;
          case BPF_LSH:
            a = operand >= 32 ? 0 : a << operand;
            break;
          case BPF_RSH:
            a = operand >= 32 ? 0 : a >> operand;
            break;
          case BPF_NEG:
            a = 0 - a;
            break;
          default:
            return std::nullopt;
        }
        break;
      }
      case BPF_JMP: {
        if (BPF_OP(code) == BPF_JA) {
          pc += insn.k;
          break;
        }
        const uint32_t operand = BPF_SRC(code) == BPF_X ? x : insn.k;
        bool taken = false;
        switch (BPF_OP(code)) {
          case BPF_JEQ:
            taken = a == operand;
            break;
          case BPF_JGT:
            taken = a > operand;
            break;
          case BPF_JGE:
            taken = a >= operand;
            break;
          case BPF_JSET:
            taken = (a & operand) != 0;
            break;
          default:
            return std::nullopt;
        }
        pc += taken ? insn.jt : insn.jf;
        break;
      }
      case BPF_RET:
        if (BPF_RVAL(code) == BPF_K) return insn.k;
        if (BPF_RVAL(code) == BPF_A) return a;
        return std::nullopt;
      case BPF_MISC:
        if (BPF_MISCOP(code) == BPF_TAX) {
          x = a;
        } else {
          a = x;
        }
        break;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;  // fell off the end: the kernel's checker would have refused the program
}

seccomp_data X86_64Call(uint32_t nr, std::vector<uint64_t> args) {
  seccomp_data data{};
  data.nr = static_cast<int>(nr);
  data.arch = AUDIT_ARCH_X86_64;
  for (size_t i = 0; i < args.size() && i < 6; ++i) data.args[i] = args[i];
  return data;
}

}  // namespace sandbox::seccomp::testing
