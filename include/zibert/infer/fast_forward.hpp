// The inference fast path: what predicting needs of the model, and no more.
#pragma once
#include <functional>
#include <vector>

#include "zibert/model/bert.hpp"

namespace zibert {

// Runs predict on each batch, the batches spread over the threads (each with
// a cache of its own), and hands every batch's (B, K) probabilities to take,
// which may be called from any thread but never twice at once for one index.
// tables: net's EmbeddingTables, or nullptr to multiply out the projections.
template <class T>
void predict_batches(const Bert<T>& net, const std::vector<Batch>& batches, std::vector<ModelCache<T>>& caches,
                     const std::function<void(std::size_t, const CMatMap<T>&)>& take,
                     const EmbeddingTables<T>* tables = nullptr);

}  // namespace zibert
