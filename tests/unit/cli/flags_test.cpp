// The one way to declare an option (cli/flags.hpp): its default shows in --help when it says
// something, and never as a bare zero or an empty value anywhere in the real command tree.
#include "cli/flags.hpp"

#include <functional>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/numbers.hpp"

namespace cmax::cli {
namespace {

TEST(Flags, ADefaultShowsWhenItIsNotZeroOrEmpty) {
  CLI::App app;
  int zero = 0;
  int sixteen = 16;
  double half = 0.5;
  std::string none;
  std::string kmsg = "/dev/kmsg";
  std::string mode = "cmax";
  std::vector<std::string> headers{"a: b"};
  bool flag = false;
  EXPECT_EQ(Num(&app, "--zero", zero, Whole(0, 9), "z")->get_default_str(), "");
  EXPECT_EQ(Num(&app, "--sixteen", sixteen, Whole(0, 99), "s")->get_default_str(), "16");
  EXPECT_EQ(Num(&app, "--half", half, Share(), "h")->get_default_str(), "0.5");
  EXPECT_EQ(Opt(&app, "--none", none, "n")->get_default_str(), "");
  EXPECT_EQ(Opt(&app, "--kmsg", kmsg, "k")->get_default_str(), "/dev/kmsg");
  EXPECT_EQ(Opt(&app, "--header", headers, "h")->get_default_str(), "");  // never for a list
  EXPECT_EQ(Choice(&app, "--mode", mode, {"cmax", "libcurl"}, "m")->get_default_str(), "cmax");
  EXPECT_EQ(Flag(&app, "--flag", flag, "f")->get_default_str(), "");
  Group("Kubernetes", {app.get_option("--none"), app.get_option("--kmsg")});
  EXPECT_EQ(app.get_option("--kmsg")->get_group(), "Kubernetes");
  EXPECT_NE(app.get_option("--mode")->get_group(), "Kubernetes");
}

TEST(Flags, AChoiceAndARangeAreEnforcedAtParse) {
  CLI::App app;
  std::string mode = "cmax";
  int port = 8000;
  Choice(&app, "--mode", mode, {"cmax", "libcurl"}, "m");
  Num(&app, "--port", port, Whole(0, 65535), "p");
  EXPECT_THROW(app.parse("--mode curl", false), CLI::ValidationError);
  app.clear();
  EXPECT_THROW(app.parse("--port 70000", false), CLI::ValidationError);
  app.clear();
  app.parse("--mode libcurl --port 0", false);
  EXPECT_EQ(mode, "libcurl");
  EXPECT_EQ(port, 0);
}

TEST(Flags, ARepeatedOptionTakesOneValueEachTime) {
  CLI::App app;
  std::vector<std::string> env;
  std::vector<std::string> command;
  Repeated(&app, "--env", env, "e (repeatable)");
  app.add_option("COMMAND", command);
  // A list option would end its values at `--` and take --steps for an option of cmax's.
  app.parse("--env A=1 --env B=2 -- /bin/x --steps", false);
  EXPECT_EQ(env, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(command, (std::vector<std::string>{"/bin/x", "--steps"}));
}

// `check` on every option of the real command tree, with the command's words ("cmax nccl sweep").
void ForEveryOption(CLI::App& app, const std::string& path,
                    const std::function<void(const std::string&, const CLI::Option&)>& check) {
  for (const CLI::Option* option : app.get_options()) check(path, *option);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    ForEveryOption(*sub, path + " " + sub->get_name(), check);
  }
}

void ForEveryOptionOfCmax(
    const std::function<void(const std::string&, const CLI::Option&)>& check) {
  CLI::App app;
  std::ostringstream out;
  std::ostringstream err;
  Context ctx{out, err, {}, false};
  const std::vector<Command> commands = SetupCli(app, ctx);
  ForEveryOption(app, "cmax", check);
}

// Every option whose help says it is repeatable is declared with Repeated.
TEST(Flags, EveryRepeatableOptionTakesOneValueEachTime) {
  ForEveryOptionOfCmax([](const std::string& path, const CLI::Option& option) {
    if (option.get_description().find("repeatable") == std::string::npos) return;
    EXPECT_FALSE(option.get_allow_extra_args())
        << path << " " << option.get_name() << ": declare it with Repeated (cli/flags.hpp)";
  });
}

TEST(Flags, NoOptionOfAnyCommandShowsABareZero) {
  ForEveryOptionOfCmax([](const std::string& path, const CLI::Option& option) {
    const std::string shown = option.get_default_str();
    EXPECT_TRUE(shown != "0" && shown != "0.0" && shown != "[]" && shown != "{}")
        << path << " " << option.get_name() << " shows the default '" << shown
        << "': declare it with cli/flags.hpp";
  });
}

}  // namespace
}  // namespace cmax::cli
