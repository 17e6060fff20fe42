#include "mcp/auth/jwk_key.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include <cjose/base64.h>
#include <cjose/jwk.h>
#include <cjose/jws.h>
#include <cjose/util.h>
#include <openssl/evp.h>

#include "mcp/auth/jwt_header.h"

namespace sandbox::mcp::auth {

namespace {

using Json = nlohmann::json;

struct CjoseJwkDeleter {
  void operator()(cjose_jwk_t* jwk) const { cjose_jwk_release(jwk); }
};
struct CjoseJwsDeleter {
  void operator()(cjose_jws_t* jws) const { cjose_jws_release(jws); }
};
struct EvpPkeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct EvpMdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

std::string Member(const Json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// base64url without padding (RFC 7515 §2), decoded by cjose (checked first: its decoder aborts
// the process on some malformed input, mcp/auth/jwt_header.h).
std::optional<std::vector<uint8_t>> Base64UrlDecode(std::string_view text) {
  if (!IsBase64UrlPart(text)) return std::nullopt;
  uint8_t* out = nullptr;
  size_t out_len = 0;
  cjose_err err;
  if (!cjose_base64url_decode(text.data(), text.size(), &out, &out_len, &err)) return std::nullopt;
  std::vector<uint8_t> bytes(out, out + out_len);
  cjose_get_dealloc()(out);
  return bytes;
}

// The members a JWK import decodes as base64url (RFC 7518 §6: RSA n, e and the private ones; EC
// x, y, d; oct k; RFC 8037 OKP x), checked before libcjose decodes them: its decoder aborts the
// process (an assert) on a value such as "a=", so one bad key in an issuer's key set would stop
// the server (mcp/auth/jwt_header.h).
Status CheckEncodedMembers(const Json& jwk) {
  for (const char* name : {"n", "e", "x", "y", "k", "d", "p", "q", "dp", "dq", "qi"}) {
    auto member = jwk.find(name);
    if (member == jwk.end()) continue;
    if (!member->is_string() || !IsBase64UrlPart(member->get_ref<const std::string&>())) {
      return Fail(ErrorCode::kInvalidArgument, "the JWK's {} is not unpadded base64url", name);
    }
  }
  return {};
}

}  // namespace

struct JwkKey::Handles {
  std::unique_ptr<cjose_jwk_t, CjoseJwkDeleter> cjose;  // RSA, EC
  std::unique_ptr<EVP_PKEY, EvpPkeyDeleter> ed25519;    // OKP
};

JwkKey::~JwkKey() = default;

bool IsAllowedJwsAlgorithm(std::string_view alg) {
  for (std::string_view allowed :
       {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}) {
    if (alg == allowed) return true;
  }
  return false;
}

Result<std::shared_ptr<const JwkKey>> JwkKey::Import(const Json& jwk) {
  if (!jwk.is_object()) return Fail(ErrorCode::kInvalidArgument, "a JWK must be a JSON object");
  SBX_TRY(CheckEncodedMembers(jwk));
  std::shared_ptr<JwkKey> key(new JwkKey());
  key->kty_ = Member(jwk, "kty");
  key->crv_ = Member(jwk, "crv");
  key->alg_ = Member(jwk, "alg");
  key->kid_ = Member(jwk, "kid");
  key->handles_ = std::make_unique<Handles>();
  // A private member in a published key set is the issuer's mistake; refusing the key keeps
  // the server from treating a leaked secret as business as usual.
  if (jwk.contains("d")) return Fail(ErrorCode::kInvalidArgument, "the JWK holds a private key");
  if (key->kty_ == "RSA" || key->kty_ == "EC") {
    std::string text = jwk.dump();
    cjose_err err;
    key->handles_->cjose.reset(cjose_jwk_import(text.data(), text.size(), &err));
    if (!key->handles_->cjose) {
      return Fail(ErrorCode::kInvalidArgument, "cannot import the {} JWK: {}", key->kty_,
                  err.message ? err.message : "cjose error");
    }
    return std::shared_ptr<const JwkKey>(std::move(key));
  }
  if (key->kty_ == "OKP" && key->crv_ == "Ed25519") {
    auto x = Base64UrlDecode(Member(jwk, "x"));
    if (!x || x->size() != 32) {
      return Fail(ErrorCode::kInvalidArgument, "an Ed25519 JWK's x must be 32 bytes");
    }
    key->handles_->ed25519.reset(
        EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, x->data(), x->size()));
    if (!key->handles_->ed25519) {
      return Fail(ErrorCode::kInvalidArgument, "cannot import the Ed25519 JWK");
    }
    return std::shared_ptr<const JwkKey>(std::move(key));
  }
  return Fail(ErrorCode::kInvalidArgument,
              "unsupported JWK (kty {}, crv {}): only RSA, EC and OKP/Ed25519 public keys",
              key->kty_.empty() ? "missing" : key->kty_, key->crv_.empty() ? "none" : key->crv_);
}

bool JwkKey::Fits(std::string_view alg) const {
  if (!IsAllowedJwsAlgorithm(alg)) return false;
  if (!alg_.empty() && alg_ != alg) return false;
  if (alg[0] == 'R' || alg[0] == 'P') return kty_ == "RSA";
  if (alg == "ES256") return kty_ == "EC" && crv_ == "P-256";
  if (alg == "ES384") return kty_ == "EC" && crv_ == "P-384";
  if (alg == "ES512") return kty_ == "EC" && crv_ == "P-521";
  return alg == "EdDSA" && kty_ == "OKP" && crv_ == "Ed25519";
}

Status JwkKey::Verify(std::string_view alg, std::string_view compact) const {
  if (!Fits(alg)) {
    return Fail(ErrorCode::kInvalidArgument, "the key {} does not fit alg {}", kid_, alg);
  }
  if (handles_->cjose) {
    // cjose reads alg from the protected header itself; Fits() above has checked that the
    // header's alg is an asymmetric one this key type signs, so it cannot be talked into HMAC.
    cjose_err err;
    std::unique_ptr<cjose_jws_t, CjoseJwsDeleter> jws(
        cjose_jws_import(compact.data(), compact.size(), &err));
    if (!jws) return Fail(ErrorCode::kInvalidArgument, "malformed JWS");
    if (!cjose_jws_verify(jws.get(), handles_->cjose.get(), &err)) {
      return Fail(ErrorCode::kInvalidArgument, "the signature does not verify");
    }
    return {};
  }
  // EdDSA: the signature is over the ASCII of `header.payload` (RFC 8037 §3.1).
  size_t last_dot = compact.rfind('.');
  if (last_dot == std::string_view::npos) return Fail(ErrorCode::kInvalidArgument, "malformed JWS");
  auto signature = Base64UrlDecode(compact.substr(last_dot + 1));
  if (!signature || signature->size() != 64) {
    return Fail(ErrorCode::kInvalidArgument, "the signature does not verify");
  }
  std::unique_ptr<EVP_MD_CTX, EvpMdCtxDeleter> ctx(EVP_MD_CTX_new());
  std::string_view signed_part = compact.substr(0, last_dot);
  if (!ctx ||
      EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, handles_->ed25519.get()) != 1 ||
      EVP_DigestVerify(ctx.get(), signature->data(), signature->size(),
                       reinterpret_cast<const unsigned char*>(signed_part.data()),
                       signed_part.size()) != 1) {
    return Fail(ErrorCode::kInvalidArgument, "the signature does not verify");
  }
  return {};
}

}  // namespace sandbox::mcp::auth
