// A directory tree as comparable data: every entry's type, permission bits, content (files)
// and target (symlinks), by path. Used to check an imported rootfs file by file.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>

namespace sandbox::testing {

struct Node {
  char type = '?';      // 'f' file, 'd' directory, 'l' symlink, 'o' other
  mode_t mode = 0;      // permission bits (07777), not for symlinks
  std::string content;  // files: the bytes; symlinks: the target
  bool operator==(const Node& other) const = default;
};

using Tree = std::map<std::string, Node>;  // "etc/passwd" -> node; the root itself not listed

// Walks `root` without following symlinks. Paths in `skip` (and below them) are left out.
Tree Snapshot(const std::string& root, const std::set<std::string>& skip = {});

// The mount points every stored rootfs gets and their parents ("mnt"), as skip-set for Snapshot.
std::set<std::string> MountPointPaths();

// A readable list of the differences ("" when equal).
std::string DiffTrees(const Tree& expected, const Tree& actual);

// Shorthands for expected trees.
inline Node F(std::string content, mode_t mode = 0644) {
  return Node{'f', mode, std::move(content)};
}
inline Node D(mode_t mode = 0755) { return Node{'d', mode, {}}; }
inline Node L(std::string target) { return Node{'l', 0, std::move(target)}; }

}  // namespace sandbox::testing
