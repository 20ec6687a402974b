#include "core/rng.hpp"

namespace shardwise {
namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(std::uint64_t seed) : s_{}, seed_(seed) {
  std::uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

std::uint64_t Rng::below(std::uint64_t n) {
  // Lemire's rejection on the high product is overkill here; plain rejection
  // of the biased tail keeps it exact and simple.
  const std::uint64_t limit = ~0ULL - (~0ULL % n);
  std::uint64_t r;
  do r = next_u64(); while (r >= limit);
  return r % n;
}

Rng Rng::fork(std::uint64_t stream) const {
  std::uint64_t x = seed_ ^ (0xD1B54A32D192ED03ULL * (stream + 1));
  return Rng(splitmix64(x));
}

}  // namespace shardwise
