#include "zibert/base/random.hpp"

#include <string>
#include <utility>

#include "zibert/base/error.hpp"

namespace zibert {

void seeded_shuffle(std::vector<std::size_t>& items, std::uint64_t seed) {
  Rng rng(seed);
  for (std::size_t i = items.size(); i > 1; --i) {
    std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(items[i - 1], items[j]);
  }
}

std::vector<std::uint8_t> holdout_mask(std::size_t n, double fraction, std::uint64_t seed) {
  if (!(fraction >= 0 && fraction < 1))  // nan too
    throw Error("a hold-out fraction must be in [0, 1), not " + std::to_string(fraction));
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  seeded_shuffle(order, seed);
  std::size_t n_dev = static_cast<std::size_t>(double(n) * fraction);
  if (n_dev == 0 && n >= 2) n_dev = 1;
  std::vector<std::uint8_t> is_dev(n, 0);
  for (std::size_t i = 0; i < n_dev; ++i) is_dev[order[i]] = 1;
  return is_dev;
}

}  // namespace zibert
