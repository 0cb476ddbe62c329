// Training progress on stderr: a live bar with ETA on a terminal, plain
// periodic lines otherwise (logs, CI).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace zibert {

struct StepStatus {
  std::int64_t epoch = 0, epochs = 0;
  std::int64_t step = 0, total_steps = 0;  // step is 1-based
  double loss = 0, lr = 0, examples_per_s = 0;
};

class Progress {
 public:
  // quiet: print nothing. Otherwise the style follows isatty(stderr).
  explicit Progress(bool quiet = false);
  void update(const StepStatus& status);
  void message(const std::string& line);  // a line that stays, e.g. dev metrics
  void finish();

 private:
  bool quiet_, tty_;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point start_, last_print_;
  std::int64_t last_step_printed_ = 0;
};

std::string format_duration(double seconds);

}  // namespace zibert
