#include "zibert/train/data_parallel.hpp"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <tuple>
#include <utility>

#include "zibert/base/error.hpp"
#include "zibert/base/world.hpp"

namespace zibert {

template <class T>
DataParallel<T>::DataParallel(int parts, int rounds)
    : parts_(parts > 0 ? parts : omp_get_max_threads()), rounds_(std::max(rounds, 1)) {
  if (rounds_ > 1 && World::get().distributed())
    throw Error("gradient accumulation runs in one process; under mpirun the ranks already share the batch");
}

template <class T>
Index DataParallel<T>::rounds_for(Index rows, Index parts) const {
  return std::max<Index>(1, std::min<Index>(rounds_, rows / std::max<Index>(parts, 1)));
}

template <class T>
template <class Part>
T DataParallel<T>::run(Bert<T>& net, Index parts, Index rounds, const Part& part) {
  parts = std::max<Index>(parts, 1);
  const World& world = World::get();
  // This rank's parts of the batch: [first, last) of the world's `parts`.
  const Index first = std::min<Index>(parts, Index(world.rank()) * parts_);
  const Index last = std::min<Index>(parts, first + parts_);
  const Index slots = std::max<Index>(last - first, 1);  // replicas, caches and threads this rank needs
  if (caches_.size() < static_cast<std::size_t>(slots)) caches_.resize(static_cast<std::size_t>(slots));
  losses_.resize(static_cast<std::size_t>(parts * rounds));
  weights_.resize(static_cast<std::size_t>(parts * rounds));
  if (parts == 1 && rounds == 1 && !world.distributed()) {
    net.zero_grad();
    return part(0, net, caches_[0]).first;
  }
  // One round in one process: part 0 runs on net itself, into net's gradient,
  // which the sum below then weights in place: one parameter-sized array
  // fewer. Rounds accumulate in net's gradient and ranks sum replicas in the
  // world's order, so there every part has a replica of its own.
  const bool direct = rounds == 1 && !world.distributed();
  const Index own = direct ? slots - 1 : slots;
  // Replicas read net's weights in place: rebuild them when those move.
  if (bound_ != net.params().data() || replicas_.size() < static_cast<std::size_t>(own) ||
      (!replicas_.empty() && replicas_.front().grads().size() != net.params().size())) {
    replicas_.clear();
    for (Index p = 0; p < own; ++p) replicas_.push_back(Bert<T>::replica(net));
    bound_ = net.params().data();
  }
  auto replica = [&](Index p) -> Bert<T>& {
    if (direct) return p == first ? net : replicas_[p - first - 1];
    return replicas_[p - first];
  };
  part_grads_.resize(static_cast<std::size_t>(parts));
  for (Index p = first; p < last; ++p) part_grads_[p - first] = replica(p).grads().data();
  std::vector<T>& losses = losses_;
  std::vector<T>& weights = weights_;
  AlignedVector<T>& grads = net.grads();
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(grads.size());
  T loss = 0;
  for (Index round = 0; round < rounds; ++round) {
    const Index k0 = round * parts;  // this round's first piece
    std::exception_ptr error;
    auto run_part = [&](Index p) {
      try {
        Bert<T>& r = replica(p);
        r.zero_grad();
        std::tie(losses[k0 + p], weights[k0 + p]) = part(k0 + p, r, caches_[p - first]);
      } catch (...) {
#pragma omp critical(zibert_data_parallel_error)
        if (!error) error = std::current_exception();
      }
    };
    if (slots == 1) {  // one thread: no OpenMP team (whose setup allocates)
      run_part(first);
    } else {
#pragma omp parallel for num_threads(static_cast<int>(slots)) schedule(static, 1)
      for (Index p = first; p < last; ++p) run_part(p);
    }
    if (error) std::rethrow_exception(error);
    if (world.distributed()) break;  // one round; reduce_over_ranks sums
    loss = add_losses(loss, k0, k0 + parts);
    if (!std::isfinite(loss)) return loss;
    const T* weight = weights.data() + k0;
    const T* const* part_grads = part_grads_.data();  // part 0's is grads itself when direct
    const bool first_round = round == 0;
#pragma omp parallel for num_threads(static_cast<int>(parts)) schedule(static) if (parts > 1)
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      T sum = first_round ? T(0) : grads[i];
      for (Index p = 0; p < parts; ++p) sum += weight[p] * part_grads[p][i];
      grads[i] = sum;
    }
  }
  if (world.distributed()) {
    const auto start = std::chrono::steady_clock::now();
    const T reduced = reduce_over_ranks(net, first, last);
    reduce_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return reduced;
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
      for (Index p = first; p < last; ++p) s += weights_[p] * part_grads_[p - first][i];
      sum[i] = s;
    }
  });
  return loss;
}

template <class T>
T DataParallel<T>::train(Bert<T>& net, const Batch& batch, const DropoutRng* rng) {
  const Index parts = std::min<Index>(world_parts(), batch.size), rounds = rounds_for(batch.size, parts);
  const Index pieces = parts * rounds;
  pieces_.resize(static_cast<std::size_t>(std::max<Index>(pieces, 1)));
  for (Index k = 0; k < pieces; ++k) {
    const Index b0 = batch.size * k / pieces, b1 = batch.size * (k + 1) / pieces;
    batch.part_into(b0, b1 - b0, pieces_[k]);
  }
  return run(net, parts, rounds, [&](Index k, Bert<T>& r, ModelCache<T>& cache) {
    const Batch& piece = pieces <= 1 ? batch : pieces_[k];
    const T loss = r.forward(piece, cache, rng);
    if (std::isfinite(loss)) r.backward(piece, cache);
    return std::pair<T, T>(loss, T(piece.size) / T(batch.size));
  });
}

template <class T>
T DataParallel<T>::train_mlm(Bert<T>& net, const MaskedBatch& batch, const DropoutRng* rng) {
  const Index parts = std::min<Index>(world_parts(), batch.batch.size);
  const Index rounds = rounds_for(batch.batch.size, parts), pieces = parts * rounds;
  masked_pieces_.resize(static_cast<std::size_t>(std::max<Index>(pieces, 1)));
  for (Index k = 0; k < pieces; ++k) {
    const Index b0 = batch.batch.size * k / pieces, b1 = batch.batch.size * (k + 1) / pieces;
    batch.part_into(b0, b1 - b0, masked_pieces_[k]);
  }
  const T chosen = T(std::max<std::size_t>(batch.positions.size(), 1));
  return run(net, parts, rounds, [&](Index k, Bert<T>& r, ModelCache<T>& cache) {
    const MaskedBatch& piece = pieces <= 1 ? batch : masked_pieces_[k];
    const T loss = r.forward_mlm(piece, cache, rng);
    if (std::isfinite(loss)) r.backward_mlm(piece, cache);
    return std::pair<T, T>(loss, T(piece.positions.size()) / chosen);
  });
}

template class DataParallel<ZIBERT_REAL>;

}  // namespace zibert
