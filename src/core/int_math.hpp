// Division of non-negative integers by a shift and a mask where the divisor is a power of
// two: the parallel degrees, group sizes and domain sizes almost always are, and the plan
// checks and group placements run on every evaluation of the search (an integer division
// costs tens of cycles). The same results as / and % for a >= 0, b > 0.
#pragma once
#include <bit>
#include <cstdint>

namespace shardwise {

constexpr bool is_pow2(std::int64_t b) { return b > 0 && (b & (b - 1)) == 0; }
constexpr std::int64_t div_nn(std::int64_t a, std::int64_t b) {
  return is_pow2(b) ? a >> std::countr_zero(static_cast<std::uint64_t>(b)) : a / b;
}
constexpr std::int64_t mod_nn(std::int64_t a, std::int64_t b) { return is_pow2(b) ? a & (b - 1) : a % b; }
// Whether d divides n (n >= 0, d > 0).
constexpr bool divides(std::int64_t d, std::int64_t n) { return mod_nn(n, d) == 0; }

static_assert(div_nn(7168, 64) == 112 && mod_nn(7168, 48) == 7168 % 48 && divides(8, 4096) && !divides(3, 4096) && div_nn(10, 3) == 3);

}  // namespace shardwise
