// Message building without iostreams.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>
#include <type_traits>

namespace nccl_core {

// Messages are built with std::to_string, not iostreams: some toolchains
// link parts of libstdc++ statically into extensions, and numeric ostream
// output from that copy crashes (seen with torch 2.11 on the GPU hosts).
namespace detail {
inline void append(std::string& s, const std::string& v) { s += v; }
inline void append(std::string& s, const char* v) { s += v; }
inline void append(std::string& s, c10::ScalarType t) {
  s += "torch." + std::string(c10::getDtypeNames(t).first); // as Python spells it
}
inline void append(std::string& s, const c10::Device& d) { s += d.str(); }
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
void append(std::string& s, T v) {
  s += std::to_string(v);
}
} // namespace detail

template <class... A>
std::string concat(const A&... parts) {
  std::string s;
  (detail::append(s, parts), ...);
  return s;
}

} // namespace nccl_core
