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
// Seconds since start, on the steady clock: what runs and benchmarks time with.
double seconds_since(std::chrono::steady_clock::time_point start);

class LineSource;

// Progress through a streamed input on stderr (classify, embed): the bytes
// read of the file's size, lines/s and the ETA; for input of unknown size
// (a pipe), the lines and lines/s. On a terminal one line rewritten in place
// at most 5 times a second and cleared at the end (or when an error unwinds
// past it); elsewhere, when forced, a plain line a second and a last one.
class InputProgress {
 public:
  // enabled: --progress, or stderr is a terminal (and the input is not a
  // terminal being typed into).
  static bool wanted(bool forced, const LineSource& src);
  static bool wanted(bool forced);  // no streamed input: --progress, or stderr is a terminal
  explicit InputProgress(bool enabled);
  InputProgress(const InputProgress&) = delete;
  InputProgress& operator=(const InputProgress&) = delete;
  ~InputProgress();
  void update(const LineSource& src, std::int64_t lines);  // lines: read so far from src
  void finish(const LineSource& src, std::int64_t lines);  // src is done: clear (or a last plain line)
  // The same for work counted in texts (eval): done of total, texts/s, ETA.
  void update(const std::string& name, std::int64_t done, std::int64_t total);
  void finish(const std::string& name, std::int64_t done, std::int64_t total);

 private:
  bool due();  // enabled, and the last line is old enough to redraw
  std::string line_of(const LineSource& src, std::int64_t lines) const;
  std::string line_of(const std::string& name, std::int64_t done, std::int64_t total) const;
  void print(const std::string& line, bool last);
  void end(const std::string& last_line);
  bool enabled_, tty_, shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace zibert
