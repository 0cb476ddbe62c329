// Data parallelism on a CPU: a batch is split into parts, one per thread, and
// each thread runs the whole model on its part with single-threaded matrix
// products. Small products stay efficient that way, where splitting each
// product across threads would spend the step on synchronisation.
#pragma once
#include <functional>
#include <vector>

#include "zibert/base/world.hpp"
#include "zibert/model/bert.hpp"

namespace zibert {

template <class T>
class DataParallel {
 public:
  // parts = 0: one per OpenMP thread. rounds > 1 accumulates gradients: a
  // batch is cut into rounds · parts pieces, and each round runs `parts` of
  // them at once, so only a piece's activations are held per thread. The
  // gradient is the whole batch's, up to float summation order. One process
  // only: over MPI ranks rounds must be 1.
  explicit DataParallel(int parts = 0, int rounds = 1);

  // Forward (with dropout when rng is given) and backward of the mean loss over
  // a labelled batch. net.grads() is overwritten with the gradient; the parts'
  // gradients are summed in part order, so the result depends on the number
  // of parts, never on timing. Dropout masks are those of the whole batch.
  // Returns the mean loss; when it is not finite the gradient is left unset.
  T train(Bert<T>& net, const Batch& batch, const DropoutRng* rng);
  // The same for the masked-LM loss of an encoder: the mean over the batch's
  // chosen positions, each part weighted by its share of them.
  T train_mlm(Bert<T>& net, const MaskedBatch& batch, const DropoutRng* rng);

  int parts() const { return parts_; }
  int rounds() const { return rounds_; }
  // The parts of a batch over every rank (World): parts() per rank.
  Index world_parts() const { return Index(parts_) * World::get().size(); }
  // Seconds spent so far summing over MPI ranks (waiting for the other ranks included).
  double reduce_seconds() const { return reduce_seconds_; }

 private:
  // part(k, replica, cache) runs forward and backward on piece k and returns
  // {loss, weight}; the loss is Σ weight·loss and the gradient the same sum,
  // in piece order. Pieces k = r·parts + p run round by round, parts at once.
  // Over MPI ranks (one round), each rank runs its own parts [first, last) of
  // the world's; reduce_over_ranks then sums them in part order.
  template <class Part>
  T run(Bert<T>& net, Index parts, Index rounds, const Part& part);
  // How many rounds a batch of this many rows (or chosen positions) takes,
  // and how many pieces that makes.
  Index rounds_for(Index rows, Index parts) const;
  T reduce_over_ranks(Bert<T>& net, Index first, Index last);
  // sum + Σ weight·loss over parts [first, last), one fused multiply-add per
  // part: the same roundings in one process and along the chain of ranks,
  // whatever the compiler contracts where (-march=native differs by CPU).
  T add_losses(T sum, Index first, Index last) const;

  int parts_, rounds_;
  const T* bound_ = nullptr;  // the parameters the replicas read
  std::vector<Bert<T>> replicas_;
  std::vector<ModelCache<T>> caches_;
  std::vector<Batch> pieces_;
  std::vector<MaskedBatch> masked_pieces_;
  std::vector<T> losses_, weights_;  // per part, kept so that a step allocates nothing
  std::vector<T*> part_grads_;       // this rank's parts' gradients, in part order
  double reduce_seconds_ = 0;
};

}  // namespace zibert
