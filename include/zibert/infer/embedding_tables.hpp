// The first layer's query, key and value projections of the embedding
// LayerNorm's output, tabulated. LayerNorm centres and scales each row: with
// x = w + p (word and position embedding), y = γ⊙(x − mean x)·r + β,
// r = 1/sqrt(var x + ε), so with A = Wqkv·diag(γ)
//   Wqkv y + b = r · (A(w − mean w) + A(p − mean p)) + (Wqkv β + b),
// as mean x = mean w + mean p. The two products are the same for every text:
// A(p − mean p) is computed for every position up front, A(w − mean w) for a
// vocabulary entry the first time it is needed (tabulate), and an inference
// pass gathers them per token instead of multiplying out. A model with token
// types adds type row 0 to every token: it is tabulated with the positions.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "zibert/model/bert.hpp"

namespace zibert {

template <class T>
struct EmbeddingTables {
  const T* weights = nullptr;         // the parameters they are computed from
  Index width = 0;                    // W: 3C, or 2C with tied projections
  std::unique_ptr<T[]> word;          // (vocab, W): A(w − mean w), row v valid once filled[v]
  std::vector<std::uint8_t> filled;   // (vocab)
  AlignedVector<T> pos;               // (max_len, W): A(p − mean p), p with type row 0; empty without positions
  AlignedVector<T> bias;              // (W): Wqkv β + b
  MatR<T> a;                          // (W, C): A, for the rows still to come
};

inline constexpr std::size_t kMaxTableBytes = std::size_t(256) << 20;

// EmbeddingTables for net's weights as they are now, with the positions'
// rows and of the vocabulary only [PAD]'s; nullptr when all their rows would
// take more than max_bytes. The weights must not change while they are used.
template <class T>
std::unique_ptr<EmbeddingTables<T>> embedding_tables(const Bert<T>& net, std::size_t max_bytes = kMaxTableBytes);

// Fills the rows of the vocabulary entries among ids[0, n) that tables
// lacks (C·W multiply-adds each, as much as one token's projection). A row
// gets the same value whenever, and with whichever others, it is computed,
// so what a text is predicted does not depend on what came before.
template <class T>
void tabulate(const Bert<T>& net, EmbeddingTables<T>& tables, const std::int32_t* ids, std::size_t n);

// Throws unless tables were computed from net's parameters.
template <class T>
void check_tables(const Bert<T>& net, const EmbeddingTables<T>& tables);

// proj (N, W) = the first layer's Q/K/V rows of the batch, gathered: row i is
// rstd[i]·(word[id] + pos[i mod T]) + bias. rstd (N) is the embedding
// LayerNorm's. Throws when a row the batch needs was not tabulated.
template <class T>
void gather_projections(const Bert<T>& net, const EmbeddingTables<T>& tables, const Batch& batch, const T* rstd,
                        Ref<T> proj);

}  // namespace zibert
