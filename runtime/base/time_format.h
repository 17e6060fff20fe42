// Timestamps as the project writes them everywhere (image records, archive manifests, tool
// results): RFC 3339 in UTC to the second, "2026-11-23T23:42:27Z".
#pragma once

#include <ctime>
#include <string>

namespace sandbox {

std::string Rfc3339Utc(std::time_t seconds);
std::string NowRfc3339();

}  // namespace sandbox
