// The only source of randomness in shardwise: an explicitly seeded generator
// (xoshiro256** seeded through SplitMix64). No global state: every user owns one.
#pragma once
#include <cstdint>

namespace shardwise {

class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next_u64();
  // Uniform in [0, 1).
  double uniform();
  // Uniform integer in [0, n), n > 0, without modulo bias.
  std::uint64_t below(std::uint64_t n);
  // An independent stream derived from this seed and a stream index, so parallel
  // workers get reproducible streams whatever the thread count.
  [[nodiscard]] Rng fork(std::uint64_t stream) const;

 private:
  std::uint64_t s_[4];
  std::uint64_t seed_;
};

}  // namespace shardwise
