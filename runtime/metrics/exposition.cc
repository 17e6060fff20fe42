#include "runtime/metrics/exposition.h"

#include <cmath>

#include <fmt/format.h>

namespace sandbox::metrics {

namespace {

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"}` (with `extra` appended, for le), or "" with no labels at all.
void AppendLabels(std::string& out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, std::string_view extra_name = {},
                  std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string EscapeHelp(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeLabelValue(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderText(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const auto& family : families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family.name, EscapeHelp(family.help),
                       family.name, TypeName(family.type));
    for (const auto& sample : family.samples) {
      if (family.type != MetricType::kHistogram) {
        out += family.name;
        AppendLabels(out, family.label_names, sample.label_values);
        out += ' ';
        out += FormatValue(sample.value);
        out += '\n';
        continue;
      }
      // Buckets are cumulative in the format: each counts every observation <= its bound.
      uint64_t cumulative = 0;
      for (size_t i = 0; i < sample.bucket_counts.size(); ++i) {
        cumulative += sample.bucket_counts[i];
        std::string le =
            i < family.bounds.size() ? FormatValue(family.bounds[i]) : std::string("+Inf");
        out += family.name;
        out += "_bucket";
        AppendLabels(out, family.label_names, sample.label_values, "le", le);
        out += fmt::format(" {}\n", cumulative);
      }
      out += family.name;
      out += "_sum";
      AppendLabels(out, family.label_names, sample.label_values);
      out += ' ';
      out += FormatValue(sample.sum);
      out += '\n';
      out += family.name;
      out += "_count";
      AppendLabels(out, family.label_names, sample.label_values);
      out += fmt::format(" {}\n", sample.count);
    }
  }
  return out;
}

}  // namespace sandbox::metrics
