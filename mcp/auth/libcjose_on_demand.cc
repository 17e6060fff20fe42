#include "mcp/auth/libcjose_on_demand.h"

#include <cstdlib>

#include <cjose/base64.h>
#include <cjose/jwk.h>
#include <cjose/jws.h>
#include <cjose/util.h>

#include "runtime/base/library_on_demand.h"

namespace sandbox::mcp::auth {
namespace {

// The entry points of libcjose.so.0 this program calls.
struct Libcjose {
  std::string error;  // empty once every entry point is bound
  decltype(&::cjose_base64url_decode) base64url_decode = nullptr;
  decltype(&::cjose_get_dealloc) get_dealloc = nullptr;
  decltype(&::cjose_jwk_import) jwk_import = nullptr;
  decltype(&::cjose_jwk_release) jwk_release = nullptr;
  decltype(&::cjose_jws_import) jws_import = nullptr;
  decltype(&::cjose_jws_release) jws_release = nullptr;
  decltype(&::cjose_jws_verify) jws_verify = nullptr;
};

Libcjose Open() {
  Libcjose lib;
  // It brings its own libjansson, and libcrypto (the same libcrypto.so.3 that
  // libcrypto_on_demand.cc opens).
  LibraryOnDemand library("libcjose.so.0");
  library.Bind("cjose_base64url_decode", lib.base64url_decode);
  library.Bind("cjose_get_dealloc", lib.get_dealloc);
  library.Bind("cjose_jwk_import", lib.jwk_import);
  library.Bind("cjose_jwk_release", lib.jwk_release);
  library.Bind("cjose_jws_import", lib.jws_import);
  library.Bind("cjose_jws_release", lib.jws_release);
  library.Bind("cjose_jws_verify", lib.jws_verify);
  lib.error = library.error();
  return lib;
}

// Opened once, by the first caller (a function-local static: thread-safe).
const Libcjose& Loaded() {
  static const Libcjose lib = Open();
  return lib;
}

bool Usable() { return Loaded().error.empty(); }

// What a call without libcjose reports in its cjose_err.
void Unavailable(cjose_err* err, const char* function) {
  if (err == nullptr) return;
  err->code = CJOSE_ERR_INVALID_STATE;
  err->message = Loaded().error.c_str();  // lives as long as the process
  err->function = function;
  err->file = __FILE__;
  err->line = __LINE__;
}

}  // namespace

std::string LibcjoseLoadError() { return Loaded().error; }

}  // namespace sandbox::mcp::auth

// cjose's own signatures. Without libcjose, each fails as cjose's own do (false, null) with its
// err saying why; nothing was allocated, so the deallocator given is free's.
using sandbox::mcp::auth::Loaded;
using sandbox::mcp::auth::Unavailable;
using sandbox::mcp::auth::Usable;

extern "C" {

bool cjose_base64url_decode(const char* input, const size_t inlen, uint8_t** output, size_t* outlen,
                            cjose_err* err) {
  if (Usable()) return Loaded().base64url_decode(input, inlen, output, outlen, err);
  Unavailable(err, __func__);
  return false;
}

cjose_dealloc_fn_t cjose_get_dealloc() { return Usable() ? Loaded().get_dealloc() : ::free; }

cjose_jwk_t* cjose_jwk_import(const char* json, size_t len, cjose_err* err) {
  if (Usable()) return Loaded().jwk_import(json, len, err);
  Unavailable(err, __func__);
  return nullptr;
}

bool cjose_jwk_release(cjose_jwk_t* jwk) {
  return jwk != nullptr && Usable() && Loaded().jwk_release(jwk);
}

cjose_jws_t* cjose_jws_import(const char* compact, size_t compact_len, cjose_err* err) {
  if (Usable()) return Loaded().jws_import(compact, compact_len, err);
  Unavailable(err, __func__);
  return nullptr;
}

void cjose_jws_release(cjose_jws_t* jws) {
  if (jws != nullptr && Usable()) Loaded().jws_release(jws);
}

bool cjose_jws_verify(cjose_jws_t* jws, const cjose_jwk_t* jwk, cjose_err* err) {
  if (Usable()) return Loaded().jws_verify(jws, jwk, err);
  Unavailable(err, __func__);
  return false;
}

}  // extern "C"
