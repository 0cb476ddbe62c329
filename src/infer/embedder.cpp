#include "zibert/infer/embedder.hpp"

#include "zibert/infer/window_plan.hpp"

namespace zibert {

Embedder::Embedder(const Model& model, Pool pool)
    : model_(model),
      pool_(pool),
      tables_(embedding_tables(model.net)),
      // Float32 multiplies by the weights in place: every row of the last
      // layer is needed, so the packing a pass does is a small share of it,
      // and packing once would cost a copy of the weights.
      products_(model, ModelProducts::Weights::in_place) {}

std::vector<float> Embedder::embed_ids(const std::vector<std::vector<std::int32_t>>& texts) {
  const Index c = model_.config.dim;
  const WindowPlan plan = plan_windows(texts, model_.config.max_len, model_.tokenizer.specials());
  if (tables_)
    for (const Window& w : plan.windows) tabulate(model_.net, *tables_, w.ids.data(), w.ids.size());
  std::vector<float> sums(texts.size() * static_cast<std::size_t>(c), 0.0f);  // (texts, C)
  std::vector<double> weights(texts.size(), 0.0);
  std::vector<float> window_vecs(plan.windows.size() * static_cast<std::size_t>(c));  // (windows, C)
  for_each_batch<float>(plan.passes.size(), caches_, [&](std::size_t b, InferenceCache<float>& cache) {
    const Batch& pass = plan.passes[b];
    const CMatMap<float> hidden = infer_hidden(model_.net, pass, cache, tables_.get(),
                                              products_.get());  // (N, C)
    for (std::size_t r = 0; r < plan.members[b].size(); ++r) {
      const std::size_t w = plan.members[b][r];
      const auto rows = static_cast<Index>(plan.windows[w].ids.size());
      Eigen::Map<Eigen::Matrix<float, 1, Eigen::Dynamic>> out(&window_vecs[w * c], c);
      const auto first = static_cast<Index>(r) * pass.seq;
      out = hidden.row(first);
      if (pool_ == Pool::cls) continue;
      // Row by row, in order: Eigen's colwise().sum() of a block may group the
      // additions by the size of the whole pass, which would make a text's
      // vector depend on the texts batched with it.
      for (Index i = 1; i < rows; ++i) out += hidden.row(first + i);
      out /= float(rows);
    }
  });
  // Windows into texts, in window order (a fixed order of summation); a
  // text of one window gets that window's vector as it is.
  std::vector<std::size_t> windows_of(texts.size(), 0);
  for (const Window& w : plan.windows) ++windows_of[w.text];
  for (std::size_t w = 0; w < plan.windows.size(); ++w) {
    const std::size_t t = plan.windows[w].text;
    const float weight = pool_ == Pool::mean && windows_of[t] > 1 ? float(plan.windows[w].ids.size()) : 1.0f;
    for (Index j = 0; j < c; ++j) sums[t * c + j] += weight * window_vecs[w * c + j];
    weights[t] += weight;
  }
  for (std::size_t t = 0; t < texts.size(); ++t)
    if (windows_of[t] > 1)
      for (Index j = 0; j < c; ++j) sums[t * c + j] /= float(weights[t]);
  return sums;
}

}  // namespace zibert
