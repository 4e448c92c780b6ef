#include "active/thresholds.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>

#include "core/json_read.hpp"
#include "core/keys.hpp"
#include "core/strings.hpp"

namespace cmax::active {

extern const char* const kBuiltinActiveThresholds;

namespace {

using nlohmann::json;

Error Bad(std::string_view where, std::string_view why) {
  return Error{ErrorCode::kInvalidArgument, fmt::format("active thresholds: {}: {}", where, why)};
}

Result<void> OnlyKeys(const json& object, const std::vector<std::string_view>& known,
                      std::string_view where) {
  if (!object.is_object()) return tl::unexpected(Bad(where, "must be an object"));
  for (const auto& [key, value] : object.items()) {
    if (std::ranges::find(known, key) == known.end()) {
      return tl::unexpected(
          UnknownKey(fmt::format("active thresholds: {}", where), SanitizeUtf8(key), 0, known));
    }
  }
  return {};
}

Result<std::string> Text(const json& object, const char* key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return tl::unexpected(Bad(where, fmt::format("\"{}\" must be a non-empty string", key)));
  }
  return it->get<std::string>();
}

Result<double> Positive(const json& object, const char* key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number() || !(it->get<double>() > 0)) {
    return tl::unexpected(Bad(where, fmt::format("\"{}\" must be a number above 0", key)));
  }
  return it->get<double>();
}

Result<GpuClass> ParseClass(const json& c, size_t index) {
  const std::string where = fmt::format("classes[{}]", index);
  if (auto ok = OnlyKeys(c, {"id", "gpu_names", "peaks", "limits"}, where); !ok) {
    return tl::unexpected(ok.error());
  }
  GpuClass out;
  auto id = Text(c, "id", where);
  if (!id) return tl::unexpected(id.error());
  out.id = *id;
  const std::string named = fmt::format("class {}", out.id);
  const auto names = c.find("gpu_names");
  if (names == c.end() || !names->is_array() || names->empty()) {
    return tl::unexpected(Bad(named, "\"gpu_names\" must be a list of NVML names"));
  }
  for (const json& n : *names) {
    if (!n.is_string() || n.get_ref<const std::string&>().empty()) {
      return tl::unexpected(Bad(named, "a GPU name must be a non-empty string"));
    }
    out.gpu_names.push_back(n.get<std::string>());
  }
  if (const auto peaks = c.find("peaks"); peaks != c.end()) {
    if (!peaks->is_object()) return tl::unexpected(Bad(named, "\"peaks\" must be an object"));
    for (const auto& [key, value] : peaks->items()) {
      if (key == "source") continue;
      if (key != "bf16_dense_tflops" && key != "hbm_gbs") {
        return tl::unexpected(UnknownKey(fmt::format("active thresholds: {} peaks", named),
                                         SanitizeUtf8(key), 0,
                                         {"bf16_dense_tflops", "hbm_gbs", "source"}));
      }
      auto peak = Positive(*peaks, key.c_str(), named);
      if (!peak) return tl::unexpected(peak.error());
      out.peaks[key] = *peak;
    }
    auto source = Text(*peaks, "source", named + " peaks");
    if (!source) return tl::unexpected(source.error());
    out.peaks_source = *source;
  }
  const auto limits = c.find("limits");
  if (limits == c.end() || !limits->is_array()) {
    return tl::unexpected(Bad(named, "\"limits\" must be a list"));
  }
  std::set<std::string> metrics;
  for (const json& l : *limits) {
    const std::string at = named + " limit";
    if (auto ok = OnlyKeys(l, {"metric", "min", "warn_margin", "source"}, at); !ok) {
      return tl::unexpected(ok.error());
    }
    Limit limit;
    auto metric = Text(l, "metric", at);
    if (!metric) return tl::unexpected(metric.error());
    limit.metric = *metric;
    if (!metrics.insert(limit.metric).second) {
      return tl::unexpected(Bad(named, fmt::format("{} given twice", limit.metric)));
    }
    auto min = Positive(l, "min", at + " " + limit.metric);
    if (!min) return tl::unexpected(min.error());
    limit.min = *min;
    if (l.contains("warn_margin")) {
      if (!l["warn_margin"].is_number() || l["warn_margin"].get<double>() < 1.0) {
        return tl::unexpected(
            Bad(at + " " + limit.metric, "\"warn_margin\" must be a number of 1 or more"));
      }
      limit.warn_margin = l["warn_margin"].get<double>();
    }
    auto source = Text(l, "source", at + " " + limit.metric);
    if (!source) return tl::unexpected(source.error());
    limit.source = *source;
    out.limits.push_back(std::move(limit));
  }
  return out;
}

}  // namespace

Result<ActiveThresholds> ActiveThresholds::Parse(std::string_view text) {
  auto object = ParseJsonObject(text);
  if (!object) return tl::unexpected(Bad("document", object.error().message));
  const json& root = *object;
  if (root.value("schema", "") != "cmax.active-thresholds/v1") {
    return tl::unexpected(Bad("document", "not a cmax.active-thresholds/v1 document"));
  }
  if (auto ok = OnlyKeys(root, {"schema", "classes", "shares_of_peak"}, "document"); !ok) {
    return tl::unexpected(ok.error());
  }
  const auto classes = root.find("classes");
  if (classes == root.end() || !classes->is_array()) {
    return tl::unexpected(Bad("document", "\"classes\" must be a list"));
  }
  ActiveThresholds out;
  std::set<std::string> ids;
  std::set<std::string> names;
  std::set<std::string> peaks;
  for (size_t i = 0; i < classes->size(); ++i) {
    auto c = ParseClass((*classes)[i], i);
    if (!c) return tl::unexpected(c.error());
    if (!ids.insert(c->id).second) {
      return tl::unexpected(Bad("classes", fmt::format("{} given twice", c->id)));
    }
    for (const std::string& name : c->gpu_names) {
      if (!names.insert(name).second) {
        return tl::unexpected(Bad("classes", fmt::format("GPU name {} in two classes", name)));
      }
    }
    for (const auto& [peak, value] : c->peaks) peaks.insert(peak);
    out.classes_.push_back(std::move(*c));
  }
  if (const auto shares = root.find("shares_of_peak"); shares != root.end()) {
    if (!shares->is_array()) {
      return tl::unexpected(Bad("document", "\"shares_of_peak\" must be a list"));
    }
    for (const json& s : *shares) {
      if (auto ok = OnlyKeys(s, {"metric", "peak", "min_share", "source"}, "shares_of_peak"); !ok) {
        return tl::unexpected(ok.error());
      }
      ShareOfPeak share;
      auto metric = Text(s, "metric", "shares_of_peak");
      auto peak = Text(s, "peak", "shares_of_peak");
      auto source = Text(s, "source", "shares_of_peak");
      auto min = Positive(s, "min_share", "shares_of_peak");
      if (!metric) return tl::unexpected(metric.error());
      if (!peak) return tl::unexpected(peak.error());
      if (!source) return tl::unexpected(source.error());
      if (!min) return tl::unexpected(min.error());
      if (*min > 1.0) {
        return tl::unexpected(Bad(*metric, "\"min_share\" must be within (0, 1]"));
      }
      if (!peaks.contains(*peak)) {
        return tl::unexpected(Bad(*metric, fmt::format("no class gives the peak {}", *peak)));
      }
      out.shares_.push_back({*metric, *peak, *min, *source});
    }
  }
  return out;
}

std::string FigureText(double value) {
  std::string out = fmt::format("{:.1f}", value);
  if (out.ends_with(".0")) out.resize(out.size() - 2);
  return out;
}

const ActiveThresholds& ActiveThresholds::Builtin() {
  static const ActiveThresholds kBuiltin = [] {
    auto parsed = Parse(kBuiltinActiveThresholds);
    if (!parsed) std::abort();  // the build's own data: a test parses it
    return *std::move(parsed);
  }();
  return kBuiltin;
}

const GpuClass* ActiveThresholds::ClassOf(std::string_view gpu_name) const {
  std::string_view name = Trim(gpu_name);
  if (name.starts_with("NVIDIA ")) name.remove_prefix(7);
  for (const GpuClass& c : classes_) {
    if (std::ranges::find(c.gpu_names, name) != c.gpu_names.end()) return &c;
  }
  return nullptr;
}

const GpuClass* ActiveThresholds::Find(std::string_view id) const {
  for (const GpuClass& c : classes_) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

std::optional<Threshold> ActiveThresholds::For(const GpuClass& gpu_class,
                                               std::string_view metric) const {
  for (const Limit& l : gpu_class.limits) {
    if (l.metric != metric) continue;
    return Threshold{.min = l.min,
                     .warn_below = l.min * l.warn_margin,
                     .source = l.source,
                     .words = fmt::format("at least {}", FigureText(l.min))};
  }
  for (const ShareOfPeak& s : shares_) {
    if (s.metric != metric) continue;
    const auto peak = gpu_class.peaks.find(s.peak);
    if (peak == gpu_class.peaks.end()) return std::nullopt;
    const double min = peak->second * s.min_share;
    return Threshold{.min = min,
                     .warn_below = min,
                     .source = fmt::format("{}; peak: {}", s.source, gpu_class.peaks_source),
                     .words = fmt::format("at least {} ({} % of the peak {})", FigureText(min),
                                          FigureText(s.min_share * 100), FigureText(peak->second))};
  }
  return std::nullopt;
}

Finding JudgeFigure(const Figure& figure, const GpuClass* gpu_class,
                    const std::optional<Threshold>& threshold) {
  Finding out{.check_id = figure.check_id,
              .observed = fmt::format("{} {}", FigureText(figure.observed), figure.unit)};
  if (gpu_class == nullptr || !threshold) {
    out.status = CheckStatus::kUnknown;
    out.severity = Severity::kLow;
    out.expected = "a threshold for this GPU";
    out.message = gpu_class == nullptr ? fmt::format("{}: {}; no threshold for this GPU model",
                                                     figure.label, out.observed)
                                       : fmt::format("{}: {}; the {} class has no threshold for it",
                                                     figure.label, out.observed, gpu_class->id);
    return out;
  }
  out.expected = fmt::format("{} {} ({})", threshold->words, figure.unit, gpu_class->id);
  // The addresses in the source ("https://... (check_gpu_bw 48 335); peak: https://...").
  for (std::string_view word : SplitFields(threshold->source)) {
    if (word.starts_with("https://")) out.links.emplace_back(word);
  }
  if (figure.observed < threshold->min) {
    out.status = CheckStatus::kFail;
    out.severity = Severity::kHigh;
    out.message = fmt::format("{}: {}, below {} {}", figure.label, out.observed,
                              FigureText(threshold->min), figure.unit);
  } else if (figure.observed < threshold->warn_below) {
    out.status = CheckStatus::kWarn;
    out.severity = Severity::kMedium;
    out.message = fmt::format("{}: {}, within {} % of the limit {} {}", figure.label, out.observed,
                              FigureText((threshold->warn_below / threshold->min - 1) * 100),
                              FigureText(threshold->min), figure.unit);
  } else {
    out.status = CheckStatus::kPass;
    out.message = fmt::format("{}: {}", figure.label, out.observed);
  }
  return out;
}

}  // namespace cmax::active
