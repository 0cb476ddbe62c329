// One portable random stream (splitmix64) for everything seeded: weights,
// shuffles, dropout. Unlike <random>'s distributions it gives the same numbers
// with any standard library, which byte-identical models rely on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zibert {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct Rng {
  std::uint64_t state;
  explicit Rng(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() { return splitmix64(state++ * 0x9E3779B97F4A7C15ULL); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

// Fisher–Yates with a splitmix64 stream: the same seed gives the same order
// with any standard library.
void seeded_shuffle(std::vector<std::size_t>& items, std::uint64_t seed);

// Which of n items a seeded hold-out of this fraction takes (1 = held out):
// at least one when n >= 2. Every dev split (train's, pretrain's) draws it so.
// Throws Error for a fraction outside [0, 1) or nan.
std::vector<std::uint8_t> holdout_mask(std::size_t n, double fraction, std::uint64_t seed);

}  // namespace zibert
