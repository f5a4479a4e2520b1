// fmt.cpp: the compiled part of {fmt}, built once for the whole project.
//
// Debian's libfmt-dev ships {fmt} as a shared library and as headers. The tools do not link
// the shared library (one more object to load at every start-up, where a single mq-send is
// mostly start-up), and the header-only mode compiled format-inl.h into every file that
// formats: about 3 s of compiler time per file, most of a full build. So every file uses the
// plain headers, and this file instantiates what fmt's own src/format.cc does (fmt 9.1, the
// version Debian 12 has), from the format-inl.h that libfmt-dev installs for this purpose.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

#ifndef FMT_STATIC_THOUSANDS_SEPARATOR
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
