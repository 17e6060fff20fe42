// What a pip requirement may look like wherever we hand one to pip (sandbox_install_packages,
// `image build --pip`): a project name with extras and version specifiers, nothing that pip
// would read as an option, a path, a URL or a requirements file.
#pragma once

#include <string>

namespace sandbox {

// "pandas", "scikit-learn>=1.4,<2", "requests[socks]==2.32.3"; not "-e x", "./dir", "git+https:…".
bool IsPlainRequirement(const std::string& spec);

}  // namespace sandbox
