#include "zibert/base/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace zibert {

std::string format_duration(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  return buf;
}

Progress::Progress(bool quiet)
    : quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

void Progress::update(const StepStatus& st) {
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double eta = st.step > 0 ? elapsed / double(st.step) * double(st.total_steps - st.step) : 0.0;
  if (tty_) {
    if (now - last_print_ < std::chrono::milliseconds(100) && st.step != st.total_steps) return;
    constexpr int kWidth = 24;
    int filled = st.total_steps ? static_cast<int>(kWidth * st.step / st.total_steps) : kWidth;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r\033[Kepoch %lld/%lld [%s] step %lld/%lld  loss %.4f  lr %.2e  %.0f ex/s  ETA %s",
                 static_cast<long long>(st.epoch), static_cast<long long>(st.epochs), bar.c_str(),
                 static_cast<long long>(st.step), static_cast<long long>(st.total_steps), st.loss, st.lr,
                 st.examples_per_s, format_duration(eta).c_str());
    bar_shown_ = true;
  } else {
    // Plain lines: about twenty over the run, and at least every 30 s.
    std::int64_t every = std::max<std::int64_t>(1, st.total_steps / 20);
    bool due = st.step - last_step_printed_ >= every || now - last_print_ >= std::chrono::seconds(30) ||
               st.step == st.total_steps;
    if (!due) return;
    last_step_printed_ = st.step;
    std::fprintf(stderr, "epoch %lld/%lld step %lld/%lld loss %.4f lr %.2e %.0f ex/s ETA %s\n",
                 static_cast<long long>(st.epoch), static_cast<long long>(st.epochs),
                 static_cast<long long>(st.step), static_cast<long long>(st.total_steps), st.loss, st.lr,
                 st.examples_per_s, format_duration(eta).c_str());
  }
  std::fflush(stderr);
  last_print_ = now;
}

void Progress::message(const std::string& line) {
  if (quiet_) return;
  if (bar_shown_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  bar_shown_ = false;
}

void Progress::finish() {
  if (!quiet_ && bar_shown_) std::fputs("\n", stderr);
  bar_shown_ = false;
}

}  // namespace zibert
