#include "runtime/startup_profile.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

namespace spire::rt::startup {

namespace {

std::mutex& profile_mutex() {
  static std::mutex m;
  return m;
}

Profile& the_profile() {
  static Profile p;
  return p;
}

}  // namespace

double ms_since_process_start() {
  std::ifstream in("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Field 2 is the command name in parentheses and may hold spaces: count fields from the last ')'. starttime is
  // field 22, the 20th after it: skip 19.
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close_paren + 1));
  std::string field;
  for (int i = 0; i < 19 && fields >> field; ++i) {
  }
  unsigned long long start_ticks = 0;
  if (!(fields >> start_ticks)) return 0;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (ticks_per_second <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return 0;
  const double now_ms = double(now.tv_sec) * 1e3 + double(now.tv_nsec) / 1e6;
  return now_ms - double(start_ticks) * 1e3 / double(ticks_per_second);
}

void record(Phase phase) {
  std::lock_guard lock(profile_mutex());
  Profile& p = the_profile();
  if (!p.closed) p.phases.push_back(std::move(phase));
}

void close() {
  const double total = ms_since_process_start();
  std::lock_guard lock(profile_mutex());
  Profile& p = the_profile();
  if (p.closed) return;
  p.closed = true;
  p.total_ms = total;
}

Profile snapshot() {
  std::lock_guard lock(profile_mutex());
  Profile p = the_profile();
  if (!p.closed) p.total_ms = ms_since_process_start();
  return p;
}

std::string report(const Profile& p) {
  std::string out = fmt::format("{:<44} {:>9}  {}\n", "startup phase", "wall ms", "detail");
  double sum = 0;
  for (const Phase& phase : p.phases) {
    out += fmt::format("{:<44} {:>9.1f}  {}\n", phase.name, phase.ms, phase.detail);
    for (const Part& part : phase.parts) out += fmt::format("  {:<42} {:>9.1f}  {}\n", part.name, part.ms, part.detail);
    sum += phase.ms;
  }
  out += fmt::format("{:<44} {:>9.1f}  {}\n", "outside these phases", p.total_ms - sum,
                     "process start, loading libraries, the caller's own work");
  out += fmt::format("{:<44} {:>9.1f}  {}\n", "total since process start", p.total_ms,
                     p.closed ? "to the first result" : "so far (no result yet)");
  return out;
}

PhaseTimer::PhaseTimer(std::string name) : start_(std::chrono::steady_clock::now()) { phase_.name = std::move(name); }

PhaseTimer::~PhaseTimer() {
  if (!recorded_) record();
}

double PhaseTimer::elapsed_ms() const { return ms_since(start_); }

void PhaseTimer::record() {
  phase_.ms = elapsed_ms();
  recorded_ = true;
  startup::record(std::move(phase_));
}

}  // namespace spire::rt::startup
