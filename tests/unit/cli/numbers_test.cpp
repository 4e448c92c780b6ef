// One rule for numbers (issue 13): every numeric option of every command, found by walking the
// real command tree, is fed -1, 0, NaN, infinities, 1e300, a huge integer and hex, and must
// either take the value (it is inside the option's declared range) or refuse it at parse time
// as a validation error that names the option and the range; never wrap, clamp or run.
#include "cli/numbers.hpp"

#include <cstdio>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace cmax::cli {
namespace {

struct Declared {
  std::vector<std::string> path;  // subcommand names from the root
  std::string flag;               // "--requests", or a positional's name
  bool positional = false;
  size_t positionals_before = 0;  // a positional's place: the ones before it get a placeholder
  std::string type;
};

bool IsNumeric(const CLI::Option& option) {
  if (option.get_type_size() == 0) return false;  // a flag (counted -v too)
  const std::string type = option.get_type_name();
  const std::string base = type.substr(0, type.find(':'));
  return base.find("INT") != std::string::npos || base.find("FLOAT") != std::string::npos;
}

void Walk(CLI::App& app, std::vector<std::string> path, std::vector<Declared>& found) {
  size_t positionals = 0;
  for (const CLI::Option* option : app.get_options()) {
    const bool positional = option->get_lnames().empty() && option->get_snames().empty();
    if (positional) ++positionals;
    if (!IsNumeric(*option)) continue;
    std::string flag = positional                      ? option->get_name()
                       : !option->get_lnames().empty() ? "--" + option->get_lnames()[0]
                                                       : "-" + option->get_snames()[0];
    found.push_back({path, flag, positional, positionals - 1, option->get_type_name()});
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    std::vector<std::string> deeper = path;
    deeper.push_back(sub->get_name());
    Walk(*sub, deeper, found);
  }
}

std::vector<Declared> AllNumericOptions() {
  CLI::App app;
  std::ostringstream out;
  std::ostringstream err;
  Context ctx{out, err, {}, false};
  const std::vector<Command> commands = SetupCli(app, ctx);  // they own the bound values
  std::vector<Declared> found;
  Walk(app, {}, found);
  return found;
}

enum class Verdict { kTaken, kRefused, kOtherError };

struct Parsed {
  Verdict verdict = Verdict::kTaken;
  std::string message;
};

// Parses only (nothing runs): a missing required option after the value was read means the
// value itself was taken.
Parsed ParseWith(const Declared& d, const std::string& value) {
  CLI::App app;
  std::ostringstream out;
  std::ostringstream err;
  Context ctx{out, err, {}, false};
  const std::vector<Command> commands = SetupCli(app, ctx);  // they own the bound values
  std::vector<std::string> args = d.path;
  if (d.positional) {
    args.push_back("--");  // what follows is positional even when it starts with a dash
    for (size_t i = 0; i < d.positionals_before; ++i) args.emplace_back("1");
    args.push_back(value);
  } else if (d.flag.rfind("--", 0) == 0) {
    args.push_back(d.flag + "=" + value);  // "--x -1" would be read as an option by some parsers
  } else {
    args.push_back(d.flag);
    args.push_back(value);
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ValidationError& e) {
    return {Verdict::kRefused, e.what()};
  } catch (const CLI::ConversionError& e) {
    return {Verdict::kRefused, e.what()};
  } catch (const CLI::ArgumentMismatch& e) {
    return {Verdict::kRefused, e.what()};  // "--x=" with nothing after it
  } catch (const CLI::RequiredError&) {
    return {Verdict::kTaken, {}};
  } catch (const CLI::RequiresError&) {
    return {Verdict::kTaken, {}};
  } catch (const CLI::ExcludesError&) {
    return {Verdict::kTaken, {}};
  } catch (const CLI::ParseError& e) {
    return {Verdict::kOtherError, e.what()};
  }
  return {Verdict::kTaken, {}};
}

std::string Where(const Declared& d) {
  std::string where = "cmax";
  for (const std::string& p : d.path) where += " " + p;
  return where + " " + d.flag + " (" + d.type + ")";
}

TEST(Numbers, TheWalkFindsTheCommandsNumericOptions) {
  const std::vector<Declared> all = AllNumericOptions();
  auto has = [&](const std::string& command, const std::string& flag) {
    for (const Declared& d : all) {
      if (!d.path.empty() && d.path.back() == command && d.flag == flag) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("run", "--requests"));
  EXPECT_TRUE(has("sweep", "--levels"));
  EXPECT_TRUE(has("serve-sim", "--fault-429"));
  EXPECT_TRUE(has("health", "--mount-timeout"));
  EXPECT_TRUE(has("runs", "-n") || has("runs", "--limit"));
  EXPECT_GT(all.size(), 40U);
  std::printf("%zu numeric options in the command tree\n", all.size());
}

// The whole command tree, to look a declared option up in.
struct Tree {
  CLI::App app;
  std::ostringstream out;
  std::ostringstream err;
  Context ctx{out, err, {}, false};
  std::vector<Command> commands = SetupCli(app, ctx);  // they own the bound values
  CLI::Option* Find(const Declared& d) {
    CLI::App* at = &app;
    for (const std::string& name : d.path) at = at->get_subcommand(name);
    return at->get_option(d.flag);
  }
};

TEST(Numbers, EveryNumericOptionCarriesARange) {
  Tree tree;
  for (const Declared& d : AllNumericOptions()) {
    CLI::Option* option = tree.Find(d);
    bool ranged = false;
    try {
      ranged = option->get_validator(kRangeValidator) != nullptr;
    } catch (const CLI::OptionNotFound&) {
      ranged = false;
    }
    EXPECT_TRUE(ranged) << Where(d) << " has no range validator (cli/numbers.hpp)";
  }
}

// --help never offers a default the option would refuse (`--warmup INT:[0, ...]=-1`, where -1
// meant "found from the curve").
TEST(Numbers, EveryDefaultShownIsAValueTheOptionTakes) {
  Tree tree;
  size_t shown = 0;
  for (const Declared& d : AllNumericOptions()) {
    const std::string value = tree.Find(d)->get_default_str();
    if (value.empty()) continue;
    ++shown;
    const Parsed p = ParseWith(d, value);
    EXPECT_EQ(p.verdict, Verdict::kTaken)
        << Where(d) << " shows the default " << value << ": " << p.message;
  }
  EXPECT_GT(shown, 20U);
}

TEST(Numbers, NoNumericOptionTakesNegativeNanInfinityOrOutOfRangeValues) {
  for (const Declared& d : AllNumericOptions()) {
    for (const std::string value : {"-1", "nan", "NaN", "inf", "-inf", "1e300",
                                    "99999999999999999999999", "0x10", "", "1 2", "12abc"}) {
      const Parsed p = ParseWith(d, value);
      EXPECT_EQ(p.verdict, Verdict::kRefused) << Where(d) << " took '" << value << "'";
      if (p.verdict == Verdict::kRefused && !value.empty()) {
        EXPECT_NE(p.message.find(d.flag), std::string::npos) << p.message;
        EXPECT_NE(p.message.find(']'), std::string::npos) << "no range in: " << p.message;
      }
    }
    // 0 and 1 are taken or refused, each by the range; never another kind of error.
    for (const std::string value : {"0", "1", "007"}) {
      EXPECT_NE(ParseWith(d, value).verdict, Verdict::kOtherError) << Where(d) << " " << value;
    }
  }
}

TEST(Numbers, ValidatorsReadDecimalsOnlyAndNameTheRange) {
  std::string text = "-1";
  EXPECT_NE(Whole(1, 10)(text).find("must be a whole number in [1, 10], not '-1'"),
            std::string::npos);
  text = "010";
  EXPECT_EQ(Whole(0, 100)(text), "");
  EXPECT_EQ(text, "10") << "a leading zero is not octal";
  text = "0";
  EXPECT_EQ(Whole(0, 100)(text), "");
  EXPECT_EQ(text, "0");
  text = "-05";
  EXPECT_EQ(Whole(-10, 10)(text), "");
  EXPECT_EQ(text, "-5");
  text = "18446744073709551615";
  EXPECT_EQ(AnyUnsigned()(text), "");
  text = "18446744073709551616";
  EXPECT_NE(AnyUnsigned()(text), "");
  text = "0.5";
  EXPECT_EQ(Share()(text), "");
  text = "1.5";
  EXPECT_NE(Share()(text), "");
  text = "0";
  EXPECT_NE(SecondsIn()(text).find("(0, "), std::string::npos);
  EXPECT_EQ(SecondsIn(kMaxSeconds, /*zero_means_none=*/true)(text), "");
  EXPECT_NE(Positive(10)(text), "");
  text = "2e3";
  EXPECT_EQ(Real(0, 1e4)(text), "");
  text = std::string(5000, '9');
  const std::string message = Whole(0, 1)(text);
  EXPECT_LT(message.size(), 120U) << "a long value is quoted short";
}

TEST(Numbers, ANegativeCountIsExitTwoNamingTheOptionAndNothingRuns) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunCli({"--db", "/nonexistent/dir/cmax.db", "endpoint", "run", "--url",
                           "http://127.0.0.1:9/", "--model", "m", "--requests", "-1"},
                          out, err);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(err.str().find("--requests"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("[1, "), std::string::npos) << err.str();
}

}  // namespace
}  // namespace cmax::cli
