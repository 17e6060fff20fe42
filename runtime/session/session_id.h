// Session ids: "sess_" followed by 12 lowercase hex digits from the kernel's CSPRNG.
#pragma once

#include <string>
#include <string_view>

namespace sandbox {

std::string NewSessionId();
bool IsValidSessionId(std::string_view id);

}  // namespace sandbox
