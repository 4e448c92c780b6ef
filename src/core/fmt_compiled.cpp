// fmt's compiled part (the functions fmt::format calls behind its templates), built here from
// the headers Debian's libfmt-dev ships: Debian has no static libfmt, and with no C++ shared
// library left to load, cmax can carry the C++ runtime inside it (start-up: docs/PERFORMANCE.md).
// The explicit instantiations are the ones <fmt/format.h> declares `extern template`.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
