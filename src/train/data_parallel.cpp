#include "zibert/train/data_parallel.hpp"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <tuple>
#include <utility>

#include "zibert/base/world.hpp"

namespace zibert {

template <class T>
DataParallel<T>::DataParallel(int parts) : parts_(parts > 0 ? parts : omp_get_max_threads()) {}

template <class T>
template <class Part>
T DataParallel<T>::run(Bert<T>& net, Index parts, const Part& part) {
  parts = std::max<Index>(parts, 1);
  const World& world = World::get();
  // This rank's parts of the batch: [first, last) of the world's `parts`.
  const Index first = std::min<Index>(parts, Index(world.rank()) * parts_);
  const Index last = std::min<Index>(parts, first + parts_);
  const Index slots = std::max<Index>(last - first, 1);  // replicas, caches and threads this rank needs
  if (caches_.size() < static_cast<std::size_t>(slots)) caches_.resize(static_cast<std::size_t>(slots));
  losses_.resize(static_cast<std::size_t>(parts));
  weights_.resize(static_cast<std::size_t>(parts));
  if (parts == 1 && !world.distributed()) {
    net.zero_grad();
    return part(0, net, caches_[0]).first;
  }
  // Replicas read net's weights in place: rebuild them when those move.
  if (bound_ != net.params().data() || replicas_.size() < static_cast<std::size_t>(slots) ||
      replicas_.front().grads().size() != net.params().size()) {
    replicas_.clear();
    for (Index p = 0; p < slots; ++p) replicas_.push_back(Bert<T>::replica(net));
    bound_ = net.params().data();
  }
  std::vector<T>& losses = losses_;
  std::vector<T>& weight = weights_;
  std::exception_ptr error;
#pragma omp parallel for num_threads(static_cast<int>(slots)) schedule(static, 1)
  for (Index p = first; p < last; ++p) {
    try {
      Bert<T>& r = replicas_[p - first];
      r.zero_grad();
      std::tie(losses[p], weight[p]) = part(p, r, caches_[p - first]);
    } catch (...) {
#pragma omp critical(zibert_data_parallel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  if (world.distributed()) {
    const auto start = std::chrono::steady_clock::now();
    const T loss = reduce_over_ranks(net, first, last);
    reduce_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return loss;
  }
  const T loss = add_losses(T(0), 0, parts);
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

template <class T>
T DataParallel<T>::add_losses(T sum, Index first, Index last) const {
  for (Index p = first; p < last; ++p) {
    const std::size_t i = static_cast<std::size_t>(p);
    sum = std::fma(weights_[i], losses_[i], sum);
  }
  return sum;
}

// The loss and the gradient summed over every rank's parts [first, last),
// part by part in the world's order (World::chain_sum): the additions one
// process of that many parts makes, so the result has its bits.
template <class T>
T DataParallel<T>::reduce_over_ranks(Bert<T>& net, Index first, Index last) {
  const World& world = World::get();
  T loss = 0;
  world.chain_sum<T>(&loss, 1, [&](T* sum) { *sum = add_losses(*sum, first, last); });
  if (!std::isfinite(loss)) return loss;
  AlignedVector<T>& grads = net.grads();
  std::fill(grads.begin(), grads.end(), T(0));
  world.chain_sum<T>(grads.data(), grads.size(), [&](T* sum) {
    const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(grads.size());
#pragma omp parallel for num_threads(static_cast<int>(std::max<Index>(last - first, 1))) schedule(static)
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      T s = sum[i];
      for (Index p = first; p < last; ++p) s += weights_[p] * replicas_[p - first].grads()[i];
      sum[i] = s;
    }
  });
  return loss;
}

template <class T>
T DataParallel<T>::train(Bert<T>& net, const Batch& batch, const DropoutRng* rng) {
  const Index parts = std::min<Index>(world_parts(), batch.size);
  pieces_.resize(static_cast<std::size_t>(std::max<Index>(parts, 1)));
  for (Index p = 0; p < parts; ++p) {
    const Index b0 = batch.size * p / parts, b1 = batch.size * (p + 1) / parts;
    batch.part_into(b0, b1 - b0, pieces_[p]);
  }
  return run(net, parts, [&](Index p, Bert<T>& r, ModelCache<T>& cache) {
    const Batch& piece = parts <= 1 ? batch : pieces_[p];
    const T loss = r.forward(piece, cache, rng);
    if (std::isfinite(loss)) r.backward(piece, cache);
    return std::pair<T, T>(loss, T(piece.size) / T(batch.size));
  });
}

template <class T>
T DataParallel<T>::train_mlm(Bert<T>& net, const MaskedBatch& batch, const DropoutRng* rng) {
  const Index parts = std::min<Index>(world_parts(), batch.batch.size);
  masked_pieces_.resize(static_cast<std::size_t>(std::max<Index>(parts, 1)));
  for (Index p = 0; p < parts; ++p) {
    const Index b0 = batch.batch.size * p / parts, b1 = batch.batch.size * (p + 1) / parts;
    batch.part_into(b0, b1 - b0, masked_pieces_[p]);
  }
  const T chosen = T(std::max<std::size_t>(batch.positions.size(), 1));
  return run(net, parts, [&](Index p, Bert<T>& r, ModelCache<T>& cache) {
    const MaskedBatch& piece = parts <= 1 ? batch : masked_pieces_[p];
    const T loss = r.forward_mlm(piece, cache, rng);
    if (std::isfinite(loss)) r.backward_mlm(piece, cache);
    return std::pair<T, T>(loss, T(piece.positions.size()) / chosen);
  });
}

template class DataParallel<ZIBERT_REAL>;

}  // namespace zibert
