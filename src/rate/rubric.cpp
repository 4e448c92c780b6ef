#include "rate/rubric.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "audit/catalogue.hpp"
#include "core/json_read.hpp"
#include "core/sha256.hpp"
#include "core/strings.hpp"
#include "rate/attestation.hpp"

namespace cmax::rate {

extern const char* const kBuiltinRubric;

namespace {

using nlohmann::json;

Result<void> OnlyKeys(const json& object, std::initializer_list<std::string_view> allowed,
                      std::string_view where) {
  for (const auto& [key, value] : object.items()) {
    if (std::ranges::find(allowed, key) == allowed.end()) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: {}: unknown key \"{}\"", where,
                  SanitizeUtf8(key));
    }
  }
  return {};
}

Result<std::string> Text(const json& object, const char* key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return Fail(ErrorCode::kInvalidArgument, "rubric: {}: \"{}\" must be a non-empty string", where,
                key);
  }
  // Names and titles are printed on terminals and in every report, one line each.
  const std::string& text = it->get_ref<const std::string&>();
  if (!IsOneLine(text, text.size())) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: {}: \"{}\" holds a line break, a control character or bytes that are not "
                "UTF-8",
                where, key);
  }
  return text;
}

Result<double> Number(const json& object, const char* key, std::string_view where, double low,
                      double high) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
      it->get<double>() < low || it->get<double>() > high) {
    return Fail(ErrorCode::kInvalidArgument, "rubric: {}: \"{}\" must be a number from {} to {}",
                where, key, low, high);
  }
  return it->get<double>();
}

// SLA templates: [{"name", "unit": node|rack, "uptime_pct", "credits": [[below_pct,
// credit_pct], ...]}], each checked as the attestation's own terms are (rate/sla.hpp).
Result<std::vector<SlaTerms>> ParseSlaTemplates(const json& templates) {
  if (!templates.is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "rubric: \"sla_templates\" must be an array");
  }
  std::vector<SlaTerms> out;
  for (const json& entry : templates) {
    if (!entry.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: an SLA template must be an object");
    }
    if (auto ok = OnlyKeys(entry, {"name", "unit", "uptime_pct", "credits"}, "sla_templates");
        !ok) {
      return tl::unexpected(ok.error());
    }
    SlaTerms terms;
    auto name = Text(entry, "name", "sla_templates");
    if (!name) return tl::unexpected(name.error());
    terms.name = *name;
    const std::string where = "sla_templates " + SanitizeUtf8(terms.name);
    auto unit_text = Text(entry, "unit", where);
    if (!unit_text) return tl::unexpected(unit_text.error());
    auto unit = ParseSlaUnit(*unit_text);
    if (!unit)
      return Fail(ErrorCode::kInvalidArgument, "rubric: {}: {}", where, unit.error().message);
    terms.unit = *unit;
    auto uptime = Number(entry, "uptime_pct", where, 0, 100);
    if (!uptime) return tl::unexpected(uptime.error());
    terms.uptime_pct = *uptime;
    const auto credits = entry.find("credits");
    if (credits == entry.end() || !credits->is_array()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: {}: \"credits\" must list [below_pct, credit_pct] bands", where);
    }
    for (const json& band : *credits) {
      if (!band.is_array() || band.size() != 2 || !band[0].is_number() || !band[1].is_number()) {
        return Fail(ErrorCode::kInvalidArgument,
                    "rubric: {}: a credit band is [below_pct, credit_pct]", where);
      }
      terms.credits.emplace_back(band[0].get<double>(), band[1].get<double>());
    }
    if (auto ok = ValidateSlaTerms(terms); !ok) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: {}: {}", where, ok.error().message);
    }
    if (std::ranges::any_of(out, [&](const SlaTerms& t) { return t.name == terms.name; })) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: SLA template {} is given twice",
                  SanitizeUtf8(terms.name));
    }
    out.push_back(std::move(terms));
  }
  return out;
}

// A metric a cmax phase records, named under `key`.
Result<std::string> MetricName(const json& from, const char* key, const std::string& where) {
  auto metric = Text(from, key, where);
  if (!metric) return metric;
  if (FindKnownMetric(*metric) == nullptr) {
    std::vector<std::string> names;
    for (const KnownMetric& known : KnownMetrics()) names.push_back(known.name);
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: {}: no cmax phase records the metric \"{}\" (known: {})", where,
                SanitizeUtf8(*metric), Join(names, ", "));
  }
  return metric;
}

Result<ItemSource> ParseSource(const json& from, const std::string& where) {
  if (!from.is_object() || from.size() == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: {}: \"from\" must name audit_profile, audit_checks, metric or "
                "attestation",
                where);
  }
  if (auto ok = OnlyKeys(
          from, {"audit_profile", "audit_checks", "metric", "aggregate", "at_least", "attestation"},
          where);
      !ok) {
    return tl::unexpected(ok.error());
  }
  const int kinds = static_cast<int>(from.contains("audit_profile")) +
                    static_cast<int>(from.contains("audit_checks")) +
                    static_cast<int>(from.contains("metric")) +
                    static_cast<int>(from.contains("attestation"));
  if (kinds != 1) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: {}: \"from\" must name exactly one of audit_profile, audit_checks, "
                "metric or attestation",
                where);
  }
  ItemSource source;
  const audit::AuditCatalogue& catalogue = audit::AuditCatalogue::Builtin();
  if (from.contains("audit_profile")) {
    auto profile = Text(from, "audit_profile", where);
    if (!profile) return tl::unexpected(profile.error());
    auto checks = catalogue.Select(*profile);
    if (!checks || profile->empty()) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: {}: no audit profile \"{}\"", where,
                  SanitizeUtf8(*profile));
    }
    source.audit_profile = *profile;
    for (const audit::CheckSpec* check : *checks) source.audit_checks.push_back(check->id);
  } else if (from.contains("audit_checks")) {
    const json& ids = from["audit_checks"];
    if (!ids.is_array() || ids.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: {}: \"audit_checks\" must be a list of check ids", where);
    }
    for (const json& id : ids) {
      const bool known =
          id.is_string() && std::ranges::any_of(catalogue.Checks(), [&](const auto& check) {
            return check.id == id.get_ref<const std::string&>();
          });
      if (!known) {
        return Fail(ErrorCode::kInvalidArgument, "rubric: {}: no audit check {}", where,
                    SanitizeUtf8(id.dump()));
      }
      source.audit_checks.push_back(id.get<std::string>());
    }
  } else if (from.contains("metric")) {
    auto metric = MetricName(from, "metric", where);
    if (!metric) return tl::unexpected(metric.error());
    source.metric = *metric;
    if (from.contains("aggregate")) {
      auto aggregate = Text(from, "aggregate", where);
      if (!aggregate || (*aggregate != "max" && *aggregate != "min" && *aggregate != "mean")) {
        return Fail(ErrorCode::kInvalidArgument,
                    "rubric: {}: \"aggregate\" must be max, min or mean", where);
      }
      source.aggregate = *aggregate;
    }
    if (from.contains("at_least")) {
      auto bound = MetricName(from, "at_least", where);
      if (!bound) return tl::unexpected(bound.error());
      source.at_least = *bound;
    }
  } else {
    auto fact = Text(from, "attestation", where);
    if (!fact) return tl::unexpected(fact.error());
    if (std::ranges::find(AttestationFacts(), *fact) == AttestationFacts().end()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: {}: cmax derives no attestation fact \"{}\" (known: {})", where,
                  SanitizeUtf8(*fact), Join(AttestationFacts(), ", "));
    }
    source.attestation = *fact;
  }
  for (const char* key : {"aggregate", "at_least"}) {
    if (from.contains(key) && source.metric.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: {}: \"{}\" goes with a metric", where, key);
    }
  }
  return source;
}

Result<ItemScoring> ParseScoring(const json& score, const ItemSource& source,
                                 const std::string& where) {
  if (!score.is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "rubric: {}: \"score\" must be an object", where);
  }
  if (auto ok = OnlyKeys(score, {"kind", "better", "bands", "otherwise", "unit"}, where); !ok) {
    return tl::unexpected(ok.error());
  }
  auto kind = Text(score, "kind", where);
  if (!kind) return tl::unexpected(kind.error());
  ItemScoring scoring;
  if (*kind == "audit") {
    scoring.kind = ItemScoring::Kind::kAudit;
    if (source.audit_checks.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: {}: an audit score needs audit_profile or audit_checks", where);
    }
  } else if (*kind == "pass_fail") {
    scoring.kind = ItemScoring::Kind::kPassFail;
    if (source.attestation.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: {}: a pass_fail score reads a yes/no attestation fact", where);
    }
  } else if (*kind == "bands") {
    scoring.kind = ItemScoring::Kind::kBands;
    if (!source.audit_checks.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: {}: bands score a number: a metric or an attestation fact", where);
    }
    auto better = Text(score, "better", where);
    if (!better || (*better != "lower" && *better != "higher")) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: {}: \"better\" must be lower or higher",
                  where);
    }
    scoring.lower_is_better = *better == "lower";
    const auto bands = score.find("bands");
    if (bands == score.end() || !bands->is_array() || bands->empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: {}: \"bands\" must be a list of [limit, score] pairs", where);
    }
    for (const json& band : *bands) {
      const bool pair = band.is_array() && band.size() == 2 && band[0].is_number() &&
                        band[1].is_number() && std::isfinite(band[0].get<double>()) &&
                        band[1].get<double>() >= 0 && band[1].get<double>() <= 1;
      if (!pair) {
        return Fail(ErrorCode::kInvalidArgument,
                    "rubric: {}: each band is [limit, score] with a score from 0 to 1", where);
      }
      const double limit = band[0].get<double>();
      if (!scoring.bands.empty() &&
          (scoring.lower_is_better ? limit <= scoring.bands.back().first
                                   : limit >= scoring.bands.back().first)) {
        return Fail(ErrorCode::kInvalidArgument,
                    "rubric: {}: band limits must run from the best to the worst", where);
      }
      scoring.bands.emplace_back(limit, band[1].get<double>());
    }
    if (score.contains("otherwise")) {
      auto otherwise = Number(score, "otherwise", where, 0, 1);
      if (!otherwise) return tl::unexpected(otherwise.error());
      scoring.otherwise = *otherwise;
    }
  } else {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: {}: \"kind\" must be audit, pass_fail or bands, not \"{}\"", where,
                SanitizeUtf8(*kind));
  }
  if (score.contains("unit")) {
    auto unit = Text(score, "unit", where);
    if (!unit) return tl::unexpected(unit.error());
    scoring.unit = *unit;
  }
  // Bands in another unit than the metric's would score it a thousand times off (ms against s).
  if (const KnownMetric* metric = FindKnownMetric(source.metric);
      metric != nullptr && scoring.kind == ItemScoring::Kind::kBands &&
      scoring.unit != metric->unit) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: {}: {} is recorded in {}, so its bands need \"unit\": \"{}\"", where,
                metric->name, metric->unit, metric->unit);
  }
  return scoring;
}

}  // namespace

const std::vector<KnownMetric>& KnownMetrics() {
  // As the phases record them (reliability/timeline, net/nccl_analyze_run, net/nccl_sweep,
  // net/nccl_recipe, train/train_log_run, endpoint/results, active/schedule):
  // name and unit.
  static const std::vector<KnownMetric> kMetrics = {
      {"reliability.detect", "s"},
      {"reliability.out_of_service", "s"},
      {"reliability.replaced", "s"},
      {"reliability.back_in_service", "s"},
      {"reliability.watched", "s"},
      {"nccl.worst_fall_pct", "%"},
      {"nccl.share_of_platform", "ratio"},
      {"nccl.busbw_peak", "GB/s"},
      {"nccl.busbw_largest", "GB/s"},
      {"nccl.slow_nodes", "nodes"},
      {"nccl.recipe_changes", "changes"},
      {"train.tokens_per_s_per_gpu", "tokens/s"},
      {"train.tflops_per_gpu", "TFLOPS"},
      {"train.mfu_pct", "%"},
      {"train.peak_memory_gib", "GiB"},
      {"train.step_time_s", "s"},
      {"train.jitter_pct", "%"},
      {"train.compute_pct", "%"},
      {"train.exposed_comm_pct", "%"},
      {"train.idle_pct", "%"},
      {"train.comm_overlap_pct", "%"},
      {"train.collective_busbw_gbs", "GB/s"},
      {"train.share_of_reference", "ratio"},
      {"endpoint.error_ratio", "ratio"},
      {"endpoint.cache_hit_of_ideal", "ratio"},
      {"endpoint.cache_hit_rate", "ratio"},
      {"endpoint.ttft_p50", "ms"},
      {"endpoint.ttft_p99", "ms"},
      {"endpoint.tpot_p50", "ms"},
      {"endpoint.tpot_p99", "ms"},
      {"endpoint.itl_p99", "ms"},
      {"endpoint.e2e_p50", "ms"},
      {"endpoint.e2e_p99", "ms"},
      {"endpoint.request_throughput", "req/s"},
      {"endpoint.output_throughput", "tok/s"},
      {"endpoint.total_token_throughput", "tok/s"},
      {"endpoint.goodput", "req/s"},
      {"endpoint.cost", "USD"},
      {"active.fleet_checked_share", "ratio"},
      {"active.fleet_pass_share", "ratio"},
      {"active.fleet_oldest_check_days", "days"},
      {"active.fleet_nodes", "nodes"},
  };
  return kMetrics;
}

const KnownMetric* FindKnownMetric(std::string_view name) {
  const auto& known = KnownMetrics();
  const auto it = std::ranges::find(known, name, &KnownMetric::name);
  return it == known.end() ? nullptr : &*it;
}

int Rubric::Rank(std::string_view tier) const {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (tiers_[i].first == tier) return static_cast<int>(i);
  }
  if (tier == below_) return static_cast<int>(tiers_.size());
  return static_cast<int>(tiers_.size()) + 1;  // Untestable
}

Rubric Rubric::WithTimesScaled(double factor) const {
  Rubric out = *this;
  for (RubricItem& item : out.items_) {
    if (item.scoring.kind != ItemScoring::Kind::kBands || item.scoring.unit != "s") continue;
    for (auto& [limit, score] : item.scoring.bands) limit *= factor;
  }
  out.name_ += fmt::format(" (every time band x{:.4g}, for a lab)", factor);
  out.time_scale_ *= factor;
  return out;
}

const std::string& Rubric::BandOf(double score) const {
  for (const auto& [name, min] : tiers_) {
    if (score >= min) return name;
  }
  return below_;
}

Result<Rubric> Rubric::Parse(std::string_view text) {
  const auto document = ParseJsonObject(text);
  if (!document) return Wrap(document.error(), "rubric");
  const json& doc = *document;
  if (auto ok = OnlyKeys(doc,
                         {"schema", "name", "note", "tiers", "below", "untestable", "categories",
                          "items", "goodput", "sla_templates", "stale_after_days"},
                         "top level");
      !ok) {
    return tl::unexpected(ok.error());
  }
  if (doc.value("schema", json()) != "cmax.rubric/v1") {
    return Fail(ErrorCode::kInvalidArgument, "rubric: \"schema\" must be \"cmax.rubric/v1\"");
  }
  Rubric rubric;
  rubric.sha256_ = Sha256Hex(text);
  auto name = Text(doc, "name", "top level");
  if (!name) return tl::unexpected(name.error());
  rubric.name_ = *name;

  const auto tiers = doc.find("tiers");
  if (tiers == doc.end() || !tiers->is_array() || tiers->empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: \"tiers\" must list the tiers, best first, each with its minimum score");
  }
  std::set<std::string> tier_names;
  for (const json& tier : *tiers) {
    if (!tier.is_object())
      return Fail(ErrorCode::kInvalidArgument, "rubric: a tier must be an object");
    if (auto ok = OnlyKeys(tier, {"name", "min"}, "tiers"); !ok) return tl::unexpected(ok.error());
    auto tier_name = Text(tier, "name", "tiers");
    if (!tier_name) return tl::unexpected(tier_name.error());
    auto min = Number(tier, "min", "tier " + *tier_name, 0, 100);
    if (!min) return tl::unexpected(min.error());
    if (!rubric.tiers_.empty() && *min >= rubric.tiers_.back().second) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: tier {}: minimums must fall from the best tier to the last",
                  SanitizeUtf8(*tier_name));
    }
    if (!tier_names.insert(*tier_name).second) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: tier {} is named twice",
                  SanitizeUtf8(*tier_name));
    }
    rubric.tiers_.emplace_back(*tier_name, *min);
  }
  auto below = Text(doc, "below", "top level");
  if (!below) return tl::unexpected(below.error());
  rubric.below_ = *below;
  const auto untestable = doc.find("untestable");
  if (untestable == doc.end() || !untestable->is_object()) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: \"untestable\" must give a name and below_confidence");
  }
  if (auto ok = OnlyKeys(*untestable, {"name", "below_confidence"}, "untestable"); !ok) {
    return tl::unexpected(ok.error());
  }
  auto untestable_name = Text(*untestable, "name", "untestable");
  if (!untestable_name) return tl::unexpected(untestable_name.error());
  auto threshold = Number(*untestable, "below_confidence", "untestable", 0, 1);
  if (!threshold) return tl::unexpected(threshold.error());
  rubric.untestable_ = *untestable_name;
  rubric.untestable_below_ = *threshold;
  if (doc.contains("stale_after_days")) {
    auto days = Number(doc, "stale_after_days", "top level", 1, 3650);
    if (!days) return tl::unexpected(days.error());
    rubric.stale_after_days_ = *days;
  }
  if (!tier_names.insert(rubric.below_).second || !tier_names.insert(rubric.untestable_).second) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: \"below\" and \"untestable\" must be tiers of their own");
  }

  const auto categories = doc.find("categories");
  if (categories == doc.end() || !categories->is_array() || categories->empty()) {
    return Fail(ErrorCode::kInvalidArgument, "rubric: \"categories\" must list the categories");
  }
  // Ids seen, and each category's items' weight: sets and maps, not a scan of what came before
  // for each entry (8,000 categories and items took 21 s).
  std::set<std::string> category_ids;
  std::set<std::string> item_ids;
  std::map<std::string, double> item_weights;  // by category
  for (const json& category : *categories) {
    if (!category.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: a category must be an object");
    }
    if (auto ok = OnlyKeys(category, {"id", "title", "weight"}, "categories"); !ok) {
      return tl::unexpected(ok.error());
    }
    auto id = Text(category, "id", "categories");
    if (!id) return tl::unexpected(id.error());
    auto title = Text(category, "title", "category " + *id);
    if (!title) return tl::unexpected(title.error());
    auto weight = Number(category, "weight", "category " + *id, 0, 1000);
    if (!weight) return tl::unexpected(weight.error());
    if (!category_ids.insert(*id).second) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: category {} is listed twice",
                  SanitizeUtf8(*id));
    }
    rubric.categories_.push_back({*id, *title, *weight});
  }

  const auto items = doc.find("items");
  if (items == doc.end() || !items->is_array() || items->empty()) {
    return Fail(ErrorCode::kInvalidArgument, "rubric: \"items\" must list the items");
  }
  for (const json& entry : *items) {
    if (!entry.is_object())
      return Fail(ErrorCode::kInvalidArgument, "rubric: an item must be an object");
    auto id = Text(entry, "id", "items");
    if (!id) return tl::unexpected(id.error());
    const std::string where = "item " + SanitizeUtf8(*id);
    if (auto ok =
            OnlyKeys(entry, {"id", "category", "title", "weight", "from", "score", "gate"}, where);
        !ok) {
      return tl::unexpected(ok.error());
    }
    if (!item_ids.insert(*id).second) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: {} is listed twice", where);
    }
    RubricItem item;
    item.id = *id;
    auto category = Text(entry, "category", where);
    if (!category) return tl::unexpected(category.error());
    if (!category_ids.contains(*category)) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: {}: no category \"{}\"", where,
                  SanitizeUtf8(*category));
    }
    item.category = *category;
    auto title = Text(entry, "title", where);
    if (!title) return tl::unexpected(title.error());
    item.title = *title;
    auto weight = Number(entry, "weight", where, 0, 1000);
    if (!weight) return tl::unexpected(weight.error());
    item.weight = *weight;
    item_weights[item.category] += item.weight;
    auto source = ParseSource(entry.value("from", json()), where);
    if (!source) return tl::unexpected(source.error());
    item.source = std::move(*source);
    auto scoring = ParseScoring(entry.value("score", json()), item.source, where);
    if (!scoring) return tl::unexpected(scoring.error());
    item.scoring = std::move(*scoring);
    if (entry.contains("gate")) {
      const json& gate = entry["gate"];
      if (!gate.is_object()) {
        return Fail(ErrorCode::kInvalidArgument, "rubric: {}: \"gate\" must be an object", where);
      }
      if (auto ok = OnlyKeys(gate, {"cap", "why"}, where); !ok) return tl::unexpected(ok.error());
      auto cap = Text(gate, "cap", where);
      if (!cap) return tl::unexpected(cap.error());
      if (!tier_names.contains(*cap)) {
        return Fail(ErrorCode::kInvalidArgument, "rubric: {}: the gate caps at no tier \"{}\"",
                    where, SanitizeUtf8(*cap));
      }
      auto why = Text(gate, "why", where);
      if (!why) return tl::unexpected(why.error());
      item.gate_cap = *cap;
      item.gate_why = *why;
    }
    rubric.items_.push_back(std::move(item));
  }
  if (const auto goodput = doc.find("goodput"); goodput != doc.end()) {
    if (!goodput->is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: \"goodput\" must be an object");
    }
    GoodputAssumptions g;
    const std::pair<const char*, double*> fields[] = {
        {"job_gpus", &g.job_gpus},
        {"contract_hours", &g.contract_hours},
        {"checkpoint_interval_h", &g.checkpoint_interval_h},
        {"job_init_h", &g.job_init_h},
        {"failover_h", &g.failover_h},
        {"blast_radius_gpus", &g.blast_radius_gpus},
        {"mtbf_gpu_hours", &g.mtbf_gpu_hours},
        {"detect_h", &g.detect_h},
        {"repair_h", &g.repair_h}};
    for (auto entry = goodput->begin(); entry != goodput->end(); ++entry) {
      const std::string& key = entry.key();
      const auto* field =
          std::ranges::find_if(fields, [&](const auto& f) { return key == f.first; });
      if (field == std::end(fields)) {
        return Fail(ErrorCode::kInvalidArgument, "rubric: goodput: unknown key \"{}\"",
                    SanitizeUtf8(key));
      }
      auto number = Number(*goodput, field->first, "goodput", 0, 1e9);
      if (!number) return tl::unexpected(number.error());
      *field->second = *number;
    }
    if (g.job_gpus <= 0 || g.contract_hours <= 0 || g.mtbf_gpu_hours <= 0) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: goodput: job_gpus, contract_hours and mtbf_gpu_hours must be above 0");
    }
    // GPUs come whole, and a GPU that fails more than once an hour is no fleet to price: a
    // 1e-300 MTBF made every cost infinite.
    if (g.job_gpus != std::floor(g.job_gpus) ||
        g.blast_radius_gpus != std::floor(g.blast_radius_gpus)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: goodput: job_gpus and blast_radius_gpus are whole GPUs");
    }
    if (g.mtbf_gpu_hours < 1) {
      return Fail(
          ErrorCode::kInvalidArgument,
          "rubric: goodput: mtbf_gpu_hours must be at least 1 (GPU-hours between failures)");
    }
    rubric.goodput_ = g;
  }
  if (const auto templates = doc.find("sla_templates"); templates != doc.end()) {
    auto parsed = ParseSlaTemplates(*templates);
    if (!parsed) return tl::unexpected(parsed.error());
    rubric.sla_templates_ = std::move(*parsed);
  }
  // A weight of 0 leaves a category or an item out; all of them at 0 leave nothing to score.
  double category_weights = 0;
  for (const RubricCategory& category : rubric.categories_) {
    const auto weighed = item_weights.find(category.id);
    if (weighed == item_weights.end()) {
      return Fail(ErrorCode::kInvalidArgument, "rubric: category {} has no item",
                  SanitizeUtf8(category.id));
    }
    if (category.weight > 0 && weighed->second <= 0) {
      return Fail(ErrorCode::kInvalidArgument,
                  "rubric: category {} weighs {} but every item of it weighs 0: nothing in it "
                  "could be scored",
                  SanitizeUtf8(category.id), category.weight);
    }
    category_weights += category.weight;
  }
  if (category_weights <= 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "rubric: every category weighs 0: nothing could be scored");
  }
  return rubric;
}

const Rubric& Rubric::Builtin() {
  static const Rubric kRubric = [] {
    auto parsed = Parse(kBuiltinRubric);
    if (!parsed) {
      fmt::print(stderr, "cmax: the built-in rubric is broken: {}\n", parsed.error().message);
      std::abort();
    }
    return std::move(*parsed);
  }();
  return kRubric;
}

}  // namespace cmax::rate
