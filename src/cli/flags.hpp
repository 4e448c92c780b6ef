// One way to declare an option, one call each: the value it sets, the rule its text must meet
// and its help. A number cannot be declared without its range (cli/numbers.hpp): Num is the
// only way to bind one, and it takes the validator before the help. One rule for defaults in
// --help: a default is shown when it says something (not zero, not empty, never for a list),
// so every option that starts at a value shows it and no command chooses case by case; a
// number's is shown only when it is in the option's range.
#pragma once

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "core/strings.hpp"

namespace cmax::cli {

namespace flags_detail {

template <typename T>
void ShowDefaultIfAny(CLI::Option* option, const T& value) {
  if constexpr (std::is_arithmetic_v<T>) {
    if (value != T{}) option->capture_default_str();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.empty()) option->capture_default_str();
  }
}

}  // namespace flags_detail

// Text, or a list of texts: a positional list, or a list given once (`->delimiter(',')`); a
// list given again for each value is Repeated.
template <typename T>
requires(!std::is_arithmetic_v<T>) CLI::Option* Opt(CLI::App* app, const std::string& name, T& into,
                                                    const std::string& help) {
  CLI::Option* option = app->add_option(name, into, help);
  flags_detail::ShowDefaultIfAny(option, into);
  return option;
}

// A text given again for each value (--env A=1 --env B=2), gathered in order: one value an
// occurrence, so that the word after it is never taken for another value, be it a positional or
// the `--` before a command (a list option that takes several values ends them at `--` and
// parses what follows as cmax's options). Its help says "(repeatable)"; flags_test holds every
// such option to this.
// For --env: NAME=VALUE, refused without quoting what was given (a value is often a secret).
inline CLI::Validator EnvSetting() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return IsEnvSetting(value) ? std::string()
                                   : "not NAME=VALUE with NAME of letters, digits and '_' (what "
                                     "was given is not shown: it may hold a secret)";
      },
      "NAME=VALUE");
}

inline CLI::Option* Repeated(CLI::App* app, const std::string& name, std::vector<std::string>& into,
                             const std::string& help) {
  return app->add_option(name, into, help)->allow_extra_args(false);
}

// A number, in the range `rule` states (Whole, Real, Positive, Share, SecondsIn, AnyUnsigned).
template <typename T>
requires(std::is_arithmetic_v<T> &&
         !std::is_same_v<T, bool>) CLI::Option* Num(CLI::App* app, const std::string& name, T& into,
                                                    const CLI::Validator& rule,
                                                    const std::string& help) {
  CLI::Option* option = app->add_option(name, into, help)->check(rule);
  // A value outside the range is a sentinel ("-1: found from the data"), which the help says in
  // words: showing it would offer a default the option refuses.
  std::string text = CLI::detail::to_string(into);
  if (CLI::Validator(rule)(text).empty()) flags_detail::ShowDefaultIfAny(option, into);
  return option;
}

// Text that must be one of `values`.
inline CLI::Option* Choice(CLI::App* app, const std::string& name, std::string& into,
                           const std::vector<std::string>& values, const std::string& help) {
  CLI::Option* option = app->add_option(name, into, help)->check(CLI::IsMember(values));
  flags_detail::ShowDefaultIfAny(option, into);
  return option;
}

// A switch: present is true.
inline CLI::Option* Flag(CLI::App* app, const std::string& name, bool& into,
                         const std::string& help) {
  return app->add_flag(name, into, help);
}

// Lists `options` under their own heading in --help.
inline void Group(const std::string& heading, std::initializer_list<CLI::Option*> options) {
  for (CLI::Option* option : options) option->group(heading);
}

}  // namespace cmax::cli
