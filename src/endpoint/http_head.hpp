// What an HTTP/1.x request head and response head have in common, for serve-sim's request
// parser and the client's response readers: where the head ends (its blank line, with CRLF or
// the bare LF line ends RFC 9112 lets a reader accept), its lines, and how a Content-Length item
// is read. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace cmax::endpoint {

// The length of the head `buffer` begins with, its blank line included; npos while the blank
// line has not come. The first `searched` bytes were looked at before and end no head.
size_t HeadLength(std::string_view buffer, size_t searched);
// The head's lines without their CR, and without the blank line that ends it.
std::vector<std::string_view> HeadLines(std::string_view head);
// One item of a Content-Length list ("5" of "5, 5"), spaces around it allowed: plain digits, at
// most 18 (no sign, no overflow); nullopt for anything else.
std::optional<uint64_t> ContentLengthItem(std::string_view item);
// Whether `c` may stand in a header's name (RFC 9110 5.6.2's tchar): letters, digits and
// !#$%&'*+-.^_`|~; no space, no control, no separator.
bool IsFieldNameCharacter(char c);

}  // namespace cmax::endpoint
