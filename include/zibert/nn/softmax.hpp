// The softmax kernels of attention: rows of scores with [PAD] keys masked,
// vectorised (AVX-512 with Eigen's exp where the build has it).
#pragma once
#include <cstdint>

#include "zibert/nn/tensor.hpp"

namespace zibert {

// Softmax over each row of scale · scores with [PAD] keys (valid[j] == 0)
// weighted 0, in place; with `sums`, each row is left unnormalised and its
// sum written to sums[i]. [PAD] keys normally trail the text, so the common
// case is a softmax over a prefix, vectorised, each row with the same
// operations in the same order however many rows come along. Returns how
// many leading keys can carry weight (all after them are [PAD]): the
// prefix, or every key.
template <class T>
Index masked_softmax(Ref<T> p, const std::uint8_t* valid, T scale, T* sums = nullptr);

}  // namespace zibert
