#include "rootfs/entry_path.h"

#include <climits>

namespace sandbox::rootfs {

std::string EntryPath::Joined() const {
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out.push_back('/');
    out += part;
  }
  return out;
}

std::string EntryPath::ParentJoined() const {
  std::string out;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!out.empty()) out.push_back('/');
    out += parts[i];
  }
  return out;
}

Result<EntryPath> NormalizeEntryPath(std::string_view raw, uint32_t max_path_bytes) {
  // Quote at most a readable prefix of hostile names in messages.
  std::string_view shown = raw.substr(0, 200);
  if (raw.size() > max_path_bytes) {
    return Fail(ErrorCode::kInvalidPath, "entry name longer than {} bytes: '{}...'", max_path_bytes,
                shown);
  }
  if (raw.find('\0') != std::string_view::npos) {
    return Fail(ErrorCode::kInvalidPath, "entry name contains a NUL byte: '{}'", shown);
  }
  EntryPath path;
  size_t pos = 0;
  while (pos <= raw.size()) {
    size_t slash = raw.find('/', pos);
    if (slash == std::string_view::npos) slash = raw.size();
    std::string_view part = raw.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return Fail(ErrorCode::kInvalidPath, "entry name contains '..': '{}'", shown);
    }
    if (part.size() > NAME_MAX) {
      return Fail(ErrorCode::kInvalidPath, "entry name has a component longer than {}: '{}...'",
                  NAME_MAX, shown);
    }
    path.parts.emplace_back(part);
  }
  return path;
}

}  // namespace sandbox::rootfs
