// Any stored image runs on the Docker backend, not only those `image build` made: an image
// imported into the store (here the small image's archive, given a config of its own by umoci so
// the daemon cannot already have it) is exported from the store's tree on demand, loaded, and
// runs a session through the same resolver `serve` and `run` use. Needs root, a daemon, umoci
// and the small image's build archive (`image build --variant small`); skipped, saying which
// is missing, otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rootfs/recipe/image_builder.h"
#include "rootfs/store.h"
#include "runtime/agent/host/agent_dir.h"
#include "runtime/base/files.h"
#include "runtime/docker/container_spec.h"
#include "runtime/session/session_manager.h"
#include "tests/runtime/docker/docker_fixture.h"
#include "tools/cli/wiring.h"

namespace stored_image_test {

using namespace sandbox;
using namespace sandbox::testing;

namespace {

// The OCI archive `image build --variant small` cached in the default state dir.
std::string SmallImageArchiveOrSkip() {
  rootfs::BuildOptions build;
  build.name = rootfs::DefaultImageName(rootfs::ImageVariant::kSmall);
  build.variant = rootfs::ImageVariant::kSmall;
  build.state_dir = rootfs::ImageStore::DefaultStateDir();
  auto cached = rootfs::FindCachedBuild(build);
  if (!cached || !*cached) {
    SkipTest("no archive of the small image in " + build.state_dir +
             " (mcp-sandbox image build --variant small)");
  }
  return (*cached)->archive_path;
}

void Shell(const std::string& command) {
  std::string output;
  int status = RunShell(command + " 2>&1", &output);
  INFO(command << "\n" << output);
  REQUIRE(status == 0);
}

// Removes the images a test loaded into the daemon, whatever happens to the test.
struct LoadedImages {
  std::vector<std::string> references;
  ~LoadedImages() {
    for (const auto& reference : references) {
      RunShell("docker rmi -f " + reference + " >/dev/null 2>&1");
    }
  }
};

}  // namespace

TEST_CASE("docker: an imported image is exported from the store, loaded and runs a session",
          "[docker]") {
  auto connected = ConnectDockerOrSkip();
  std::shared_ptr<docker::DockerBackend> backend = std::move(connected);
  if (RunShell("command -v umoci >/dev/null") != 0) SkipTest("umoci is not installed");
  const std::string source = SmallImageArchiveOrSkip();
  auto agent_dir = FindAgentDir();
  if (!agent_dir) SkipTest("agent not built: " + agent_dir.error().message);

  // The small image with a config of its own: a digest no daemon has seen.
  TempDir work;
  const std::string marker = fmt::format("{}-{}", ::getpid(), ::time(nullptr));
  Shell(
      fmt::format("mkdir {0}/oci && tar -xf {1} -C {0}/oci && umoci config --image {0}/oci:latest "
                  "--config.env MCP_SANDBOX_EXPORT_TEST={2}",
                  work.path(), source, marker));
  TempDir state;
  auto store = std::make_shared<rootfs::ImageStore>(state.path());
  rootfs::ImportOptions import;
  import.name = "exported-small-test";
  auto image = store->Import(work.path() + "/oci", import);
  INFO((image ? "" : image.error().message));
  REQUIRE(image);
  LoadedImages loaded;
  loaded.references.push_back(image->digest);
  REQUIRE_FALSE(backend->engine().ImageExists(image->digest).value());

  // Resolving costs nothing: the export waits until the Docker backend asks for it.
  auto resolved = cli::MakeImageResolver(store)(import.name);
  REQUIRE(resolved);
  CHECK(resolved->docker.archive.empty());
  CHECK(resolved->docker.reference == image->digest);
  CHECK(resolved->docker.source);
  CHECK_FALSE(std::filesystem::exists(state.Join("archives")));

  SessionConfig config;
  TempDir sessions;
  config.state_dir = sessions.path();
  config.default_image = import.name;
  config.agent_dir = *agent_dir;
  SessionManager manager(config, backend, cli::MakeImageResolver(store));

  auto started = std::chrono::steady_clock::now();
  auto session = manager.Create({});
  INFO((session ? "" : session.error().message));
  REQUIRE(session);
  auto first_start = std::chrono::steady_clock::now() - started;
  CHECK(session->backend == "docker");

  // The export is cached in the store's state dir, and names the image the container runs.
  const std::string hex = image->digest.substr(7);
  auto record = ReadFile(state.Join("archives/docker-" + hex + ".json"));
  REQUIRE(record);
  auto image_id = nlohmann::json::parse(*record)["image_id"].get<std::string>();
  loaded.references.push_back(image_id);
  loaded.references.push_back("mcp-sandbox/stored:" + hex);
  CHECK(backend->engine().ImageExists(image_id).value());
  auto container = backend->engine().InspectContainer(docker::ContainerNameFor(session->id));
  REQUIRE(container);
  CHECK((*container)["Image"] == image_id);

  RunRequest request;
  request.code = "import os\nprint(1)\nprint(os.environ.get('MCP_SANDBOX_EXPORT_TEST', ''))";
  auto run = manager.Run(session->id, request);
  INFO((run ? "" : run.error().message));
  REQUIRE(run);
  CHECK(run->exit_code == 0);
  CHECK(run->stdout_text == "1\n" + marker + "\n");

  // A second session reuses the archive and the loaded image.
  struct stat before {};
  REQUIRE(::stat(state.Join("archives/docker-" + hex + ".tar").c_str(), &before) == 0);
  started = std::chrono::steady_clock::now();
  auto second = manager.Create({});
  REQUIRE(second);
  auto second_start = std::chrono::steady_clock::now() - started;
  struct stat after {};
  REQUIRE(::stat(state.Join("archives/docker-" + hex + ".tar").c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  WARN("first start (export + load) "
       << std::chrono::duration_cast<std::chrono::milliseconds>(first_start).count()
       << " ms, second start "
       << std::chrono::duration_cast<std::chrono::milliseconds>(second_start).count() << " ms");

  // Closing removes the containers; the images go with `loaded`.
  for (const std::string& id : {session->id, second->id}) {
    REQUIRE(manager.Close(id));
    auto gone = backend->engine().InspectContainer(docker::ContainerNameFor(id));
    REQUIRE_FALSE(gone);
    CHECK(gone.error().code == ErrorCode::kNotFound);
  }
}

}  // namespace stored_image_test
