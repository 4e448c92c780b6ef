#include "train/train_references.hpp"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>

#include "core/json_read.hpp"
#include "core/keys.hpp"
#include "core/strings.hpp"

namespace cmax::train {

extern const char* const kBuiltinTrainReferences;

namespace {

using nlohmann::json;

Result<void> OnlyKeys(const json& object, const std::vector<std::string_view>& known,
                      std::string_view where) {
  for (const auto& [key, value] : object.items()) {
    if (std::ranges::find(known, key) == known.end()) {
      return tl::unexpected(UnknownKey(where, SanitizeUtf8(key), 0, known));
    }
  }
  return {};
}

// A string field; null and absent read as "" where `optional`.
Result<std::string> FieldText(const json& object, const char* key, std::string_view where,
                              bool optional) {
  const auto it = object.find(key);
  if ((it == object.end() || it->is_null()) && optional) return std::string();
  if (it == object.end() || !it->is_string() ||
      (!optional && it->get_ref<const std::string&>().empty())) {
    return Fail(ErrorCode::kInvalidArgument, "train references: {}: \"{}\" must be a string", where,
                key);
  }
  return it->get<std::string>();
}

std::string Thousands(double value) {
  if (!std::isfinite(value) || std::fabs(value) >= 1e15) return fmt::format("{:.3g}", value);
  const auto whole = static_cast<int64_t>(value);
  if (static_cast<double>(whole) != value) return fmt::format("{:.1f}", value);
  std::string digits = std::to_string(whole);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) {
    digits.insert(static_cast<size_t>(at), ",");
  }
  return digits;
}

}  // namespace

std::string TrainReference::Words() const {
  std::string out = fmt::format("{} tokens/s/GPU: {} on {} {}, {}", Thousands(tokens_per_s_per_gpu),
                                model, gpus, platform, parallelism);
  if (!dtype.empty()) out += ", " + dtype;
  if (!date.empty()) out += ", " + date;
  return out;
}

Result<TrainReferences> TrainReferences::Parse(std::string_view text) {
  // As every file people write is read (the built-in one is such a file too): a repeated key
  // refused, an error that says where.
  auto parsed = ParseJsonObject(text);
  if (!parsed) {
    return Fail(ErrorCode::kInvalidArgument, "train references: {}", parsed.error().message);
  }
  const json& root = *parsed;
  if (TextOf(root, "schema") != "cmax.train-references/v1") {
    return Fail(ErrorCode::kInvalidArgument,
                "train references: not a cmax.train-references/v1 document");
  }
  if (auto ok = OnlyKeys(root, {"schema", "note", "references"}, "train references"); !ok) {
    return tl::unexpected(ok.error());
  }
  const auto list = root.find("references");
  if (list == root.end() || !list->is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "train references: \"references\" must be a list");
  }
  TrainReferences out;
  std::set<std::string> ids;
  size_t index = 0;
  for (const json& item : *list) {
    const std::string where = fmt::format("reference {}", ++index);
    if (!item.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "train references: {}: not an object", where);
    }
    if (auto ok = OnlyKeys(
            item,
            {"id", "model", "platform", "gpus", "parallelism", "dtype", "local_batch_size",
             "seq_len", "tokens_per_s_per_gpu", "mfu_pct", "memory_gib", "date", "source", "notes"},
            "train references: " + where);
        !ok) {
      return tl::unexpected(ok.error());
    }
    TrainReference r;
    for (auto [key, into, optional] : {std::tuple{"id", &r.id, false},
                                       {"model", &r.model, false},
                                       {"platform", &r.platform, false},
                                       {"parallelism", &r.parallelism, false},
                                       {"dtype", &r.dtype, true},
                                       {"date", &r.date, true},
                                       {"source", &r.source, false},
                                       {"notes", &r.notes, true}}) {
      auto value = FieldText(item, key, where, optional);
      if (!value) return tl::unexpected(value.error());
      *into = std::move(*value);
    }
    if (!ids.insert(r.id).second) {
      return Fail(ErrorCode::kInvalidArgument, "train references: \"{}\" appears twice",
                  SanitizeUtf8(r.id));
    }
    if (!r.source.starts_with("https://")) {
      return Fail(ErrorCode::kInvalidArgument,
                  "train references: {}: the source must be an https address", r.id);
    }
    const auto gpus = item.find("gpus");
    const auto tps = item.find("tokens_per_s_per_gpu");
    if (gpus == item.end() || !gpus->is_number_integer() || gpus->get<int64_t>() < 1 ||
        gpus->get<int64_t>() > (1 << 24) || tps == item.end() || !tps->is_number() ||
        !(tps->get<double>() > 0)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "train references: {}: gpus and tokens_per_s_per_gpu must be positive numbers",
                  r.id);
    }
    r.gpus = static_cast<int>(gpus->get<int64_t>());
    r.tokens_per_s_per_gpu = tps->get<double>();
    if (const auto mfu = item.find("mfu_pct"); mfu != item.end() && mfu->is_number()) {
      r.mfu_pct = mfu->get<double>();
    }
    out.references_.push_back(std::move(r));
  }
  return out;
}

const TrainReferences& TrainReferences::Builtin() {
  static const TrainReferences kBuiltin = [] {
    auto parsed = Parse(kBuiltinTrainReferences);
    if (!parsed) std::abort();  // the build's own data: a test parses it
    return *std::move(parsed);
  }();
  return kBuiltin;
}

const TrainReference* TrainReferences::Find(std::string_view id) const {
  for (const TrainReference& r : references_) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

std::vector<const TrainReference*> TrainReferences::Matching(std::string_view filter) const {
  const std::vector<std::string_view> words = SplitFields(filter);
  std::vector<const TrainReference*> matching;
  for (const TrainReference& r : references_) {
    if (std::ranges::all_of(words,
                            [&](std::string_view w) { return r.id.find(w) != std::string::npos; }))
      matching.push_back(&r);
  }
  return matching;
}

std::string TrainReferences::Text(std::string_view filter) const {
  std::string out;
  for (const TrainReference* r : Matching(filter)) {
    out += r->id + "\n  " + r->Words() + "\n  " + r->source + "\n";
  }
  return out;
}

nlohmann::json TrainReferences::Json(std::string_view filter) const {
  nlohmann::json list = nlohmann::json::array();
  for (const TrainReference* r : Matching(filter)) {
    list.push_back({{"id", r->id},
                    {"model", r->model},
                    {"platform", r->platform},
                    {"gpus", r->gpus},
                    {"parallelism", r->parallelism},
                    {"dtype", r->dtype},
                    {"tokens_per_s_per_gpu", r->tokens_per_s_per_gpu},
                    {"date", r->date},
                    {"source", r->source}});
  }
  return list;
}

Finding ReferenceFinding(const std::string& label, const ReferenceShare& s) {
  Finding f{
      .check_id = "train.reference",
      .observed = fmt::format("{} tokens/s/GPU, {:.0f}% of {}", Thousands(std::round(s.measured)),
                              100 * s.share, s.reference->id),
      .expected = fmt::format("90% or more of {}", s.reference->Words()),
      .links = {s.reference->source}};
  if (s.share >= 0.9) {
    f.status = CheckStatus::kPass;
    f.message = fmt::format("{}: within 10% of the published figure or above it", label);
  } else {
    f.status = s.share >= 0.7 ? CheckStatus::kWarn : CheckStatus::kFail;
    f.severity = s.share >= 0.7 ? Severity::kMedium : Severity::kHigh;
    f.message = fmt::format("{}: {:.0f}% of the published throughput", label, 100 * s.share);
    f.remediation =
        "Run the reference's own configuration (model, parallelism, batch, dtype, torch.compile) "
        "to tell the platform from the job; then the profiler's traces (cmax train trace) say "
        "whether communication, idle time or a straggler costs the rest";
  }
  return f;
}

}  // namespace cmax::train
