#include "tests/rootfs/tree_snapshot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "rootfs/store.h"
#include "runtime/base/files.h"

namespace sandbox::testing {

Tree Snapshot(const std::string& root, const std::set<std::string>& skip) {
  Tree tree;
  namespace fs = std::filesystem;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    // lexically: fs::relative would resolve symlinks ("bin" -> "usr/bin").
    std::string path = it->path().lexically_relative(root).string();
    if (skip.count(path) > 0) {
      it.disable_recursion_pending();
      continue;
    }
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    Node node;
    if (S_ISLNK(st.st_mode)) {
      node.type = 'l';
      char target[4096];
      ssize_t n = ::readlink(it->path().c_str(), target, sizeof target);
      node.content.assign(target, n > 0 ? static_cast<size_t>(n) : 0);
    } else {
      node.mode = st.st_mode & 07777;
      if (S_ISDIR(st.st_mode)) {
        node.type = 'd';
      } else if (S_ISREG(st.st_mode)) {
        node.type = 'f';
        auto content = ReadFile(it->path());
        node.content = content ? *content : "<unreadable>";
      } else {
        node.type = 'o';
      }
    }
    tree[path] = node;
  }
  return tree;
}

std::set<std::string> MountPointPaths() {
  std::set<std::string> paths;
  for (const char* mount_point : rootfs::kRootfsMountPoints) {
    std::string path = mount_point + 1;  // drop the leading '/'
    paths.insert(path);
    if (auto slash = path.rfind('/'); slash != std::string::npos)
      paths.insert(path.substr(0, slash));
  }
  return paths;
}

namespace {
std::string Describe(const Node& node) {
  std::ostringstream out;
  out << node.type << " " << std::oct << node.mode << std::dec;
  if (!node.content.empty()) {
    std::string shown = node.content.substr(0, 40);
    out << " '" << shown << (node.content.size() > 40 ? "...'" : "'");
  }
  return out.str();
}
}  // namespace

std::string DiffTrees(const Tree& expected, const Tree& actual) {
  std::ostringstream out;
  for (const auto& [path, node] : expected) {
    auto it = actual.find(path);
    if (it == actual.end()) {
      out << "missing: " << path << " (" << Describe(node) << ")\n";
    } else if (!(it->second == node)) {
      out << "differs: " << path << " expected " << Describe(node) << ", got "
          << Describe(it->second) << "\n";
    }
  }
  for (const auto& [path, node] : actual) {
    if (expected.count(path) == 0) out << "unexpected: " << path << " (" << Describe(node) << ")\n";
  }
  return out.str();
}

}  // namespace sandbox::testing
