#include "tests/mcp/auth/test_keys.h"

#include <iterator>
#include <stdexcept>
#include <vector>

#include <cjose/base64.h>
#include <cjose/util.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

namespace sandbox::mcp::auth::testing {

namespace {

struct CtxDeleter {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

std::string BnParam(EVP_PKEY* key, const char* name, size_t pad = 0) {
  BIGNUM* bn = nullptr;
  Check(EVP_PKEY_get_bn_param(key, name, &bn) == 1, name);
  size_t size = std::max(pad, static_cast<size_t>(BN_num_bytes(bn)));
  std::string bytes(size, '\0');
  BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(size));
  BN_free(bn);
  return Base64Url(bytes);
}

}  // namespace

std::string Base64Url(std::string_view bytes) {
  char* out = nullptr;
  size_t out_len = 0;
  cjose_err err;
  Check(cjose_base64url_encode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &out,
                               &out_len, &err),
        "base64url");
  std::string text(out, out_len);
  cjose_get_dealloc()(out);
  return text;
}

std::string Compact(const nlohmann::json& header, const nlohmann::json& payload,
                    std::string_view signature) {
  return Base64Url(header.dump()) + "." + Base64Url(payload.dump()) + "." + std::string(signature);
}

std::string SignHs256(const nlohmann::json& header, const nlohmann::json& payload,
                      std::string_view secret) {
  std::string input = Base64Url(header.dump()) + "." + Base64Url(payload.dump());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &mac_len);
  return input + "." + Base64Url(std::string_view(reinterpret_cast<char*>(mac), mac_len));
}

TestKey::TestKey(Kind kind, std::string kid) : kind_(kind), kid_(std::move(kid)) {
  EVP_PKEY* raw = nullptr;
  switch (kind) {
    case Kind::kRsa:
      raw = EVP_RSA_gen(2048);
      break;
    case Kind::kEcP256:
      raw = EVP_EC_gen("P-256");
      break;
    case Kind::kEd25519:
      raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
      break;
  }
  Check(raw != nullptr, "keygen");
  key_.reset(raw);
}

std::string TestKey::alg() const {
  switch (kind_) {
    case Kind::kRsa:
      return "RS256";
    case Kind::kEcP256:
      return "ES256";
    case Kind::kEd25519:
      return "EdDSA";
  }
  return "";
}

nlohmann::json TestKey::PublicJwk() const {
  nlohmann::json jwk = {{"kid", kid_}, {"use", "sig"}};
  switch (kind_) {
    case Kind::kRsa:
      jwk["kty"] = "RSA";
      jwk["n"] = BnParam(key_.get(), OSSL_PKEY_PARAM_RSA_N);
      jwk["e"] = BnParam(key_.get(), OSSL_PKEY_PARAM_RSA_E);
      break;
    case Kind::kEcP256:
      jwk["kty"] = "EC";
      jwk["crv"] = "P-256";
      jwk["x"] = BnParam(key_.get(), OSSL_PKEY_PARAM_EC_PUB_X, 32);
      jwk["y"] = BnParam(key_.get(), OSSL_PKEY_PARAM_EC_PUB_Y, 32);
      break;
    case Kind::kEd25519: {
      unsigned char pub[32];
      size_t len = sizeof(pub);
      Check(EVP_PKEY_get_raw_public_key(key_.get(), pub, &len) == 1, "raw public key");
      jwk["kty"] = "OKP";
      jwk["crv"] = "Ed25519";
      jwk["x"] = Base64Url(std::string_view(reinterpret_cast<char*>(pub), len));
      break;
    }
  }
  return jwk;
}

std::string TestKey::PublicPem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, key_.get());
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(len));
  BIO_free(bio);
  return pem;
}

std::string TestKey::Sign(const nlohmann::json& payload, const nlohmann::json& extra_header) const {
  nlohmann::json header = {{"alg", alg()}, {"kid", kid_}, {"typ", "at+jwt"}};
  header.update(extra_header);
  for (auto it = header.begin(); it != header.end();) {
    it = it->is_null() ? header.erase(it) : std::next(it);
  }
  std::string input = Base64Url(header.dump()) + "." + Base64Url(payload.dump());
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  const EVP_MD* md = kind_ == Kind::kEd25519 ? nullptr : EVP_sha256();
  Check(EVP_DigestSignInit(ctx.get(), nullptr, md, nullptr, key_.get()) == 1, "sign init");
  size_t sig_len = 0;
  auto* data = reinterpret_cast<const unsigned char*>(input.data());
  Check(EVP_DigestSign(ctx.get(), nullptr, &sig_len, data, input.size()) == 1, "sign size");
  std::vector<unsigned char> sig(sig_len);
  Check(EVP_DigestSign(ctx.get(), sig.data(), &sig_len, data, input.size()) == 1, "sign");
  sig.resize(sig_len);
  std::string signature(sig.begin(), sig.end());
  if (kind_ == Kind::kEcP256) {
    // OpenSSL signs ECDSA as DER; JWS wants r || s, 32 bytes each (RFC 7518 §3.4).
    const unsigned char* p = sig.data();
    ECDSA_SIG* ecdsa = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    Check(ecdsa != nullptr, "ECDSA DER");
    std::string raw(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(ecdsa), reinterpret_cast<unsigned char*>(raw.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(ecdsa), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
    ECDSA_SIG_free(ecdsa);
    signature = raw;
  }
  return input + "." + Base64Url(signature);
}

}  // namespace sandbox::mcp::auth::testing
