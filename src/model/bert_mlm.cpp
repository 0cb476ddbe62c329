// BertForMaskedLM's pass (Bert::forward_mlm, backward_mlm): the shared
// encoder, then the masked-LM head on the chosen rows, each forward next to
// its backward as in bert.cpp.
#include <algorithm>

#include "zibert/base/error.hpp"
#include "zibert/model/bert.hpp"

namespace zibert {

// ---- the masked-LM head: h = LN(GELU(x Wtᵀ + bt)); logits = h Eᵀ + b; loss = CE on the chosen rows

template <class T>
T Bert<T>::forward_mlm(const MaskedBatch& masked, ModelCache<T>& cache, const DropoutRng* given, LastRows last_rows) const {
  check_task(Task::mlm, "the masked-LM pass");
  const Batch& batch = masked.batch;
  const DropoutRng* rng = given != nullptr && given->p > 0 ? given : nullptr;
  const Index n = batch.size * batch.seq, c = config_.dim, v = config_.vocab_size;
  const auto m = static_cast<Index>(masked.positions.size());
  if (!masked.targets.empty() && masked.targets.size() != masked.positions.size())
    throw Error("masked batch: positions and targets differ in number");
  for (Index i = 0; i < m; ++i)
    if (masked.positions[i] < 0 || masked.positions[i] >= n || (i > 0 && masked.positions[i] <= masked.positions[i - 1]))
      throw Error("masked positions must be ascending rows of the batch");
  // The last layer computes the chosen rows only (their keys and values from every row).
  const bool rows_only = last_rows == LastRows::needed && m > 0 && config_.layers > 0 && !config_.tie_qk;
  if (rows_only) cache.last_rows.assign(masked.positions.begin(), masked.positions.end());
  encode(batch, rows_only, rng, cache);
  MlmCache<T>& mc = cache.mlm;
  const MatMap<T> last(cache.hidden.data.data() + config_.layers * n * c, rows_only ? m : n, c);  // (M or N, C)
  MatMap<T> x = mc.x.view(m, c);                                                                    // (M, C)
  for (Index i = 0; i < m; ++i) x.row(i) = last.row(rows_only ? i : masked.positions[i]);
  MatMap<T> pre = mc.pre.view(m, c), act = mc.act.view(m, c), h = mc.h.view(m, c);  // (M, C)
  mlm_.transform.forward(x, pre);
  gelu_forward<T>(pre, act);
  mlm_.ln.forward(act, h, mc.xhat.view(m, c), mc.rstd.view(m, 1));
  MatMap<T> logits = mc.logits.view(m, v), probs = mc.probs.view(m, v);  // (M, V)
  const Linear<T> decoder{mlm_.decoder, mlm_.bias};                       // the word embeddings when tied
  decoder.forward(h, logits);
  if (masked.targets.empty() || m == 0) {
    probs = logits;
    softmax_rows<T>(probs);
    return T(0);
  }
  for (std::int32_t t : masked.targets)
    if (t < 0 || t >= v) throw Error("masked target id out of range");
  return cross_entropy_forward<T>(logits, masked.targets.data(), probs);
}

template <class T>
void Bert<T>::backward_mlm(const MaskedBatch& masked, ModelCache<T>& cache) {
  if (grads_.empty()) throw Error("this model was loaded for inference only and cannot be trained");
  if (masked.positions.empty()) return;  // nothing chosen: no loss, no gradient
  if (masked.targets.empty()) throw Error("backward_mlm needs the masked tokens' targets");
  const Batch& batch = masked.batch;
  const Index n = cache.batch * cache.seq, c = config_.dim, v = config_.vocab_size;
  const auto m = static_cast<Index>(masked.positions.size());
  MlmCache<T>& mc = cache.mlm;
  MatMap<T> dlogits = mc.grad_logits.view(m, v);  // (M, V)
  cross_entropy_backward<T>(MatMap<T>(mc.probs.data.data(), m, v), masked.targets.data(), dlogits);
  MatMap<T> dh = mc.grad_h.view(m, c), dact = mc.grad_act.view(m, c), dx = mc.grad_x.view(m, c);  // (M, C)
  Ref<T> dh_ref(dh), dx_ref(dx);
  const Linear<T> decoder{mlm_.decoder, mlm_.bias};
  decoder.backward(MatMap<T>(mc.h.data.data(), m, c), dlogits, &dh_ref);  // dE += dlogitsᵀ h (tied: into the word embeddings)
  mlm_.ln.backward(dh, MatMap<T>(mc.xhat.data.data(), m, c), MatMap<T>(mc.rstd.data.data(), m, 1), dact,
                   cache.ln_scratch);
  gelu_backward<T>(MatMap<T>(mc.pre.data.data(), m, c), dact, dact);
  mlm_.transform.backward(MatMap<T>(mc.x.data.data(), m, c), dact, &dx_ref);
  // Into the last layer's output: its M rows, or the chosen ones of N with zeros elsewhere.
  if (cache.rows_only) {
    cache.grad_out.view(m, c) = dx;
  } else {
    MatMap<T> dy = cache.grad_out.view(n, c);
    dy.setZero();
    for (Index i = 0; i < m; ++i) dy.row(masked.positions[i]) += dx.row(i);
  }
  encode_backward(batch, cache);
}

template <class T>
void copy_encoder_weights(const Bert<T>& from, Bert<T>& to) {
  copy_weights(from, to, /*encoder_only=*/true);
}

template <class T>
void copy_weights(const Bert<T>& from, Bert<T>& to, bool encoder_only) {
  for (const TensorInfo& t : to.layout()) {
    // A pooler comes along when from has one: an imported encoder's pretrained
    // pooler, kept for fine-tuning as BertForSequenceClassification keeps it.
    const bool pooler = t.name.starts_with("bert.pooler.") &&
                        std::any_of(from.layout().begin(), from.layout().end(),
                                    [&](const TensorInfo& f) { return f.name == t.name; });
    if (encoder_only && !is_encoder_tensor(t.name) && !pooler) continue;
    const bool reading = t.name == "bert.embeddings.reading_embeddings.weight";
    if (reading && !from.config().readings) {  // a reading channel new to the model starts at zero
      std::fill_n(to.params().data() + t.offset, t.size, T(0));
      continue;
    }
    const TensorInfo& f = from.tensor(t.name);
    // Extended vocabularies (and their syllables) keep from's rows first.
    const bool more_rows = (t.name == "bert.embeddings.word_embeddings.weight" || reading) && f.shape.size() == 2 &&
                           t.shape.size() == 2 && f.shape[1] == t.shape[1] && f.shape[0] <= t.shape[0];
    if (f.shape != t.shape && !more_rows) throw Error("tensor " + t.name + " differs in shape between the models");
    std::copy_n(from.values() + f.offset, f.size, to.params().data() + t.offset);
  }
}

template ZIBERT_REAL Bert<ZIBERT_REAL>::forward_mlm(const MaskedBatch&, ModelCache<ZIBERT_REAL>&, const DropoutRng*,
                                                    LastRows) const;
template void Bert<ZIBERT_REAL>::backward_mlm(const MaskedBatch&, ModelCache<ZIBERT_REAL>&);
template void copy_encoder_weights<ZIBERT_REAL>(const Bert<ZIBERT_REAL>&, Bert<ZIBERT_REAL>&);
template void copy_weights<ZIBERT_REAL>(const Bert<ZIBERT_REAL>&, Bert<ZIBERT_REAL>&, bool);

}  // namespace zibert
