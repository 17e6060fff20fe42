// The Prometheus text exposition format, version 0.0.4
// (prometheus.io/docs/instrumenting/exposition_formats): `# HELP` and `# TYPE` per family,
// one line per sample, histograms as cumulative `_bucket{le="…"}` lines ending with
// le="+Inf", then `_sum` and `_count`. Pure: snapshots in, text out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/metrics/registry.h"

namespace sandbox::metrics {

// What an HTTP answer carrying RenderText's output says it is.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string RenderText(const std::vector<FamilySnapshot>& families);

// A sample value as the format writes it: "+Inf", "-Inf", "NaN", or the shortest decimal that
// reads back as the same double ("3", "0.25", "1e+21").
std::string FormatValue(double value);
// `# HELP` text: backslash and line feed escaped.
std::string EscapeHelp(std::string_view text);
// A label value: backslash, double quote and line feed escaped.
std::string EscapeLabelValue(std::string_view text);

}  // namespace sandbox::metrics
