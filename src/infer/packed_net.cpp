#include "zibert/infer/packed_net.hpp"

#include <omp.h>

#include "zibert/base/error.hpp"

namespace zibert {

template <class Matrix>
void PackedNet<Matrix>::apply(const Linear<float>& lin, const CRef<float>& x, Ref<float> y) const {
  for (const Twin& t : twins_)
    if (t.weight == lin.weight.value) return t.matrix.multiply(x, y, lin.bias.value, omp_get_max_threads());
  throw Error("a packed network's products: a Linear that is not the network's");
}

template class PackedNet<F32Matrix>;
template class PackedNet<Bf16Matrix>;

}  // namespace zibert
