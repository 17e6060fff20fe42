// Signing keys made in the test with OpenSSL, their public JWKs, and compact JWS tokens signed
// with them: what an issuer does, so the verifier is tested against real signatures.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace sandbox::mcp::auth::testing {

struct PkeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};

class TestKey {
 public:
  enum class Kind { kRsa, kEcP256, kEd25519 };
  TestKey(Kind kind, std::string kid);

  // {"kty", "kid", "use": "sig", ...} with the public parts only.
  nlohmann::json PublicJwk() const;
  // The alg this key signs with: RS256, ES256 or EdDSA.
  std::string alg() const;
  const std::string& kid() const { return kid_; }
  // header.payload.signature, header {"alg": alg(), "kid": kid(), "typ": "at+jwt"} plus `extra`
  // (a null member there drops that member).
  std::string Sign(const nlohmann::json& payload,
                   const nlohmann::json& extra_header = nlohmann::json::object()) const;
  // The public key as PEM, the "secret" of the HS256-with-the-public-key attack.
  std::string PublicPem() const;

 private:
  Kind kind_;
  std::string kid_;
  std::unique_ptr<EVP_PKEY, PkeyDeleter> key_;
};

std::string Base64Url(std::string_view bytes);
// A token with any header and payload and a given signature part (forgeries).
std::string Compact(const nlohmann::json& header, const nlohmann::json& payload,
                    std::string_view signature);
// HMAC-SHA256 over header.payload with `secret`, as an HS256 token.
std::string SignHs256(const nlohmann::json& header, const nlohmann::json& payload,
                      std::string_view secret);

}  // namespace sandbox::mcp::auth::testing
