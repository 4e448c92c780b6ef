// Small string helpers the parsers and renderers share.
#pragma once

#include <charconv>
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax {

std::string_view Trim(std::string_view text);
std::vector<std::string_view> Split(std::string_view text, char separator);
// Splits on runs of whitespace (spaces, tabs, line ends), dropping empty fields.
std::vector<std::string_view> SplitFields(std::string_view text);
// The lines of `text`, without their '\n' (or "\r\n"); a last line without one is a line too.
std::vector<std::string_view> SplitLines(std::string_view text);
std::string Join(const std::vector<std::string>& parts, std::string_view separator);
std::string ToLower(std::string_view text);
// The number that is all of `text`, as std::from_chars reads it (no spaces, no '+', no '-' for
// an unsigned type; a double also reads "nan" and "inf"); nullopt when any of `text` is not the
// number, or it does not fit in T.
template <typename T>
requires(std::integral<T> &&
         !std::same_as<T, bool>) std::optional<T> ParseWhole(std::string_view text, int base = 10) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}
template <typename T>
requires std::floating_point<T> std::optional<T> ParseWhole(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}
// A plain decimal number >= 0 that is all of `text` ("1.5", "30"); nullopt for anything else,
// including "nan", "inf", hex, signs and surrounding spaces (strtod takes all of those).
std::optional<double> ParseNonNegative(std::string_view text);
// Every `key` in `text` replaced by `value`, left to right; what a replacement inserts is not
// searched again (a value that contains the key cannot loop).
std::string ReplaceAll(std::string text, std::string_view key, std::string_view value);
// Quoted for /bin/sh as one word, whatever it holds: for names that come from outside (nodes,
// devices) put into a command line.
std::string ShellQuote(std::string_view text);
// `text` as one word for /bin/sh: as it is when every character is one the shell takes as itself
// (letters, digits and @%+=:,./_-, as Python's shlex.quote), else ShellQuote(text). For a line a
// user evaluates, which should read as it would be typed.
std::string ShellWord(std::string_view text);
// A command line split into words as /bin/sh splits one, without running anything: blanks
// (space, tab, newline) separate words; 'single quotes' keep everything; "double quotes" keep
// all but \\, \" \$ and \` escapes; a backslash outside quotes keeps the next character. No
// expansion ($VAR, globs, ~) is done: what is given is what the program gets. A '#' that begins
// a word begins a comment, to the end of its line (inside a word or quoted it is a '#').
// nullopt for an unterminated quote, a trailing backslash, or what only a shell could do (an
// unquoted ; | & < > ( ) or `: a pipe, a redirection, a list), since no shell runs it. The
// inverse of ShellQuote.
std::optional<std::vector<std::string>> SplitShellWords(std::string_view text);

// Standard base64 (RFC 4648, '=' padding optional, whitespace ignored); nullopt when the text
// holds anything else. Kubeconfig files carry certificates this way.
std::optional<std::string> DecodeBase64(std::string_view text);

// Percent-encodes all but RFC 3986's unreserved characters (A-Z a-z 0-9 - . _ ~): for URL path
// segments and query values.
std::string PercentEncode(std::string_view text);

// Text from outside (hostnames, log lines, server strings) may hold any bytes. Renderers call
// this first: invalid UTF-8 sequences become U+FFFD, and so do C0 control characters other than
// tab and newline, DEL, C1 controls, noncharacters (U+FFFE, U+FFFF, U+FDD0-FDEF), U+2028/2029
// and the bidirectional overrides, so no output format (terminal, HTML, XML, Markdown) can be
// broken or disguised by them.
std::string SanitizeUtf8(std::string_view text);

// A C0 control character or DEL: what a terminal may obey instead of showing.
bool IsControlCharacter(char c);
// Text shown as one line on terminals and in every report (a name, a title, a source): 1 to
// `max` bytes that SanitizeUtf8 leaves as they are, with no tab or line break.
bool IsOneLine(std::string_view text, size_t max);
// A name from outside (a file's: any bytes but '/' and NUL) made one printable line for reports:
// SanitizeUtf8, then a line break or tab becomes '?'.
std::string AsOneLine(std::string_view text);
// For text bound for a terminal that must keep its lines (stderr, logs): every control character
// but tab and newline becomes '?', C1 controls in UTF-8 too, and a byte 0x80-0x9F that is not
// part of well-formed UTF-8 (C1 to a terminal in an 8-bit locale, which well-formed UTF-8 can
// still reach through its continuation bytes). Cheaper than SanitizeUtf8, and leaves the rest
// of UTF-8, and bytes 0xA0-0xFF that are not UTF-8, alone.
void ShowControlCharacters(std::string& text);
// An environment variable's name as the shell writes one: a letter or '_', then letters, digits
// and '_' (POSIX, "Portable Filename" names), at most 255 bytes.
bool IsEnvName(std::string_view name);
// "NAME=VALUE" with IsEnvName(NAME); the value may be anything, empty too. Errors about a setting
// that is not one never quote it: a value is often a secret.
bool IsEnvSetting(std::string_view setting);
// JSON text (valid UTF-8, as nlohmann's dump with error_handler_t::replace writes it) with each
// C1 control (U+0080-U+009F) written as its \u escape: JSON escapes C0 controls itself, and a
// terminal obeys U+009B as it obeys ESC [. The document means the same to a JSON reader.
std::string EscapeC1InJson(std::string json);

// A URL as shown in a message and stored: no user:password and no query (where some services
// put keys): https://user:pw@h:1/v1?key=s -> https://h:1/v1.
std::string ShownUrl(std::string_view url);

}  // namespace cmax
