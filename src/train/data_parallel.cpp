#include "zibert/train/data_parallel.hpp"

#include <omp.h>

#include <cmath>
#include <exception>

namespace zibert {

template <class T>
DataParallel<T>::DataParallel(int parts) : parts_(parts > 0 ? parts : omp_get_max_threads()) {}

template <class T>
T DataParallel<T>::train(Bert<T>& net, const Batch& batch, const DropoutRng* rng) {
  const Index parts = std::min<Index>(parts_, batch.size);
  if (caches_.size() < static_cast<std::size_t>(std::max<Index>(parts, 1))) caches_.resize(std::max<Index>(parts, 1));
  if (parts <= 1) {
    net.zero_grad();
    T loss = net.forward(batch, caches_[0], rng);
    if (std::isfinite(loss)) net.backward(batch, caches_[0]);
    return loss;
  }
  // Replicas read net's weights in place: rebuild them when those move.
  if (bound_ != net.params().data() || replicas_.size() < static_cast<std::size_t>(parts) ||
      replicas_.front().grads().size() != net.params().size()) {
    replicas_.clear();
    for (Index p = 0; p < parts; ++p) replicas_.push_back(Bert<T>::replica(net));
    bound_ = net.params().data();
  }
  pieces_.resize(static_cast<std::size_t>(parts));
  for (Index p = 0; p < parts; ++p) {
    const Index b0 = batch.size * p / parts, b1 = batch.size * (p + 1) / parts;
    batch.part_into(b0, b1 - b0, pieces_[p]);
  }
  losses_.resize(static_cast<std::size_t>(parts));
  weights_.resize(static_cast<std::size_t>(parts));
  std::vector<T>& losses = losses_;
  std::exception_ptr error;
#pragma omp parallel for num_threads(static_cast<int>(parts)) schedule(static, 1)
  for (Index p = 0; p < parts; ++p) {
    try {
      Bert<T>& r = replicas_[p];
      r.zero_grad();
      losses[p] = r.forward(pieces_[p], caches_[p], rng);
      if (std::isfinite(losses[p])) r.backward(pieces_[p], caches_[p]);
    } catch (...) {
#pragma omp critical(zibert_data_parallel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);

  std::vector<T>& weight = weights_;
  T loss = 0;
  for (Index p = 0; p < parts; ++p) {
    weight[p] = T(pieces_[p].size) / T(batch.size);
    loss += weight[p] * losses[p];
  }
  if (!std::isfinite(loss)) return loss;
  AlignedVector<T>& grads = net.grads();
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(grads.size());
#pragma omp parallel for num_threads(static_cast<int>(parts)) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    T sum = 0;
    for (Index p = 0; p < parts; ++p) sum += weight[p] * replicas_[p].grads()[i];
    grads[i] = sum;
  }
  return loss;
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace zibert
