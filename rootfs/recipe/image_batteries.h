// What the default image offers code: each module, the name a Python user knows it by, and the
// Debian package that brings it. The one home of that list: the recipe installs the packages
// (recipe.cc), the image build's smoke test imports the modules (customize.sh, through the
// recipe), `image build --list-modules` prints them for tests/cli/batteries_import_test.sh, and
// the run and install tools name them in their descriptions. Pure data, no dependencies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandbox::rootfs {

struct ImageBattery {
  std::string_view name;     // as users know it: "scikit-learn", "opencv (cv2)"
  std::string_view module;   // what `import` takes: "sklearn", "cv2"
  std::string_view package;  // the Debian package: "python3-sklearn"
};

// In the recipe's order (grouped by what they are for).
const std::vector<ImageBattery>& DefaultImageBatteries();

// "numpy, pandas, ..., nltk (no corpora)": the names, for the tools' descriptions.
std::string DefaultImageBatteryNames();

}  // namespace sandbox::rootfs
