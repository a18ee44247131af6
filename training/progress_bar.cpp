#include "training/progress_bar.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace spire::training {

ProgressBar::ProgressBar(std::string label, uint64_t total, FILE* out, std::string unit)
    : label_(std::move(label)), unit_(std::move(unit)), total_(std::max<uint64_t>(total, 1)), out_(out), tty_(isatty(fileno(out)) != 0) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

double ProgressBar::items_per_second() const {
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return s > 0 ? double(done_) / s : 0;
}

void ProgressBar::update(uint64_t done, const std::string& status) {
  done_ = std::min(done, total_);
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(status, false);
  } else {
    int decile = int(done_ * 10 / total_);
    if (decile != last_decile_) {
      last_decile_ = decile;
      draw(status, false);
    }
  }
}

void ProgressBar::finish(const std::string& status) {
  done_ = total_;
  // In a log the 100% line may already be there; print it again only if the status changed it.
  if (tty_ || last_decile_ != 10 || status != last_status_) draw(status, true);
}

void ProgressBar::draw(const std::string& status, bool final) {
  last_status_ = status;
  constexpr int kWidth = 30;
  double frac = double(done_) / double(total_);
  int filled = int(frac * kWidth);
  std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '.');
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = fmt::format("{} [{}] {:3.0f}% {}/{} {:.0f} {}/s {:.1f}s{}{}", label_, bar, frac * 100, done_,
                                 total_, items_per_second(), unit_, secs, status.empty() ? "" : "  ", status);
  if (tty_)
    fmt::print(out_, "\r{}\033[K{}", line, final ? "\n" : "");
  else
    fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

}  // namespace spire::training
