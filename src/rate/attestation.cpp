#include "rate/attestation.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>
#include <yaml-cpp/yaml.h>

#include "core/sha256.hpp"
#include "core/strings.hpp"
#include "core/yaml_document.hpp"

namespace cmax::rate {
namespace {

using nlohmann::json;

constexpr auto kDay = std::chrono::hours(24);

int LineOf(const YAML::Node& node) {
  return node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
}

Result<void> OnlyKeys(const YAML::Node& map, std::initializer_list<std::string_view> known,
                      std::string_view where) {
  if (!map.IsMap()) {
    return Fail(ErrorCode::kInvalidArgument, "attestation line {}: {} must be a map", LineOf(map),
                where);
  }
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    if (std::ranges::find(known, key) == known.end()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "attestation line {}: unknown key \"{}\" in {} (known: {})", LineOf(it->first),
                  SanitizeUtf8(key), where,
                  Join(std::vector<std::string>(known.begin(), known.end()), ", "));
    }
    // YAML reads the first of two equal keys: a file stating two prices would be priced at one.
    if (!seen.insert(key).second) {
      return Fail(ErrorCode::kInvalidArgument, "attestation line {}: \"{}\" appears twice in {}",
                  LineOf(it->first), SanitizeUtf8(key), where);
    }
  }
  return {};
}

// A date "YYYY-MM-DD"; nullopt when the key is absent or null ("none").
Result<std::optional<WallTime>> Date(const YAML::Node& map, const char* key) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return std::optional<WallTime>();
  const std::string text = node.IsScalar() ? node.Scalar() : std::string();
  auto time = text.size() == 10 ? ParseIso8601(text + "T00:00:00Z")
                                : Result<WallTime>(Fail(ErrorCode::kInvalidArgument, ""));
  if (!time) {
    return Fail(ErrorCode::kInvalidArgument, "attestation line {}: {} must be a date YYYY-MM-DD",
                LineOf(node), key);
  }
  return std::optional<WallTime>(*time);
}

Result<std::optional<bool>> YesNo(const YAML::Node& map, const char* key) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return std::optional<bool>();
  try {
    return std::optional<bool>(node.as<bool>());
  } catch (const YAML::Exception&) {
    return Fail(ErrorCode::kInvalidArgument, "attestation line {}: {} must be true or false",
                LineOf(node), key);
  }
}

// The most an amount may be: a percentage's 100; a price's a million dollars (per GPU-hour, per
// GB), far above any offer, so that a slip such as 1e308 is refused rather than carried into
// credits and costs as infinities.
constexpr double kMaxPct = 100;
constexpr double kMaxUsd = 1e6;

Result<std::optional<double>> Amount(const YAML::Node& map, const char* key, double max) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return std::optional<double>();
  double value = std::nan("");
  try {
    value = node.as<double>();
  } catch (const YAML::Exception&) {
  }
  if (!std::isfinite(value) || value < 0 || value > max) {
    return Fail(ErrorCode::kInvalidArgument,
                "attestation line {}: {} must be a number from 0 to {}", LineOf(node), key, max);
  }
  return std::optional<double>(value);
}

// The SLA's terms: a template of the rubric's by name, or written out (unit, uptime_pct and
// credit bands, each {below_pct, credit_pct}); never both.
Result<void> SlaTermsOf(const YAML::Node& sla, Attestation& out) {
  const YAML::Node name = sla["template"];
  const bool written = sla["unit"] || sla["uptime_pct"] || sla["credits"];
  if (name && written) {
    return Fail(ErrorCode::kInvalidArgument,
                "attestation line {}: sla names a template and writes out terms; give one",
                LineOf(name));
  }
  if (name) {
    if (!name.IsScalar() || name.Scalar().empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "attestation line {}: sla template must be a name (e.g. gold)", LineOf(name));
    }
    out.sla_template = SanitizeUtf8(name.Scalar());
    return {};
  }
  if (!written) return {};
  SlaTerms terms;
  terms.name = "attested";
  const YAML::Node unit = sla["unit"];
  auto parsed_unit = ParseSlaUnit(unit && unit.IsScalar() ? unit.Scalar() : "");
  if (!parsed_unit) {
    return Fail(ErrorCode::kInvalidArgument, "attestation line {}: sla {}", LineOf(sla),
                parsed_unit.error().message);
  }
  terms.unit = *parsed_unit;
  auto uptime = Amount(sla, "uptime_pct", kMaxPct);
  if (!uptime) return tl::unexpected(uptime.error());
  if (!*uptime) {
    return Fail(ErrorCode::kInvalidArgument, "attestation line {}: sla uptime_pct is missing",
                LineOf(sla));
  }
  terms.uptime_pct = **uptime;
  const YAML::Node credits = sla["credits"];
  if (!credits || !credits.IsSequence()) {
    return Fail(ErrorCode::kInvalidArgument,
                "attestation line {}: sla credits must list {{below_pct, credit_pct}} bands",
                LineOf(sla));
  }
  for (const YAML::Node& band : credits) {
    if (auto ok = OnlyKeys(band, {"below_pct", "credit_pct"}, "a credit band"); !ok) return ok;
    auto below = Amount(band, "below_pct", kMaxPct);
    if (!below) return tl::unexpected(below.error());
    auto credit = Amount(band, "credit_pct", kMaxPct);
    if (!credit) return tl::unexpected(credit.error());
    if (!*below || !*credit) {
      return Fail(ErrorCode::kInvalidArgument,
                  "attestation line {}: a credit band needs below_pct and credit_pct",
                  LineOf(band));
    }
    terms.credits.emplace_back(**below, **credit);
  }
  if (auto ok = ValidateSlaTerms(terms); !ok) {
    return Fail(ErrorCode::kInvalidArgument, "attestation line {}: sla {}", LineOf(sla),
                ok.error().message);
  }
  out.sla_terms = std::move(terms);
  return {};
}

}  // namespace

const std::vector<std::string>& AttestationFacts() {
  static const std::vector<std::string> kFacts = {"security.soc2_or_iso27001",
                                                  "security.pentest_covers_fabric",
                                                  "reliability.sla_partial_failures",
                                                  "partnerships.nvidia_ncp",
                                                  "isolation.nvlink_domain_exclusive",
                                                  "isolation.pcie_isolation",
                                                  "isolation.ufm_secured",
                                                  "isolation.ib_sm_key",
                                                  "isolation.ib_sa_key",
                                                  "pricing.published",
                                                  "pricing.gpu_hour_usd",
                                                  "pricing.egress_gb_usd",
                                                  "availability.delivery_late_days"};
  return kFacts;
}

Result<Attestation> ParseAttestation(std::string_view yaml, WallTime now) {
  YAML::Node root;
  try {
    auto one = LoadOneYamlDocument(yaml, "attestation");
    if (!one) return tl::unexpected(one.error());
    root = *one;
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "attestation is not YAML: {}", e.what());
  }
  if (!root.IsMap()) return Fail(ErrorCode::kInvalidArgument, "attestation: not a map");
  Attestation out;
  out.sha256 = Sha256Hex(yaml);
  out.yaml = std::string(yaml);
  try {
    if (auto ok = OnlyKeys(root,
                           {"schema", "provider", "source", "date", "security", "isolation", "sla",
                            "pricing", "delivery", "partnerships"},
                           "the file");
        !ok) {
      return tl::unexpected(ok.error());
    }
    if (!root["schema"] || !root["schema"].IsScalar() ||
        root["schema"].Scalar() != "cmax.attestation/v1") {
      return Fail(ErrorCode::kInvalidArgument, "attestation: schema must be cmax.attestation/v1");
    }
    for (const char* key : {"provider", "source"}) {
      if (!root[key] || !root[key].IsScalar() || root[key].Scalar().empty()) {
        return Fail(ErrorCode::kInvalidArgument, "attestation: {} must say {}", key,
                    std::string_view(key) == "provider" ? "whose it is" : "who attests and how");
      }
    }
    // Both are one line in every report. The same names `--provider` takes: the provider is
    // recorded with runs and shown in tables.
    const std::string& provider = root["provider"].Scalar();
    if (!IsOneLine(provider, 128)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "attestation line {}: provider must be 1 to 128 printable characters on one line",
                  LineOf(root["provider"]));
    }
    out.provider = provider;
    // A YAML block scalar would break the text's lines; a folded one (`source: >`) ends in one
    // line break, which is not a second line.
    const std::string source(Trim(root["source"].Scalar()));
    if (!IsOneLine(source, 1000)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "attestation line {}: source must be 1 to 1000 printable characters on one line",
                  LineOf(root["source"]));
    }
    out.source = source;
    auto date = Date(root, "date");
    if (!date) return tl::unexpected(date.error());
    if (!*date)
      return Fail(ErrorCode::kInvalidArgument, "attestation: date (YYYY-MM-DD) is missing");
    out.date = **date;
    if (out.date > now + kDay) {
      return Fail(ErrorCode::kInvalidArgument, "attestation: its date {} is in the future",
                  FormatIso8601(out.date).substr(0, 10));
    }
    if (now - out.date > 365 * kDay) {
      out.notes.push_back(fmt::format("the attestation is dated {}, over a year ago: stale",
                                      FormatIso8601(out.date).substr(0, 10)));
    }

    if (const YAML::Node security = root["security"]) {
      if (auto ok = OnlyKeys(security,
                             {"soc2_type2_report", "iso27001_certificate", "pentest_covers_fabric"},
                             "security");
          !ok) {
        return tl::unexpected(ok.error());
      }
      auto soc2 = Date(security, "soc2_type2_report");
      if (!soc2) return tl::unexpected(soc2.error());
      auto iso = Date(security, "iso27001_certificate");
      if (!iso) return tl::unexpected(iso.error());
      for (const auto& [key, report] :
           {std::pair{"soc2_type2_report", *soc2}, std::pair{"iso27001_certificate", *iso}}) {
        if (report && *report > now + kDay) {
          return Fail(ErrorCode::kInvalidArgument, "attestation line {}: {} is in the future",
                      LineOf(security[key]), key);
        }
      }
      // Current today, not only when attested: an old attestation cannot keep a lapsed report
      // current.
      if (security["soc2_type2_report"] || security["iso27001_certificate"]) {
        const bool soc2_current = *soc2 && now - **soc2 <= 456 * kDay;  // 15 months
        const bool iso_current = *iso && now - **iso <= 3 * 365 * kDay;
        out.facts["security.soc2_or_iso27001"] = soc2_current || iso_current;
      }
      auto pentest = YesNo(security, "pentest_covers_fabric");
      if (!pentest) return tl::unexpected(pentest.error());
      if (*pentest) out.facts["security.pentest_covers_fabric"] = **pentest;
    }
    const auto flags = [&](const char* section, std::initializer_list<std::string_view> keys,
                           const char* prefix) -> Result<void> {
      const YAML::Node map = root[section];
      if (!map) return {};
      if (auto ok = OnlyKeys(map, keys, section); !ok) return ok;
      for (std::string_view key : keys) {
        auto value = YesNo(map, std::string(key).c_str());
        if (!value) return tl::unexpected(value.error());
        if (*value) out.facts[std::string(prefix) + std::string(key)] = **value;
      }
      return {};
    };
    if (auto ok = flags(
            "isolation",
            {"nvlink_domain_exclusive", "pcie_isolation", "ufm_secured", "ib_sm_key", "ib_sa_key"},
            "isolation.");
        !ok) {
      return tl::unexpected(ok.error());
    }
    if (auto ok = flags("partnerships", {"nvidia_ncp"}, "partnerships."); !ok) {
      return tl::unexpected(ok.error());
    }
    if (const YAML::Node sla = root["sla"]) {
      if (auto ok = OnlyKeys(
              sla, {"partial_failures_defined", "template", "unit", "uptime_pct", "credits"},
              "sla");
          !ok) {
        return tl::unexpected(ok.error());
      }
      if (auto ok = SlaTermsOf(sla, out); !ok) return tl::unexpected(ok.error());
      auto partial = YesNo(sla, "partial_failures_defined");
      if (!partial) return tl::unexpected(partial.error());
      if (*partial) out.facts["reliability.sla_partial_failures"] = **partial;
    }
    if (const YAML::Node pricing = root["pricing"]) {
      if (auto ok = OnlyKeys(pricing, {"gpu_hour_usd", "storage_gb_month_usd", "egress_gb_usd"},
                             "pricing");
          !ok) {
        return tl::unexpected(ok.error());
      }
      auto gpu_hour = Amount(pricing, "gpu_hour_usd", kMaxUsd);
      if (!gpu_hour) return tl::unexpected(gpu_hour.error());
      auto storage = Amount(pricing, "storage_gb_month_usd", kMaxUsd);
      if (!storage) return tl::unexpected(storage.error());
      auto egress = Amount(pricing, "egress_gb_usd", kMaxUsd);
      if (!egress) return tl::unexpected(egress.error());
      out.facts["pricing.published"] = gpu_hour->has_value() && storage->has_value();
      if (*gpu_hour) out.facts["pricing.gpu_hour_usd"] = **gpu_hour;
      if (*egress) out.facts["pricing.egress_gb_usd"] = **egress;
    }
    if (const YAML::Node delivery = root["delivery"]) {
      if (auto ok = OnlyKeys(delivery, {"promised", "delivered"}, "delivery"); !ok) {
        return tl::unexpected(ok.error());
      }
      auto promised = Date(delivery, "promised");
      if (!promised) return tl::unexpected(promised.error());
      auto delivered = Date(delivery, "delivered");
      if (!delivered) return tl::unexpected(delivered.error());
      if (*delivered && **delivered > now + kDay) {  // a day's slack, as for the file's date
        return Fail(ErrorCode::kInvalidArgument,
                    "attestation line {}: delivery delivered is in the future: capacity not "
                    "delivered yet has no delivered date",
                    LineOf(delivery["delivered"]));
      }
      if (*promised && *delivered) {
        // Early is on time: a provider is not scored above one that kept its date.
        out.facts["availability.delivery_late_days"] = std::max<int64_t>(
            0,
            std::chrono::duration_cast<std::chrono::hours>(**delivered - **promised).count() / 24);
      } else if (*promised && !*delivered && now > **promised) {
        // Not delivered yet and already late: as late as today.
        out.facts["availability.delivery_late_days"] =
            std::chrono::duration_cast<std::chrono::hours>(now - **promised).count() / 24;
        out.notes.push_back("promised capacity not delivered yet");
      }
    }
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "attestation: {}", e.what());
  }
  return out;
}

}  // namespace cmax::rate
