#include "runtime/crypto/libcrypto_on_demand.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "runtime/base/library_on_demand.h"

namespace sandbox::crypto {
namespace {

// The entry points of libcrypto.so.3 this program calls.
struct Libcrypto {
  std::string error;  // empty once every entry point is bound
  decltype(&::CRYPTO_memcmp) memcmp = nullptr;
  decltype(&::EVP_Digest) digest = nullptr;
  decltype(&::EVP_DigestFinal_ex) digest_final_ex = nullptr;
  decltype(&::EVP_DigestInit_ex) digest_init_ex = nullptr;
  decltype(&::EVP_DigestUpdate) digest_update = nullptr;
  decltype(&::EVP_DigestVerify) digest_verify = nullptr;
  decltype(&::EVP_DigestVerifyInit) digest_verify_init = nullptr;
  decltype(&::EVP_MD_CTX_free) md_ctx_free = nullptr;
  decltype(&::EVP_MD_CTX_new) md_ctx_new = nullptr;
  decltype(&::EVP_PKEY_free) pkey_free = nullptr;
  decltype(&::EVP_PKEY_new_raw_public_key) pkey_new_raw_public_key = nullptr;
  decltype(&::EVP_sha256) sha256 = nullptr;
  decltype(&::HMAC) hmac = nullptr;
};

Libcrypto Open() {
  Libcrypto lib;
  LibraryOnDemand library("libcrypto.so.3");
  library.Bind("CRYPTO_memcmp", lib.memcmp);
  library.Bind("EVP_Digest", lib.digest);
  library.Bind("EVP_DigestFinal_ex", lib.digest_final_ex);
  library.Bind("EVP_DigestInit_ex", lib.digest_init_ex);
  library.Bind("EVP_DigestUpdate", lib.digest_update);
  library.Bind("EVP_DigestVerify", lib.digest_verify);
  library.Bind("EVP_DigestVerifyInit", lib.digest_verify_init);
  library.Bind("EVP_MD_CTX_free", lib.md_ctx_free);
  library.Bind("EVP_MD_CTX_new", lib.md_ctx_new);
  library.Bind("EVP_PKEY_free", lib.pkey_free);
  library.Bind("EVP_PKEY_new_raw_public_key", lib.pkey_new_raw_public_key);
  library.Bind("EVP_sha256", lib.sha256);
  library.Bind("HMAC", lib.hmac);
  lib.error = library.error();
  return lib;
}

// Opened once, by the first caller (a function-local static: thread-safe).
const Libcrypto& Loaded() {
  static const Libcrypto lib = Open();
  return lib;
}

bool Usable() { return Loaded().error.empty(); }

}  // namespace

std::string LibcryptoLoadError() { return Loaded().error; }

}  // namespace sandbox::crypto

// OpenSSL's own signatures. Without libcrypto, each fails as OpenSSL's own do: no context, no
// digest, no key (the callers check every result), and CRYPTO_memcmp answers "unequal".
using sandbox::crypto::Loaded;
using sandbox::crypto::Usable;

extern "C" {

int CRYPTO_memcmp(const void* a, const void* b, size_t len) {
  return Usable() ? Loaded().memcmp(a, b, len) : 1;
}

int EVP_Digest(const void* data, size_t count, unsigned char* md, unsigned int* size,
               const EVP_MD* type, ENGINE* impl) {
  return Usable() ? Loaded().digest(data, count, md, size, type, impl) : 0;
}

int EVP_DigestFinal_ex(EVP_MD_CTX* ctx, unsigned char* md, unsigned int* size) {
  return Usable() ? Loaded().digest_final_ex(ctx, md, size) : 0;
}

int EVP_DigestInit_ex(EVP_MD_CTX* ctx, const EVP_MD* type, ENGINE* impl) {
  return Usable() ? Loaded().digest_init_ex(ctx, type, impl) : 0;
}

int EVP_DigestUpdate(EVP_MD_CTX* ctx, const void* data, size_t count) {
  return Usable() ? Loaded().digest_update(ctx, data, count) : 0;
}

int EVP_DigestVerify(EVP_MD_CTX* ctx, const unsigned char* signature, size_t signature_len,
                     const unsigned char* data, size_t data_len) {
  return Usable() ? Loaded().digest_verify(ctx, signature, signature_len, data, data_len) : 0;
}

int EVP_DigestVerifyInit(EVP_MD_CTX* ctx, EVP_PKEY_CTX** pctx, const EVP_MD* type, ENGINE* e,
                         EVP_PKEY* pkey) {
  return Usable() ? Loaded().digest_verify_init(ctx, pctx, type, e, pkey) : 0;
}

void EVP_MD_CTX_free(EVP_MD_CTX* ctx) {
  if (ctx != nullptr && Usable()) Loaded().md_ctx_free(ctx);
}

EVP_MD_CTX* EVP_MD_CTX_new() { return Usable() ? Loaded().md_ctx_new() : nullptr; }

void EVP_PKEY_free(EVP_PKEY* pkey) {
  if (pkey != nullptr && Usable()) Loaded().pkey_free(pkey);
}

EVP_PKEY* EVP_PKEY_new_raw_public_key(int type, ENGINE* e, const unsigned char* pub, size_t len) {
  return Usable() ? Loaded().pkey_new_raw_public_key(type, e, pub, len) : nullptr;
}

const EVP_MD* EVP_sha256() { return Usable() ? Loaded().sha256() : nullptr; }

unsigned char* HMAC(const EVP_MD* evp_md, const void* key, int key_len, const unsigned char* data,
                    size_t data_len, unsigned char* md, unsigned int* md_len) {
  return Usable() ? Loaded().hmac(evp_md, key, key_len, data, data_len, md, md_len) : nullptr;
}

}  // extern "C"
