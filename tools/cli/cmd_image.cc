// `mcp-sandbox image import|ls|rm|build`: the command line of the image store (rootfs/store.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "rootfs/docker_archive.h"
#include "rootfs/recipe/image_builder.h"
#include "rootfs/store.h"
#include "runtime/base/units.h"
#include "runtime/ns/session_record.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"

namespace sandbox::cli {
namespace {

constexpr const char* kStateDirHelp =
    "  --state-dir DIR   the image store (default: $SANDBOX_STATE_DIR, /var/lib/mcp-sandbox as\n"
    "                    root, else $XDG_STATE_HOME/mcp-sandbox or ~/.local/state/mcp-sandbox)\n";

void PrintImageUsage(std::ostream& out) {
  out << "usage: mcp-sandbox image <verb> [flags]\n\n"
         "verbs:\n"
         "  import FILE|DIR   import an OCI image layout (directory or tar), a `docker save`\n"
         "                    tarball or a `docker export` root filesystem\n"
         "  ls                list stored images\n"
         "  rm NAME|DIGEST    remove a name (and its image when no name is left) or an image\n"
         "  build             build the default Python image\n\n"
         "examples:\n"
         "  mcp-sandbox image build\n"
         "  mcp-sandbox image import python.tar --name python\n"
         "  mcp-sandbox image ls\n\n"
         "Run 'mcp-sandbox image <verb> --help' for its flags and an example.\n";
}

std::string ShortDigest(const std::string& digest) {
  constexpr size_t kPrefix = 7;  // "sha256:"
  return digest.size() > kPrefix + 12 ? digest.substr(kPrefix, 12) : digest;
}

rootfs::ImageStore OpenStore(const Args& args) {
  return rootfs::ImageStore(args.GetOr("--state-dir", rootfs::ImageStore::DefaultStateDir()));
}

// Progress of an import on stderr: a redrawn line on a terminal, one line per layer otherwise.
class ImportProgressPrinter {
 public:
  explicit ImportProgressPrinter(bool terminal) : terminal_(terminal) {}
  ~ImportProgressPrinter() { Clear(); }

  // Erases the progress line, so the result prints on a clean line.
  void Clear() {
    if (drawn_) std::fputs("\r\033[K", stderr);
    drawn_ = false;
  }

  void operator()(const rootfs::ImportProgress& progress) {
    bool new_layer = progress.layer != layer_;
    layer_ = progress.layer;
    if (!terminal_) {
      if (new_layer) {
        std::fprintf(stderr, "unpacking layer %zu/%zu\n", progress.layer, progress.layer_count);
      }
      return;
    }
    auto now = std::chrono::steady_clock::now();
    if (!new_layer && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::string line =
        fmt::format("unpacking layer {}/{}  {} / {}", progress.layer, progress.layer_count,
                    FormatBytes(progress.bytes_done), FormatBytes(progress.bytes_total));
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  bool terminal_;
  bool drawn_ = false;
  size_t layer_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

int ImportVerb(const Argv& argv) {
  Args args("image import", {"--name", "--state-dir"}, {});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << "usage: mcp-sandbox image import FILE|DIR [--name NAME] [--state-dir DIR]\n\n"
                 "Imports an OCI image layout (a directory or a tar, e.g. from `skopeo copy`),\n"
                 "a `docker save` tarball (any Docker version), or a `docker export` root\n"
                 "filesystem tar; whole-file gzip or zstd is fine. Digests are verified, and\n"
                 "an image already stored is not unpacked again.\n\n"
                 "flags:\n"
                 "  --name NAME       the name to give it (default: the archive's tags)\n"
              << kStateDirHelp
              << "\nexample:\n"
                 "  docker save python:3.12-slim -o python.tar\n"
                 "  mcp-sandbox image import python.tar --name python\n";
    return kExitOk;
  }
  if (args.positional().size() != 1) {
    return args.UsageError("needs exactly one FILE or DIR to import (see --help)");
  }
  rootfs::ImageStore store = OpenStore(args);
  rootfs::ImportOptions options;
  options.name = args.GetOr("--name", "");
  ImportProgressPrinter printer(::isatty(STDERR_FILENO) == 1);
  options.progress = [&printer](const rootfs::ImportProgress& progress) { printer(progress); };
  auto image = store.Import(args.positional().front(), options);
  printer.Clear();
  if (!image) {
    std::cerr << "mcp-sandbox image import: " << image.error().message << "\n";
    return kExitFailure;
  }
  std::string names;
  for (const auto& name : image->names) names += (names.empty() ? "" : ", ") + name;
  std::cout << (image->reused ? "already stored: " : "imported: ")
            << (names.empty() ? "<none>" : names) << " " << image->digest << " ("
            << FormatBytes(image->size_bytes) << ")\n";
  return kExitOk;
}

int ListVerb(const Argv& argv) {
  Args args("image ls", {"--state-dir"}, {"--json"});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << "usage: mcp-sandbox image ls [--json] [--state-dir DIR]\n\n"
                 "Lists stored images: name, digest, unpacked size, creation time.\n\n"
                 "flags:\n"
                 "  --json            one JSON object on stdout: {\"images\": [...]}\n"
              << kStateDirHelp << "\nexample:\n  mcp-sandbox image ls --json\n";
    return kExitOk;
  }
  if (!args.positional().empty()) return args.UsageError("takes no arguments (see --help)");
  rootfs::ImageStore store = OpenStore(args);
  auto images = store.List();
  if (!images) {
    std::cerr << "mcp-sandbox image ls: " << images.error().message << "\n";
    return kExitFailure;
  }
  if (args.Has("--json")) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& image : *images) {
      list.push_back({{"names", image.names},
                      {"digest", image.digest},
                      {"size_bytes", image.size_bytes},
                      {"created", image.created},
                      {"rootfs", image.rootfs}});
    }
    nlohmann::json out = {{"state_dir", store.state_dir()}, {"images", list}};
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  // One row per name, like `docker images`; unnamed images show as <none>.
  std::vector<std::vector<std::string>> rows = {{"NAME", "DIGEST", "SIZE", "CREATED"}};
  for (const auto& image : *images) {
    std::vector<std::string> names = image.names;
    if (names.empty()) names.push_back("<none>");
    for (const auto& name : names) {
      rows.push_back(
          {name, ShortDigest(image.digest), FormatBytes(image.size_bytes), image.created});
    }
  }
  std::vector<size_t> widths(4, 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
  return kExitOk;
}

// An image a running sandbox runs from is kept, as `docker rmi` keeps one a running container
// uses (even with -f): its tree is that sandbox's root, and deleting it would pull the files
// from under a live session.
rootfs::ImageStore::RemovalCheck NotRunning(const std::string& state_dir) {
  return [records = ns::SessionRecords(state_dir + "/sessions")](const std::string& tree) {
    std::vector<std::string> ids = records.RunningFrom(tree);
    if (ids.empty()) return Status{};
    return Status(Fail(ErrorCode::kInvalidArgument,
                       "the image is in use by running session{} {}: close {} (or stop its "
                       "server) first",
                       ids.size() == 1 ? "" : "s", fmt::join(ids, ", "),
                       ids.size() == 1 ? "it" : "them"));
  };
}

int RemoveVerb(const Argv& argv) {
  Args args("image rm", {"--state-dir"}, {});
  if (!args.Parse(argv)) return kExitUsage;
  if (args.Has("--help")) {
    std::cout << "usage: mcp-sandbox image rm NAME|DIGEST... [--state-dir DIR]\n\n"
                 "Removes a name, and the image when no other name points to it; given a\n"
                 "digest (or a unique prefix of it), removes the image and all its names.\n"
                 "An image that a running session uses is kept.\n\n"
                 "flags:\n"
              << kStateDirHelp << "\nexample:\n  mcp-sandbox image rm python\n";
    return kExitOk;
  }
  if (args.positional().empty()) return args.UsageError("needs a NAME or DIGEST (see --help)");
  rootfs::ImageStore store = OpenStore(args);
  int exit_code = kExitOk;
  for (const auto& target : args.positional()) {
    if (auto status = store.Remove(target, NotRunning(store.state_dir())); !status) {
      std::cerr << "mcp-sandbox image rm: " << status.error().message << "\n";
      exit_code = kExitFailure;
      continue;
    }
    std::cout << "removed: " << target << "\n";
  }
  // A removed image's docker export (made for the Docker backend) goes with it.
  (void)rootfs::RemoveOrphanDockerArchives(store.state_dir());
  return exit_code;
}

}  // namespace

int ImageCommand(const Argv& argv) {
  if (argv.empty()) {
    PrintImageUsage(std::cerr);
    return kExitUsage;
  }
  const std::string& verb = argv.front();
  Argv rest(argv.begin() + 1, argv.end());
  if (verb == "--help" || verb == "-h" || verb == "help") {
    PrintImageUsage(std::cout);
    return kExitOk;
  }
  if (verb == "import") return ImportVerb(rest);
  if (verb == "ls" || verb == "list") return ListVerb(rest);
  if (verb == "rm" || verb == "remove") return RemoveVerb(rest);
  if (verb == "build") return ImageBuildCommand(rest);
  std::cerr << "mcp-sandbox image: unknown verb '" << verb << "' (see mcp-sandbox image --help)\n";
  return kExitUsage;
}

}  // namespace sandbox::cli
