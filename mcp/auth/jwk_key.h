// One public signing key from an issuer's JWKS (RFC 7517), imported once and used to check
// JWS signatures (RFC 7515). RSA and EC keys are imported and checked by cjose (Debian's
// libcjose, Cisco's JOSE library); Ed25519 keys (RFC 8037, "OKP") by OpenSSL's EVP, because
// cjose 0.6 has no OKP keys. No symmetric key is ever accepted: a JWKS is public, so an "oct"
// key or an HS* algorithm would let anyone who read it mint tokens.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/base/result.h"

namespace sandbox::mcp::auth {

// The asymmetric JWS algorithms a token may be signed with; "none", HS* and anything else are
// refused before a key is looked at.
bool IsAllowedJwsAlgorithm(std::string_view alg);

class JwkKey {
 public:
  // Imports a public JWK (kty RSA, EC with crv P-256/P-384/P-521, or OKP with crv Ed25519).
  // kInvalidArgument for a symmetric or unknown key type, a private key, or a malformed one.
  static Result<std::shared_ptr<const JwkKey>> Import(const nlohmann::json& jwk);
  ~JwkKey();
  JwkKey(const JwkKey&) = delete;
  JwkKey& operator=(const JwkKey&) = delete;

  // Whether this key can check a signature made with `alg` (RS*/PS* need RSA, ES256 needs EC
  // P-256, ..., EdDSA needs Ed25519), and the JWK's own "alg", when it names one, agrees.
  bool Fits(std::string_view alg) const;

  // Checks the signature of a compact JWS (`header.payload.signature`) whose header says
  // `alg`. Fails with kInvalidArgument when it does not verify. Call Fits(alg) first.
  Status Verify(std::string_view alg, std::string_view compact) const;

  const std::string& kid() const { return kid_; }

 private:
  struct Handles;
  JwkKey() = default;
  std::string kty_;
  std::string crv_;
  std::string alg_;  // the JWK's "alg" member, or ""
  std::string kid_;
  std::unique_ptr<Handles> handles_;
};

}  // namespace sandbox::mcp::auth
