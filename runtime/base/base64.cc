#include "runtime/base/base64.h"

#include <array>
#include <cstdint>

namespace sandbox {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  table[static_cast<unsigned char>('-')] = 62;  // URL-safe alphabet
  table[static_cast<unsigned char>('_')] = 63;
  return table;
}
constexpr std::array<int8_t, 256> kDecode = MakeDecodeTable();

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = at(i) << 16;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += "==";
  } else if (rest == 2) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += '=';
  }
  return out;
}

std::optional<size_t> Base64DecodedSize(std::string_view text) {
  size_t symbols = 0;
  size_t padding = 0;
  for (char c : text) {
    if (IsSpace(c)) continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    if (kDecode[static_cast<unsigned char>(c)] < 0) return std::nullopt;
    ++symbols;
  }
  // A single leftover symbol cannot encode a byte; padding, when present, must complete a quad.
  if (symbols % 4 == 1) return std::nullopt;
  if (padding > 2 || (padding > 0 && (symbols + padding) % 4 != 0)) return std::nullopt;
  return symbols / 4 * 3 + (symbols % 4 == 0 ? 0 : symbols % 4 - 1);
}

bool Base64Reader::Next(size_t max, std::string& out) {
  size_t start = out.size();
  while (position_ < text_.size() && out.size() - start < max) {
    int8_t v = kDecode[static_cast<unsigned char>(text_[position_++])];
    if (v < 0) continue;  // whitespace and padding
    accumulator_ = accumulator_ << 6 | static_cast<uint32_t>(v);
    bits_ += 6;
    if (bits_ >= 8) {
      bits_ -= 8;
      out += static_cast<char>(accumulator_ >> bits_ & 0xFF);
    }
  }
  return out.size() > start;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  auto size = Base64DecodedSize(text);
  if (!size) return std::nullopt;
  std::string out;
  out.reserve(*size);
  Base64Reader(text).Next(*size, out);
  return out;
}

size_t Base64DecodedSizeBound(std::string_view text) { return (text.size() + 3) / 4 * 3; }

}  // namespace sandbox
