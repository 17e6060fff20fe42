// The recipe as data: variants, suites, the recipe hash and the mmdebstrap command line.
#include "rootfs/recipe/recipe.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include "rootfs/digest.h"
#include "rootfs/recipe/image_batteries.h"

namespace sandbox::rootfs::recipe_test {
namespace {

bool Contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

TEST_CASE("variant names parse both ways and map to store names", "[unit]") {
  CHECK(ParseImageVariant("default").value() == ImageVariant::kDefault);
  CHECK(ParseImageVariant("small").value() == ImageVariant::kSmall);
  auto bad = ParseImageVariant("huge");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::kInvalidArgument);
  CHECK(bad.error().message.find("huge") != std::string::npos);
  CHECK(ImageVariantName(ImageVariant::kSmall) == "small");
  CHECK(DefaultImageName(ImageVariant::kDefault) == "python");
  CHECK(DefaultImageName(ImageVariant::kSmall) == "python-small");
}

TEST_CASE("the default recipe has the batteries, small has python3 and dill only", "[unit]") {
  auto full = MakeRecipe(ImageVariant::kDefault, "trixie");
  REQUIRE(full);
  for (const char* package :
       {"python3", "python3-dill", "python3-numpy", "python3-pandas", "python3-matplotlib",
        "python3-seaborn", "python3-scipy", "python3-openpyxl", "python3-reportlab", "python3-pip",
        "python3-venv", "fonts-dejavu-core"}) {
    CHECK(Contains(full->packages, package));
  }
  // Issue #16's list: what models reach for.
  for (const char* package :
       {"python3-sklearn", "python3-statsmodels", "python3-sympy", "python3-plotly", "python3-bs4",
        "python3-lxml", "python3-requests", "python3-xlsxwriter", "python3-docx", "python3-pil",
        "python3-networkx", "python3-tabulate", "python3-pypdf", "python3-jinja2", "python3-h5py",
        "python3-xarray"}) {
    INFO(package);
    CHECK(Contains(full->packages, package));
  }
  // No package twice: the list is the recipe hash's input, and a duplicate hides a typo.
  std::vector<std::string> sorted = full->packages;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  auto small = MakeRecipe(ImageVariant::kSmall, "trixie");
  REQUIRE(small);
  // dill: hibernation keeps functions and classes in the small image too.
  CHECK(small->packages == std::vector<std::string>{"python3", "python3-dill"});

  for (const Recipe* recipe : {&*full, &*small}) {
    CHECK(recipe->user == "1000:1000");
    CHECK(recipe->working_dir == "/mnt/data");
    CHECK(Contains(recipe->env, "MPLBACKEND=Agg"));
    CHECK(Contains(recipe->env, "HOME=/tmp"));
    CHECK(Contains(recipe->env, "PYTHONDONTWRITEBYTECODE=1"));
    CHECK(Contains(recipe->env, "PYTHONUNBUFFERED=1"));
    CHECK(Contains(recipe->env, "LANG=C.UTF-8"));
    CHECK(std::any_of(recipe->env.begin(), recipe->env.end(),
                      [](const std::string& e) { return e.rfind("PATH=", 0) == 0; }));
    CHECK(recipe->customize_script.find("sandbox:x:1000:1000") != std::string::npos);
  }
}

TEST_CASE("the batteries are the one list: packages installed, modules smoke-tested, named",
          "[unit]") {
  auto full = MakeRecipe(ImageVariant::kDefault, "trixie");
  REQUIRE(full);
  std::string modules_line = "\nSANDBOX_IMAGE_MODULES='";
  for (const auto& battery : DefaultImageBatteries()) {
    INFO(battery.module);
    CHECK(Contains(full->packages, std::string(battery.package)));
    modules_line +=
        std::string(battery.module) + (&battery == &DefaultImageBatteries().back() ? "'\n" : " ");
  }
  // The hook's second line (after its #!) sets the modules its smoke test imports.
  CHECK(full->customize_script.rfind("#!/bin/sh" + modules_line, 0) == 0);
  auto small = MakeRecipe(ImageVariant::kSmall, "trixie");
  REQUIRE(small);
  CHECK(small->customize_script.rfind("#!/bin/sh\nSANDBOX_IMAGE_MODULES=''\n", 0) == 0);
  // The tools' descriptions name the libraries, not pip and venv.
  std::string names = DefaultImageBatteryNames();
  CHECK(names.rfind("numpy, pandas, scipy", 0) == 0);
  CHECK(names.find("opencv (cv2)") != std::string::npos);
  CHECK(names.find("venv") == std::string::npos);
}

TEST_CASE("suites must look like Debian suite names", "[unit]") {
  CHECK(MakeRecipe(ImageVariant::kSmall, "bookworm"));
  CHECK(MakeRecipe(ImageVariant::kSmall, "stable-backports"));
  for (const char* bad : {"", "Trixie", "trixie main", "../x", "-x", "trixie;rm", "a/b"}) {
    INFO(bad);
    auto recipe = MakeRecipe(ImageVariant::kSmall, bad);
    REQUIRE_FALSE(recipe);
    CHECK(recipe.error().code == ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("the recipe hash is stable and follows every input that shapes the image", "[unit]") {
  Recipe base = MakeRecipe(ImageVariant::kDefault, "trixie").value();
  std::string hash = RecipeHash(base);
  CHECK(IsSha256Hex(hash));
  CHECK(RecipeHash(MakeRecipe(ImageVariant::kDefault, "trixie").value()) == hash);

  CHECK(RecipeHash(MakeRecipe(ImageVariant::kSmall, "trixie").value()) != hash);
  CHECK(RecipeHash(MakeRecipe(ImageVariant::kDefault, "bookworm").value()) != hash);
  Recipe changed = base;
  changed.customize_script += "\n# edited\n";
  CHECK(RecipeHash(changed) != hash);
  changed = base;
  changed.packages.push_back("python3-sklearn");
  CHECK(RecipeHash(changed) != hash);
  changed = base;
  changed.env.push_back("X=1");
  CHECK(RecipeHash(changed) != hash);
  changed = base;
  changed.dpkg_options.pop_back();
  CHECK(RecipeHash(changed) != hash);
}

TEST_CASE("mmdebstrap argv: mode, variant, includes, doc excludes, hook, suite, mirror", "[unit]") {
  Recipe recipe = MakeRecipe(ImageVariant::kDefault, "trixie").value();
  MmdebstrapOptions options;
  options.as_root = true;
  options.hook_path = "/var/lib/x/it's/customize.sh";
  auto argv = MmdebstrapArgv(recipe, options);
  REQUIRE(argv.size() > 6);
  CHECK(argv[0] == "mmdebstrap");
  CHECK(Contains(argv, "--mode=root"));
  CHECK(Contains(argv, "--variant=essential"));
  auto include = std::find_if(argv.begin(), argv.end(), [](const std::string& arg) {
    return arg.rfind("--include=", 0) == 0;
  });
  REQUIRE(include != argv.end());
  CHECK(include->find("python3-numpy,") != std::string::npos);
  CHECK(include->find(' ') == std::string::npos);
  CHECK(Contains(argv, "--dpkgopt=path-exclude=/usr/share/doc/*"));
  CHECK(Contains(argv, "--dpkgopt=path-exclude=/usr/share/man/*"));
  // The hook path is quoted for sh, including a quote inside it.
  CHECK(Contains(argv, "--customize-hook=sh '/var/lib/x/it'\\''s/customize.sh' \"$1\""));
  // No mirror: suite and output come last, so mmdebstrap adds updates and security itself.
  CHECK(argv[argv.size() - 2] == "trixie");
  CHECK(argv.back() == "-");

  options.as_root = false;
  options.mirror = "http://mirror.example/debian";
  options.output = "/tmp/out.tar";
  argv = MmdebstrapArgv(recipe, options);
  CHECK(Contains(argv, "--mode=unshare"));
  CHECK(argv[argv.size() - 3] == "trixie");
  CHECK(argv[argv.size() - 2] == "/tmp/out.tar");
  CHECK(argv.back() == "http://mirror.example/debian");
}

TEST_CASE("image build --pip: plain requirements only, in the hash, installed by a hook",
          "[unit]") {
  auto recipe = MakeRecipe(ImageVariant::kSmall, "trixie");
  REQUIRE(recipe);
  const std::string plain_hash = RecipeHash(*recipe);
  CHECK_FALSE(AddPipRequirements(*recipe, {"-e", "x"}));
  CHECK_FALSE(AddPipRequirements(*recipe, {"git+https://example.org/x"}));
  CHECK_FALSE(AddPipRequirements(*recipe, {"a; rm -rf /"}));
  REQUIRE(AddPipRequirements(*recipe, {"pyarrow==18.1.0", "requests[socks]>=2,<3"}));
  CHECK(Contains(recipe->packages, "python3-pip"));
  CHECK(RecipeHash(*recipe) != plain_hash);

  MmdebstrapOptions options;
  options.hook_path = "/tmp/customize.sh";
  options.pip_index_url = "http://mirror.lan:3141/root/pypi/+simple/";
  auto argv = MmdebstrapArgv(*recipe, options);
  auto hook = std::find_if(argv.begin(), argv.end(), [](const std::string& arg) {
    return arg.rfind("--customize-hook=", 0) == 0 && arg.find("pip install") != std::string::npos;
  });
  REQUIRE(hook != argv.end());
  CHECK(hook->find("'pyarrow==18.1.0' 'requests[socks]>=2,<3'") != std::string::npos);
  CHECK(hook->find("--index-url 'http://mirror.lan:3141/root/pypi/+simple/'") != std::string::npos);
  CHECK(hook->find("--trusted-host 'mirror.lan'") != std::string::npos);
  CHECK(hook->find("PIP_CONFIG_FILE=/dev/null") != std::string::npos);
  CHECK(hook->find("--no-index") == std::string::npos);

  options.pip_index_url.clear();
  options.pip_wheelhouse = "/srv/wheels";
  argv = MmdebstrapArgv(*recipe, options);
  hook = std::find_if(argv.begin(), argv.end(), [](const std::string& arg) {
    return arg.find("pip install") != std::string::npos;
  });
  REQUIRE(hook != argv.end());
  CHECK(hook->find("--find-links /tmp/wheelhouse --no-index") != std::string::npos);
  CHECK(hook->find("'/srv/wheels/.'") != std::string::npos);
}

}  // namespace
}  // namespace sandbox::rootfs::recipe_test
