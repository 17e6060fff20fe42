// What may name an image in the store: the one rule `image import --name`, `image build --name`,
// the store's name index and SANDBOX_IMAGE all apply. Header-only, so the MCP layer's config
// parser can check a name without linking the store.
#pragma once

#include <string_view>

namespace sandbox::rootfs {

inline bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Names as docker spells references: "python", "python:3.12", "ghcr.io/org/img:tag".
inline bool IsValidImageName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.substr(0, 7) == "sha256:") return false;
  if (!IsAsciiAlnum(name.front())) return false;
  for (char c : name) {
    bool ok = IsAsciiAlnum(c) || c == '.' || c == '_' || c == '-' || c == ':' || c == '/' ||
              c == '@' || c == '+';
    if (!ok) return false;
  }
  return true;
}

// A digest ("sha256:" + 1 to 64 lowercase hex digits: a unique prefix is enough).
inline bool IsImageDigest(std::string_view text) {
  if (text.substr(0, 7) != "sha256:") return false;
  std::string_view hex = text.substr(7);
  if (hex.empty() || hex.size() > 64) return false;
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// What SANDBOX_IMAGE and a session's `image` may be: a name or a digest.
inline bool IsValidImageReference(std::string_view text) {
  return IsValidImageName(text) || IsImageDigest(text);
}

}  // namespace sandbox::rootfs
