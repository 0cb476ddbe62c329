#include "zibert/train/loop.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "zibert/base/world.hpp"

namespace zibert {

float apply_step(Bert<float>& net, AdamW<float>& adam, float loss, double lr) {
  if (!std::isfinite(loss)) return loss;
  clip_grad_norm(net.grads(), adam.config().clip_norm);
  adam.step(net.params(), net.grads(), lr);
  return loss;
}

void release_start(Model* init, Checkpoint* resume) {
  auto release = [](auto& v) { std::decay_t<decltype(v)>().swap(v); };
  if (init) release(init->net.params());
  if (resume) {
    release(resume->model.net.params());
    release(resume->adam_m);
    release(resume->adam_v);
    release(resume->best);
  }
}

Loop::Loop(Model& model, Objective& objective, const TrainOptions& opt, Progress& progress,
           const TrainHooks& hooks)
    : model_(model), objective_(objective), opt_(opt), progress_(progress), hooks_(hooks),
      adam_(opt.adam, model.net.layout()), runner_(opt.threads, static_cast<int>(opt.accumulate)), best_params_(model.net.params()) {
  examples_ = static_cast<std::int64_t>(objective.lengths().size());
  state_.per_epoch = (examples_ + step_batch(opt) - 1) / step_batch(opt);
  total_ = state_.per_epoch * opt.epochs;
  warmup_ = static_cast<std::int64_t>(std::llround(opt.warmup * double(total_)));
}

void Loop::restore(const Checkpoint& resume) {
  const TrainState saved = TrainState::from_json(resume.state());
  if (saved.per_epoch != state_.per_epoch)
    throw Error("the training data differ from the checkpoint's (" + std::to_string(state_.per_epoch) +
                " batches per epoch, the checkpoint has " + std::to_string(saved.per_epoch) + ")");
  if (saved.epoch < 1 || saved.epoch > opt_.epochs || saved.batch < 0 || saved.batch > saved.per_epoch ||
      saved.step < 0 || saved.step > total_)
    throw Error("the checkpoint's training state is out of range");
  state_ = saved;
  adam_.m().assign(resume.adam_m.begin(), resume.adam_m.end());
  adam_.v().assign(resume.adam_v.begin(), resume.adam_v.end());
  adam_.set_steps(state_.step);
  best_params_.assign(resume.best.begin(), resume.best.end());
}

void Loop::run(bool resumed, bool from_init) {
  state_.init = from_init;
  open_log(resumed);
  started_ = Clock::now();
  examples_at_start_ = state_.examples_seen;
  steps_at_start_ = state_.step;
  for (std::int64_t epoch = state_.epoch; epoch <= opt_.epochs; ++epoch) {
    run_epoch(epoch);
    score_epoch(epoch);
  }
  progress_.finish();
  model_.net.params() = best_params_;
}

void Loop::open_log(bool append) {
  if (opt_.log_path.empty() || !World::get().leader()) return;  // over MPI, rank 0 writes the log
  log_.open(opt_.log_path, append ? std::ios::app : std::ios::trunc);
  if (!log_) throw Error(opt_.log_path + ": cannot open the log for writing");
}

double Loop::examples_per_s() const {
  const double secs = std::chrono::duration<double>(Clock::now() - started_).count();
  return secs > 0 ? double(state_.examples_seen - examples_at_start_) / secs : 0.0;
}

// The batches of the epoch in its seeded order, from where the state says.
void Loop::run_epoch(std::int64_t epoch) {
  std::uint64_t epoch_seed = opt_.seed * 1000003ULL + static_cast<std::uint64_t>(epoch);
  const auto plan = bucketed_batches(objective_.lengths(), static_cast<std::size_t>(step_batch(opt_)), &epoch_seed);
  for (auto bi = static_cast<std::size_t>(state_.batch); bi < plan.size(); ++bi) {
    const DropoutRng rng{opt_.seed, static_cast<std::uint64_t>(state_.step), model_.config.dropout, opt_.sound_only};
    lr_ = opt_.adam.lr * lr_multiplier(state_.step, warmup_, total_);
    float loss = objective_.gradient(model_.net, runner_, plan[bi], state_.step, rng);
    apply_step(model_.net, adam_, loss, lr_);
    if (hooks_.after_step) hooks_.after_step(state_.step + 1, loss);
    if (!std::isfinite(loss)) throw diverged(epoch);
    ++state_.step;
    ++state_.batch;
    const auto members = static_cast<std::int64_t>(plan[bi].size());
    state_.examples_seen += members;
    state_.epoch_loss += loss * double(members);
    progress_.update({epoch, opt_.epochs, state_.step, total_, loss, lr_, examples_per_s()});
    if (int sig = hooks_.stop_signal ? hooks_.stop_signal() : 0) {
      progress_.finish();
      if (!opt_.checkpoint_path.empty()) save();
      throw Interrupted(sig, state_.step, opt_.checkpoint_path);
    }
  }
}

Error Loop::diverged(std::int64_t epoch) const {
  std::string kept = opt_.checkpoint_path.empty() ? ""
                     : epoch > 1 ? "; the last good checkpoint, from the end of epoch " + std::to_string(epoch - 1) +
                                       ", is " + opt_.checkpoint_path
                                 : "; no checkpoint yet (the first epoch had not ended)";
  return Error("training diverged: the loss is not finite at step " + std::to_string(state_.step + 1) +
               " (try a lower --lr)" + kept);
}

// Scores the dev set, keeps the best epoch, logs, and checkpoints the start of the next.
void Loop::score_epoch(std::int64_t epoch) {
  const DevScore score = objective_.evaluate(model_);
  const bool improved = state_.best_epoch == 0 || objective_.better(score, state_.best);
  if (improved) {
    state_.best = score;
    state_.best_epoch = epoch;
    best_params_ = model_.net.params();
  }
  const double train_loss = state_.epoch_loss / double(examples_);
  nlohmann::json record = {{"epoch", epoch}, {"step", state_.step}, {"train_loss", train_loss}};
  objective_.describe(score, record);
  state_.history.push_back(record);
  if (log_.is_open()) {  // timings vary between runs, so they go to the log, not into the model
    record["lr"] = lr_;
    record["examples_per_s"] = examples_per_s();
    if (World::get().distributed())  // the gradient's sum over the ranks, waiting included
      record["reduce_ms_per_step"] = 1e3 * runner_.reduce_seconds() / double(std::max<std::int64_t>(state_.step - steps_at_start_, 1));
    log_ << record.dump() << '\n' << std::flush;
    if (!log_) throw Error(opt_.log_path + ": write failed");
  }
  char loss_text[64];
  std::snprintf(loss_text, sizeof loss_text, "  train loss %.4f  ", train_loss);
  progress_.message("epoch " + std::to_string(epoch) + "/" + std::to_string(opt_.epochs) + loss_text +
                    objective_.summary(score) + (improved ? "  (best)" : ""));
  state_.epoch = epoch + 1;
  state_.batch = 0;
  state_.epoch_loss = 0;
  // Each finished epoch is a point to resume from, also after a crash.
  if (!opt_.checkpoint_path.empty() && epoch < opt_.epochs) save();
}

void Loop::save() {
  if (!World::get().leader()) return;  // over MPI, rank 0 writes the checkpoint
  save_checkpoint(opt_.checkpoint_path, model_, {{"checkpoint", state_.to_json(opt_)}}, adam_.m(), adam_.v(),
                  best_params_);
}

}  // namespace zibert
