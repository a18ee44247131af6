// A terminal progress bar for long work: fraction done, items per second, and a caller's status text
// (e.g. the running loss). On a terminal it redraws one line; in a log (not a TTY) it prints a line every
// 10% so CI logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace spire::training {

class ProgressBar {
 public:
  // `unit` names the items in the rate ("img" prints "img/s").
  ProgressBar(std::string label, uint64_t total, FILE* out = stderr, std::string unit = "img");
  // Sets the done count and redraws (at most ~10 times a second on a terminal).
  void update(uint64_t done, const std::string& status = {});
  // Draws the final state and ends the line.
  void finish(const std::string& status = {});
  double items_per_second() const;

 private:
  void draw(const std::string& status, bool final);
  std::string label_;
  std::string unit_;
  uint64_t total_;
  uint64_t done_ = 0;
  FILE* out_;
  bool tty_;
  int last_decile_ = -1;
  std::string last_status_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace spire::training
