#include "zibert/train/pretrainer.hpp"

#include <omp.h>

#include <cmath>
#include <cstdio>

#include "zibert/model/batch.hpp"
#include "zibert/train/loop.hpp"
#include "zibert/train/masking.hpp"
#include "zibert/train/packing.hpp"

namespace zibert {
namespace {

// Dev masks are drawn once, with this key in place of a step, so that every
// epoch is scored on the same chosen tokens.
constexpr std::uint64_t kDevMaskKey = 0xDE7DE7DE7ULL;
constexpr std::size_t kDevBatch = 64;

// The corpora's lines, normalised and tokenised, packed into sequences.
SequenceSet pack_corpora(const std::vector<const Corpus*>& corpora, const Tokenizer& tokenizer, std::int64_t max_len,
                         std::int64_t* lines) {
  std::vector<std::vector<std::int32_t>> ids;
  for (const Corpus* c : corpora)
    for (const std::string& line : c->lines) ids.push_back(tokenizer.encode(line));
  if (lines) *lines = static_cast<std::int64_t>(ids.size());
  return packed_sequences(ids, max_len, tokenizer.specials());
}

// The dev sequences in fixed batches, each with its masks.
std::vector<MaskedBatch> dev_batches(const SequenceSet& dev, std::int64_t vocab_size, std::uint64_t seed) {
  std::vector<MaskedBatch> out;
  for (std::size_t first = 0; first < dev.seqs.size(); first += kDevBatch) {
    std::vector<std::size_t> members;
    for (std::size_t i = first; i < std::min(dev.seqs.size(), first + kDevBatch); ++i) members.push_back(i);
    Batch batch = batch_of(dev, members, false);
    batch.first = static_cast<Index>(first);  // each dev sequence's masks its own
    MaskedBatch m = mask_tokens(batch, vocab_size, dev.specials, seed, kDevMaskKey, kMaskRate);
    m.batch.first = 0;
    out.push_back(std::move(m));
  }
  return out;
}

class MaskedLmObjective : public Objective {
 public:
  MaskedLmObjective(SequenceSet train, std::vector<MaskedBatch> dev, std::int64_t vocab_size, std::uint64_t seed)
      : train_(std::move(train)), dev_(std::move(dev)), vocab_size_(vocab_size), seed_(seed) {}

  const std::vector<std::int64_t>& lengths() const override { return train_.lengths; }

  float gradient(Bert<float>& net, DataParallel<float>& runner, const std::vector<std::size_t>& members,
                 std::int64_t step, const DropoutRng& rng) override {
    masked_ = mask_tokens(batch_of(train_, members, false), vocab_size_, train_.specials, seed_,
                          static_cast<std::uint64_t>(step), kMaskRate);
    return runner.train_mlm(net, masked_, &rng);
  }

  // The mean cross-entropy over every chosen dev token, and how many of them
  // the model ranks first; batches in parallel, summed in batch order.
  DevScore evaluate(const Model& model) override {
    const auto n = static_cast<std::ptrdiff_t>(dev_.size());
    std::vector<double> loss(dev_.size()), right(dev_.size()), chosen(dev_.size());
    std::vector<ModelCache<float>> caches(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel for schedule(dynamic, 1)
    for (std::ptrdiff_t b = 0; b < n; ++b) {
      ModelCache<float>& cache = caches[static_cast<std::size_t>(omp_get_thread_num())];
      const MaskedBatch& m = dev_[b];
      const auto count = static_cast<Index>(m.positions.size());
      chosen[b] = double(count);
      if (count == 0) continue;
      loss[b] = double(model.net.forward_mlm(m, cache, nullptr)) * double(count);
      const MatMap<float> probs(cache.mlm.probs.data.data(), count, model.config.vocab_size);
      for (Index i = 0; i < count; ++i) {
        Index best = 0;
        probs.row(i).maxCoeff(&best);
        right[b] += best == m.targets[i];
      }
    }
    double sum_loss = 0, sum_right = 0, sum_chosen = 0;
    for (std::size_t b = 0; b < dev_.size(); ++b) {
      sum_loss += loss[b];
      sum_right += right[b];
      sum_chosen += chosen[b];
    }
    if (sum_chosen == 0) throw Error("the dev text has no character to mask (it is too short)");
    return {sum_loss / sum_chosen, sum_right / sum_chosen, 0.0};
  }

  bool better(const DevScore& now, const DevScore& best) const override { return now.loss < best.loss; }
  void describe(const DevScore& s, nlohmann::json& record) const override {
    record["dev_mlm_loss"] = s.loss;
    record["dev_mlm_accuracy"] = s.accuracy;
  }
  std::string summary(const DevScore& s) const override {
    char text[96];
    std::snprintf(text, sizeof text, "dev MLM loss %.4f  dev masked-token acc %.4f", s.loss, s.accuracy);
    return text;
  }

  std::size_t dev_tokens() const {
    std::size_t n = 0;
    for (const MaskedBatch& m : dev_) n += m.positions.size();
    return n;
  }

 private:
  const SequenceSet train_;
  const std::vector<MaskedBatch> dev_;
  std::int64_t vocab_size_;
  std::uint64_t seed_;
  MaskedBatch masked_;
};

// The encoder training starts from (see pretrain_encoder).
Model prepare_encoder(const std::vector<Corpus>& train, const TrainOptions& opt, const Model* base,
                           const Vocab* vocab_from) {
  Normalization norm{base ? base->tokenizer.normalization().lowercase : opt.lowercase, false};
  Vocab vocab;
  ModelConfig config = opt.shape;
  if (base) {
    vocab = base->tokenizer.vocab();
    config = base->config;
    config.dropout = opt.shape.dropout;
  } else if (vocab_from) {
    vocab = *vocab_from;
  } else {
    VocabBuilder builder;
    for (const Corpus& c : train)
      for (const std::string& line : c.lines) builder.add(normalize(line, norm));
    vocab = builder.build(opt.min_count, opt.max_vocab);
  }
  config.task = Task::mlm;
  config.labels = 0;
  const bool wordpiece = base && base->tokenizer.kind() == TokenizerKind::wordpiece;
  if (!wordpiece) config.vocab_size = vocab.size();
  if (config.vocab_size <= kNumSpecial) throw Error("the text has no character to learn from");
  Model model{config, wordpiece ? base->tokenizer : Tokenizer(std::move(vocab), norm), ClassifierPart{}, {},
              Bert<float>(config), std::nullopt};
  model.net.init_weights(opt.seed);
  if (base && base->training.is_object() && base->training.contains("origin"))
    model.training = {{"origin", base->training["origin"]}};
  if (base && base->config.task == Task::mlm)
    model.net.params() = base->net.params();
  else if (base)
    copy_encoder_weights(base->net, model.net);  // a classifier's encoder, a fresh head
  return model;
}

nlohmann::json pretraining_record(const std::vector<Corpus>& train, const Corpus& dev, std::int64_t lines,
                                  std::size_t sequences, std::size_t dev_sequences, std::size_t dev_tokens,
                                  const TrainOptions& opt, const Loop& loop, double dropout) {
  auto base_name = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  nlohmann::json texts = nlohmann::json::array();
  for (const Corpus& c : train) texts.push_back(base_name(c.name));
  const TrainState& s = loop.state();
  return {{"task", "mlm"},
          {"text", texts},
          {"train_lines", lines},
          {"train_sequences", sequences},
          {"dev", base_name(dev.name)},
          {"dev_sequences", dev_sequences},
          {"dev_masked_tokens", dev_tokens},
          {"mask_rate", kMaskRate},
          {"epochs", opt.epochs},
          {"steps", loop.total_steps()},
          {"best_epoch", s.best_epoch},
          {"dev_mlm_loss", s.best.loss},
          {"dev_mlm_accuracy", s.best.accuracy},
          {"batch", opt.batch},
          {"lr", opt.adam.lr},
          {"warmup", opt.warmup},
          {"weight_decay", opt.adam.weight_decay},
          {"clip_norm", opt.adam.clip_norm},
          {"dropout", dropout},
          {"seed", opt.seed},
          {"min_count", opt.min_count},
          {"max_vocab", opt.max_vocab},
          {"threads", world_threads(opt)},
          {"init", s.init},
          {"history", s.history},
          {"zibert_version", ZIBERT_VERSION}};
}

}  // namespace

Model pretrain_encoder(const std::vector<Corpus>& train, const Corpus& dev, const TrainOptions& opt,
                            Progress& progress, Model* init, const Vocab* vocab, Checkpoint* resume,
                            const TrainHooks& hooks) {
  if (train.empty()) throw Error("pretraining needs text");
  if (opt.epochs < 1 || opt.batch < 1 || opt.accumulate < 1)
    throw Error("epochs, batch and accumulate must be at least 1");
  const Model* base = resume ? &resume->model : init;
  const bool from_init = init != nullptr || (resume && resume->state().value("init", false));
  Model model = prepare_encoder(train, opt, base, vocab);
  std::vector<const Corpus*> train_ptrs;
  for (const Corpus& c : train) train_ptrs.push_back(&c);
  std::int64_t lines = 0;
  SequenceSet tr = pack_corpora(train_ptrs, model.tokenizer, model.config.max_len, &lines);
  SequenceSet dv = pack_corpora({&dev}, model.tokenizer, model.config.max_len, nullptr);
  const std::size_t sequences = tr.seqs.size(), dev_sequences = dv.seqs.size();
  if (sequences == 0) throw Error("the training text holds no characters");
  progress.message((resume ? "resuming pretraining on " : "pretraining on ") + std::to_string(lines) + " lines (" +
                   std::to_string(sequences) + " sequences of up to " + std::to_string(model.config.max_len) +
                   " tokens), dev " + std::to_string(dev_sequences) + ", vocabulary " +
                   std::to_string(model.config.vocab_size) + ", " + std::to_string(opt.threads) + " threads");
  MaskedLmObjective objective(std::move(tr), dev_batches(dv, model.config.vocab_size, opt.seed),
                              model.config.vocab_size, opt.seed);
  Loop loop(model, objective, opt, progress, hooks);
  if (resume) loop.restore(*resume);
  release_start(init, resume);
  loop.run(resume != nullptr, from_init);
  const nlohmann::json origin = model.training.is_object() ? model.training.value("origin", nlohmann::json()) : nlohmann::json();
  model.training = pretraining_record(train, dev, lines, sequences, dev_sequences, objective.dev_tokens(), opt, loop,
                                      model.config.dropout);
  if (opt.accumulate > 1) model.training["accumulate"] = opt.accumulate;
  if (!origin.is_null()) model.training["origin"] = origin;  // pretrained further from an imported checkpoint
  if (opt.run.is_object() && opt.run.contains("imported_defaults"))
    model.training["imported_defaults"] = opt.run["imported_defaults"];
  return model;
}

}  // namespace zibert
