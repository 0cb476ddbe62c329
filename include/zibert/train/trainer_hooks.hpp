// How a caller stops a training run and watches its steps (the CLI's
// signals, the tests' fault injection), and how the run reports a stop.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "zibert/base/error.hpp"

namespace zibert {

// Training stopped by a signal after `step`; the checkpoint (if any) is saved.
struct Interrupted : Error {
  Interrupted(int signal, std::int64_t step, std::string checkpoint)
      : Error("interrupted"), signal(signal), step(step), checkpoint(std::move(checkpoint)) {}
  int signal;
  std::int64_t step;
  std::string checkpoint;
};

// What the caller (the CLI, or a test) hooks into the loop. Neither is an
// option of the run: they are seams.
struct TrainHooks {
  // Polled after every step: a signal number asks to stop (checkpoint, Interrupted).
  std::function<int()> stop_signal;
  // Called with each step's number (1-based) and its loss, before the loss
  // is checked; tests use it to raise a signal at an exact step or to make a
  // loss non-finite.
  std::function<void(std::int64_t step, float& loss)> after_step;
};

}  // namespace zibert
