#include "core/strings.hpp"

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "core/log.hpp"
#include "support/temp_dir.hpp"

namespace cmax {
namespace {

TEST(Strings, TrimSplitJoin) {
  EXPECT_EQ(Trim("  a b \n"), "a b");
  EXPECT_EQ(Trim(" \t\n"), "");
  const auto parts = Split("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(Split("", ',').size(), 1u);
  const auto fields = SplitFields("  one\ttwo \n three\r\n");
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[2], "three");
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(ToLower("0000:AB:00.0"), "0000:ab:00.0");
}

TEST(Strings, SplitLinesKeepsEmptyLinesAndDropsCarriageReturns) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(SplitLines(""), V{});
  EXPECT_EQ(SplitLines("a"), V{"a"});
  EXPECT_EQ(SplitLines("a\n"), V{"a"});
  EXPECT_EQ(SplitLines("a\r\n\nb"), (V{"a", "", "b"}));
  EXPECT_EQ(SplitLines("\n\n"), (V{"", ""}));
}

TEST(Strings, ParseNonNegativeTakesPlainNumbersOnly) {
  EXPECT_EQ(ParseNonNegative("30"), 30.0);
  EXPECT_EQ(ParseNonNegative("1.5"), 1.5);
  EXPECT_EQ(ParseNonNegative(".25"), 0.25);
  EXPECT_EQ(ParseNonNegative("0"), 0.0);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "nan", "inf", "0x10", "1e3", "1.5s", "."}) {
    EXPECT_FALSE(ParseNonNegative(bad)) << bad;
  }
}

TEST(Strings, ParseWholeTakesTheWholeTextOrNothing) {
  EXPECT_EQ(ParseWhole<int>("42"), 42);
  EXPECT_EQ(ParseWhole<int>("-7"), -7);
  EXPECT_EQ(ParseWhole<int>("0042"), 42);
  EXPECT_EQ(ParseWhole<uint32_t>("10de", 16), 0x10deU);
  EXPECT_EQ(ParseWhole<int>("755", 8), 0755);
  EXPECT_EQ(ParseWhole<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseWhole<double>("2.5e3"), 2500.0);
  EXPECT_EQ(ParseWhole<double>("-0.5"), -0.5);
  // Anything around the number, a sign an unsigned type cannot hold, or a number too big: none.
  for (const char* bad : {"", " 1", "1 ", "+1", "1x", "0x10", "1.5", "-", "2147483648"}) {
    EXPECT_FALSE(ParseWhole<int>(bad)) << bad;
  }
  for (const char* bad : {"-1", "18446744073709551616", "1,000"}) {
    EXPECT_FALSE(ParseWhole<uint64_t>(bad)) << bad;
  }
  for (const char* bad : {"", "1.5 ", "1.5%", "1e", ".", "0x1p3"}) {
    EXPECT_FALSE(ParseWhole<double>(bad)) << bad;
  }
  // As std::from_chars: a double reads "nan" and "inf"; the callers that refuse them check.
  EXPECT_TRUE(ParseWhole<double>("inf"));
  EXPECT_FALSE(ParseWhole<int>(std::string_view("12\0", 3)));
}

TEST(Strings, ReplaceAllDoesNotSearchWhatItInserted) {
  EXPECT_EQ(ReplaceAll("srun -w {node} x {node}", "{node}", "n1"), "srun -w n1 x n1");
  // A value holding the key is inserted once, not expanded again (this looped forever when
  // each search started where the replacement began).
  EXPECT_EQ(ReplaceAll("a {node} b", "{node}", "{node}{node}"), "a {node}{node} b");
  EXPECT_EQ(ReplaceAll("abc", "", "x"), "abc");
  EXPECT_EQ(ReplaceAll("", "{node}", "x"), "");
}

TEST(Strings, ShellQuoteMakesOneWordOfAnything) {
  EXPECT_EQ(ShellQuote("gpu-01"), "'gpu-01'");
  EXPECT_EQ(ShellQuote("a'b"), "'a'\\''b'");
  EXPECT_EQ(ShellQuote("$(rm -rf /); `x`"), "'$(rm -rf /); `x`'");
  EXPECT_EQ(ShellQuote(""), "''");
}

// What /bin/sh holds in $X after it runs `assignment`.
std::string ShellValueOf(const std::string& assignment) {
  cmax::testing::TempDir dir;
  const std::string script = dir.File("env.sh");
  std::ofstream(script) << assignment << "\nprintf %s \"$X\"\n";
  FILE* sh = ::popen(("/bin/sh " + script).c_str(), "r");
  if (sh == nullptr) return "(popen failed)";
  std::string out;
  std::array<char, 256> buffer{};
  for (size_t n = 0; (n = std::fread(buffer.data(), 1, buffer.size(), sh)) > 0;) {
    out.append(buffer.data(), n);
  }
  ::pclose(sh);
  return out;
}

TEST(Strings, ShellWordIsReadBackAsItWasByTheShell) {
  EXPECT_EQ(ShellWord("/tmp/lab/etc/slurm.conf"), "/tmp/lab/etc/slurm.conf");
  EXPECT_EQ(ShellWord("a b"), "'a b'");
  EXPECT_EQ(ShellWord(""), "''");
  // `eval "$(cmax lab env)"` with a folder named by whoever set XDG_DATA_HOME or --dir: read back
  // as the one value it is, never run.
  for (const std::string word :
       {"/tmp/x;echo INJECTED;#/etc/slurm.conf", "/a b/c", "it's", "$(id)", "`id`", "~root", "a*b",
        "x\ny", "/plain/path-1.2_3", "a=b", "\\", "\"q\""}) {
    EXPECT_EQ(ShellValueOf("export X=" + ShellWord(word)), word) << word;
  }
}

using Words = std::vector<std::string>;

TEST(Strings, SplitShellWordsSplitsAsShDoesWithoutExpanding) {
  const std::vector<std::pair<std::string, std::optional<Words>>> cases = {
      {"", Words{}},
      {"  \t\n ", Words{}},
      {"ssh -o BatchMode=yes {peer}", Words{"ssh", "-o", "BatchMode=yes", "{peer}"}},
      {"  ip   netns exec\t{peer} ", Words{"ip", "netns", "exec", "{peer}"}},
      {"ssh -o 'ProxyCommand ssh -W %h:%p jump' {peer}",
       Words{"ssh", "-o", "ProxyCommand ssh -W %h:%p jump", "{peer}"}},
      {"sh -c \"exec \\\"$0\\\" \\$HOME\"", Words{"sh", "-c", "exec \"$0\" $HOME"}},
      {"\"a\\b\" 'c\\d'", Words{"a\\b", "c\\d"}},  // \b kept in both quotes
      {"a\\ b c", Words{"a b", "c"}},
      {"'' x \"\"", Words{"", "x", ""}},  // quoted nothing is a word
      {"a'b'\"c\"d", Words{"abcd"}},
      {"$HOME ~ *", Words{"$HOME", "~", "*"}},  // no expansion
      {"one \\\n two", Words{"one", "two"}},    // a continued line
      // A comment, as sh reads one: from a '#' that begins a word to the end of the line.
      {"ssh {peer} # the jump host", Words{"ssh", "{peer}"}},
      {"a # b; c | d\n e", Words{"a", "e"}},
      {"#all of it", Words{}},
      {"a#b '#c' \"#d\" \\#e", Words{"a#b", "#c", "#d", "#e"}},
      {"'unclosed", std::nullopt},
      {"\"unclosed \\\"", std::nullopt},
      {"trailing\\", std::nullopt},
      // What only a shell does is refused, not passed on as words: no shell runs the line.
      {"ssh {peer} 2>/dev/null", std::nullopt},
      {"ssh {peer}; true", std::nullopt},
      {"a | b", std::nullopt},
      {"a && b", std::nullopt},
      {"(a)", std::nullopt},
      {"echo `id`", std::nullopt},
      {"sh -c 'a | b; c > d' \"(x)\" \\;", Words{"sh", "-c", "a | b; c > d", "(x)", ";"}},
  };
  for (const auto& [text, words] : cases) {
    EXPECT_EQ(SplitShellWords(text), words) << text;
  }
  // ShellQuote's words come back whole, whatever they hold.
  for (const std::string word :
       {"it's", "$(rm -rf /)", "a \"b\" \\c", "", "\t\n", "# no comment"}) {
    EXPECT_EQ(SplitShellWords("x " + ShellQuote(word) + " y"), (Words{"x", word, "y"})) << word;
  }
}

struct Utf8Case {
  std::string input;
  std::string expected;
};

class SanitizeUtf8Test : public ::testing::TestWithParam<Utf8Case> {};

TEST_P(SanitizeUtf8Test, ReplacesWhatCouldBreakAnOutputFormat) {
  EXPECT_EQ(SanitizeUtf8(GetParam().input), GetParam().expected);
}

const std::string kBad = "\xEF\xBF\xBD";

INSTANTIATE_TEST_SUITE_P(
    Table, SanitizeUtf8Test,
    ::testing::Values(Utf8Case{"plain ascii", "plain ascii"},
                      Utf8Case{"tab\tand\nnewline", "tab\tand\nnewline"},
                      Utf8Case{"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
                               "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
                      Utf8Case{"esc\x1b[31mred", "esc" + kBad + "[31mred"},
                      Utf8Case{std::string("nul\0x", 5), "nul" + kBad + "x"},
                      Utf8Case{"del\x7f", "del" + kBad},
                      Utf8Case{"lone \x80 byte", "lone " + kBad + " byte"},
                      Utf8Case{"cut \xE2\x82", "cut " + kBad + kBad},
                      Utf8Case{"overlong \xC0\xAF", "overlong " + kBad + kBad},
                      Utf8Case{"surrogate \xED\xA0\x80", "surrogate " + kBad + kBad + kBad},
                      Utf8Case{"too big \xF4\x90\x80\x80", "too big " + kBad + kBad + kBad + kBad},
                      // Valid UTF-8 that no output should carry.
                      Utf8Case{"csi \xC2\x9B"
                               "31m",
                               "csi " + kBad + "31m"},
                      Utf8Case{"nel \xC2\x85", "nel " + kBad},
                      Utf8Case{"nbsp \xC2\xA0 stays", "nbsp \xC2\xA0 stays"},
                      Utf8Case{"xml \xEF\xBF\xBE\xEF\xBF\xBF", "xml " + kBad + kBad},
                      Utf8Case{"nonchar \xEF\xB7\x90", "nonchar " + kBad},
                      Utf8Case{"plane \xF0\x9F\xBF\xBF", "plane " + kBad},
                      Utf8Case{"ls \xE2\x80\xA8", "ls " + kBad},
                      Utf8Case{"rlo \xE2\x80\xAE"
                               "cod.exe",
                               "rlo " + kBad + "cod.exe"},
                      Utf8Case{"isolate \xE2\x81\xA6", "isolate " + kBad},
                      Utf8Case{"dash \xE2\x80\x94 stays", "dash \xE2\x80\x94 stays"}));

TEST(ShowControlCharacters, C0AndC1ControlsBecomeQuestionMarksAndUtf8Stays) {
  std::string text =
      "a\x1b[31m\tb\nc\xC2\x9B"
      "31m \xC2\xA0 caf\xC3\xA9\x7f\xC2";
  ShowControlCharacters(text);
  EXPECT_EQ(text, "a?[31m\tb\nc?31m \xC2\xA0 caf\xC3\xA9?\xC2");
  // Raw C1 bytes (U+009B as Latin-1 writes it) too; continuation bytes of UTF-8 stay, also
  // those in 0x80-0x9F (U+0100 is C4 80, U+20AC E2 82 AC, U+1F600 F0 9F 98 80).
  std::string raw =
      "x\x9B"
      "31m \x85\xA0 \xC4\x80 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE2\x82\x9B\x9B";
  ShowControlCharacters(raw);
  EXPECT_EQ(raw, "x?31m ?\xA0 \xC4\x80 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE2\x82\x9B?");
  // What only looks like a sequence is none: an overlong C0 9B, E0 80 (overlong), ED A0
  // (a surrogate), F4 90 (past U+10FFFF), F5 and a sequence cut short at the end.
  std::string forged = "\xC0\x9B|\xE0\x80\x9B|\xED\xA0\x80|\xF4\x90\x80\x80|\xF5\x80|\xE2\x82";
  ShowControlCharacters(forged);
  EXPECT_EQ(forged, "\xC0?|\xE0??|\xED\xA0?|\xF4???|\xF5?|\xE2?");
}

TEST(IsEnvName, AShellVariablesNameAndASettingOfOne) {
  for (const char* name : {"A", "_", "NCCL_IB_HCA", "a1_b2", "x"})
    EXPECT_TRUE(IsEnvName(name)) << name;
  for (const char* name : {"", "1A", "A-B", "A B", "sk-proj-1", "A=1", "\xC3\xA9"}) {
    EXPECT_FALSE(IsEnvName(name)) << name;
  }
  EXPECT_FALSE(IsEnvName(std::string(256, 'A')));
  EXPECT_TRUE(IsEnvSetting("A=1"));
  EXPECT_TRUE(IsEnvSetting("A="));
  EXPECT_TRUE(IsEnvSetting("A=b=c"));
  for (const char* bad : {"A", "=1", "1A=1", "A B=1", "sk-secret"}) {
    EXPECT_FALSE(IsEnvSetting(bad)) << bad;
  }
}

// JSON for a terminal: C1 controls as \u escapes (JSON already escapes C0), the rest of UTF-8
// as it is, and a document that reads back the same.
TEST(EscapeC1InJson, C1ControlsBecomeEscapesAndTheDocumentStaysTheSame) {
  const std::string text =
      "csi \xC2\x9B"
      "31m nel \xC2\x85 nbsp \xC2\xA0 caf\xC3\xA9 \xC4\x80";
  const std::string dumped = nlohmann::json({{"unit", text}}).dump();
  const std::string escaped = EscapeC1InJson(dumped);
  EXPECT_EQ(escaped, R"({"unit":"csi \u009b31m nel \u0085 nbsp )"
                     "\xC2\xA0 caf\xC3\xA9 \xC4\x80\"}");
  EXPECT_EQ(nlohmann::json::parse(escaped).at("unit").get<std::string>(), text);
  EXPECT_EQ(EscapeC1InJson("{\"a\":\"plain\"}"), "{\"a\":\"plain\"}");
}

// One printable line: what names and titles must be (IsOneLine), and what a file's name is
// made into for a report (AsOneLine).
TEST(OneLine, NamesAreCheckedOrMadeOneLine) {
  EXPECT_TRUE(IsOneLine("Lab Cloud", 128));
  EXPECT_TRUE(IsOneLine("caf\xC3\xA9", 5));
  EXPECT_FALSE(IsOneLine("caf\xC3\xA9", 4));
  for (const std::string bad : {"", "a\nb", "a\tb", "a\rb", "a\x1b[2J", "\xff",
                                "a\xC2\x9B"
                                "b",
                                "\xE2\x80\xAE" /* U+202E */}) {
    EXPECT_FALSE(IsOneLine(bad, 128)) << bad;
  }
  EXPECT_EQ(AsOneLine("a\nFAIL b\tc"), "a?FAIL b?c");
  EXPECT_EQ(AsOneLine("caf\xC3\xA9.log"), "caf\xC3\xA9.log");
  EXPECT_TRUE(IsOneLine(AsOneLine("x\r\n\x1b\xff\xE2\x80\xAE"), 64));
}

TEST(PercentEncode, OnlyUnreservedCharactersStay) {
  EXPECT_EQ(PercentEncode("gpu-1.rack_2~"), "gpu-1.rack_2~");
  EXPECT_EQ(PercentEncode("spec.nodeName=gpu 1/x"), "spec.nodeName%3Dgpu%201%2Fx");
  EXPECT_EQ(PercentEncode("\xff\n"), "%FF%0A");
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(DecodeBase64, RoundTripsAndRefusesWhatIsNotBase64) {
  EXPECT_EQ(DecodeBase64(""), std::string());
  EXPECT_EQ(DecodeBase64("TQ=="), std::string("M"));
  EXPECT_EQ(DecodeBase64("TWE="), std::string("Ma"));
  EXPECT_EQ(DecodeBase64("TWFu"), std::string("Man"));
  EXPECT_EQ(DecodeBase64("TWE"), std::string("Ma"));  // padding is optional
  EXPECT_EQ(DecodeBase64("LS0tLS1CRUdJTi\nBDRVJU\r\n"), std::string("-----BEGIN CERT"));
  EXPECT_EQ(DecodeBase64("AP8="), std::string("\0\xff", 2));
  EXPECT_EQ(DecodeBase64("TW*u"), std::nullopt);
  EXPECT_EQ(DecodeBase64("TQ==TQ=="), std::nullopt);
  EXPECT_EQ(DecodeBase64("T"), std::nullopt);
}

}  // namespace
}  // namespace cmax

namespace cmax {
namespace {

// Log lines quote outside text (a server's message, a node's name): on stderr their control
// characters are shown, not obeyed.
TEST(Log, ControlCharactersInLogLinesAreNotSentToTheTerminal) {
  char path[] = "/tmp/cmax-log-XXXXXX";
  const int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(file, 2);
  log::Write(log::Level::kWarn, "node \x1b[2Jgpu1\r gone\ttwice\nsecond line");
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::close(file);
  ::unlink(path);
  EXPECT_EQ(text.str(), "cmax: warning: node ?[2Jgpu1? gone\ttwice\nsecond line\n");
}

TEST(ShownUrl, WithoutCredentialsOrQuery) {
  EXPECT_EQ(ShownUrl("https://user:pw@h:1/v1/chat/completions?key=s"),
            "https://h:1/v1/chat/completions");
  EXPECT_EQ(ShownUrl("http://u:p@h:9090"), "http://h:9090");
  EXPECT_EQ(ShownUrl("http://h/x#frag"), "http://h/x");
  EXPECT_EQ(ShownUrl("http://h/a@b"), "http://h/a@b");  // an @ in the path is not a login
  // A password with '#', '?' or '@' in it, unencoded as people write them, is still a password.
  EXPECT_EQ(ShownUrl("http://admin:s3cr#t@prom:9090/api"), "http://prom:9090/api");
  EXPECT_EQ(ShownUrl("http://admin:p?ss@prom:9090"), "http://prom:9090");
  EXPECT_EQ(ShownUrl("http://u:p@ss@h/x?k=1"), "http://h/x");
}

}  // namespace
}  // namespace cmax
