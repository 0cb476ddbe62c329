#include "zibert/infer/bf16_net.hpp"

#include <omp.h>

#include "zibert/base/error.hpp"

namespace zibert {

Bf16Net::Bf16Net(const Bert<float>& net, Bf16Isa isa) {
  for (const Linear<float>* lin : network_linears<float>(net))
    twins_.push_back({lin->weight.value, Bf16Matrix(lin->weight.value, lin->weight.rows, lin->weight.cols, isa)});
}

void Bf16Net::apply(const Linear<float>& lin, const CRef<float>& x, Ref<float> y) const {
  for (const Twin& t : twins_)
    if (t.weight == lin.weight.value) return t.matrix.multiply(x, y, lin.bias.value, omp_get_max_threads());
  throw Error("Bf16Net: a Linear that is not the network's");
}

}  // namespace zibert
