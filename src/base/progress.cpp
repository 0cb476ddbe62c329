#include "zibert/base/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "zibert/base/line_source.hpp"

namespace zibert {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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

namespace {

std::string megabytes(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", double(bytes) / 1e6);
  return buf;
}

}  // namespace

bool InputProgress::wanted(bool forced, const LineSource& src) {
  return forced || (::isatty(STDERR_FILENO) == 1 && !(src.name() == "-" && ::isatty(STDIN_FILENO) == 1));
}

bool InputProgress::wanted(bool forced) { return forced || ::isatty(STDERR_FILENO) == 1; }

InputProgress::InputProgress(bool enabled)
    : enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()), last_(start_) {}

InputProgress::~InputProgress() {
  if (shown_ && tty_) std::fputs("\r\033[K", stderr);
}

bool InputProgress::due() {
  if (!enabled_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < (tty_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(1000))) return false;
  last_ = now;
  return true;
}

void InputProgress::update(const LineSource& src, std::int64_t lines) {
  if (due()) print(line_of(src, lines), false);
}

void InputProgress::update(const std::string& name, std::int64_t done, std::int64_t total) {
  if (due()) print(line_of(name, done, total), false);
}

void InputProgress::finish(const LineSource& src, std::int64_t lines) {
  if (enabled_) end(line_of(src, lines));
}

void InputProgress::finish(const std::string& name, std::int64_t done, std::int64_t total) {
  if (enabled_) end(line_of(name, done, total));
}

// A terminal's line is cleared; elsewhere the last line stays.
void InputProgress::end(const std::string& last_line) {
  if (tty_) {
    if (shown_) std::fputs("\r\033[K", stderr);
    shown_ = false;
  } else {
    print(last_line, true);
  }
  std::fflush(stderr);
  start_ = last_ = std::chrono::steady_clock::now();  // the next input starts its own count
}

std::string InputProgress::line_of(const std::string& name, std::int64_t done, std::int64_t total) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? double(done) / elapsed : 0.0;
  const double eta = rate > 0 ? double(total - done) / rate : 0.0;
  char line[512];
  std::snprintf(line, sizeof line, "%s: %lld of %lld texts (%.0f %%), %.0f texts/s, ETA %s", name.c_str(),
                static_cast<long long>(done), static_cast<long long>(total),
                total > 0 ? 100.0 * double(done) / double(total) : 100.0, rate, format_duration(eta).c_str());
  return line;
}

std::string InputProgress::line_of(const LineSource& src, std::int64_t lines) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? double(lines) / elapsed : 0.0;
  const std::string name = src.name() == "-" ? "(standard input)" : src.name();
  char line[512];
  if (src.size() > 0) {
    const double done = double(src.consumed()) / double(src.size());
    const double bytes_rate = elapsed > 0 ? double(src.consumed()) / elapsed : 0.0;
    const double eta = bytes_rate > 0 ? double(src.size() - src.consumed()) / bytes_rate : 0.0;
    std::snprintf(line, sizeof line, "%s: %s of %s (%.0f %%), %lld lines, %.0f lines/s, ETA %s", name.c_str(),
                  megabytes(src.consumed()).c_str(), megabytes(src.size()).c_str(), 100.0 * done,
                  static_cast<long long>(lines), rate, format_duration(eta).c_str());
  } else {
    std::snprintf(line, sizeof line, "%s: %lld lines, %.0f lines/s", name.c_str(), static_cast<long long>(lines), rate);
  }
  return line;
}

void InputProgress::print(const std::string& line, bool last) {
  if (tty_ && !last)
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else
    std::fprintf(stderr, "%s%s\n", line.c_str(), last ? ", done" : "");
  std::fflush(stderr);
  shown_ = tty_ && !last;
}

}  // namespace zibert
