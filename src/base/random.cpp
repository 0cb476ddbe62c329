#include "zibert/base/random.hpp"

#include <utility>

namespace zibert {

void seeded_shuffle(std::vector<std::size_t>& items, std::uint64_t seed) {
  Rng rng(seed);
  for (std::size_t i = items.size(); i > 1; --i) {
    std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(items[i - 1], items[j]);
  }
}

}  // namespace zibert
