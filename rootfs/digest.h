// Streaming SHA-256 (OpenSSL EVP) and the "sha256:<hex>" digest strings of the OCI image spec.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/evp.h>

#include "runtime/base/result.h"

namespace sandbox::rootfs {

class Sha256 {
 public:
  Sha256();
  Sha256(Sha256&&) noexcept = default;
  Sha256& operator=(Sha256&&) noexcept = default;

  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The lowercase hex digest of everything fed so far. Ends the stream: call once.
  std::string FinishHex();

 private:
  struct CtxDeleter {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx_;
};

// The lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

// True for exactly 64 lowercase hex digits (the only form the OCI spec allows for sha256).
bool IsSha256Hex(std::string_view hex);

// "sha256:<hex>" -> "<hex>". Other algorithms (sha512, ...) and malformed digests fail with
// kInvalidArgument, naming the digest.
Result<std::string> ParseSha256Digest(std::string_view digest);

inline std::string Sha256Digest(std::string_view hex) { return "sha256:" + std::string(hex); }

}  // namespace sandbox::rootfs
