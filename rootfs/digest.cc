#include "rootfs/digest.h"

#include <cstdlib>

namespace sandbox::rootfs {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  // Failure here means OpenSSL could not allocate a few bytes; nothing sensible remains to do.
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) std::abort();
}

void Sha256::Update(const void* data, size_t size) {
  if (size > 0) EVP_DigestUpdate(ctx_.get(), data, size);
}

std::string Sha256::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx_.get(), digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.FinishHex();
}

bool IsSha256Hex(std::string_view hex) {
  if (hex.size() != 64) return false;
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::string> ParseSha256Digest(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.substr(0, kPrefix.size()) != kPrefix) {
    return Fail(ErrorCode::kInvalidArgument, "unsupported digest '{}' (only sha256 is supported)",
                digest.substr(0, 80));
  }
  std::string_view hex = digest.substr(kPrefix.size());
  if (!IsSha256Hex(hex)) {
    return Fail(ErrorCode::kInvalidArgument, "malformed digest '{}'", digest.substr(0, 80));
  }
  return std::string(hex);
}

}  // namespace sandbox::rootfs
