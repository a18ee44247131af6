// Where a process's time to its first result goes (`spire run MODEL.spire --profile-startup`, embed_demo
// --profile-startup, spire_startup_profile() in the C API).
//
// Start-up is a property of the process, not of one object: the Vulkan instance and the CUDA driver are per process,
// and a device is opened before any model exists. So whoever does the work records its phase here, process-wide, and
// the first finished step of any plan (PlanExecutor) closes the profile: what comes later is running, not starting,
// and is not recorded (so a long-lived process does not grow the list).
//
// Phases are sequential and do not overlap, so their wall times sum to no more than the total since the process
// started. A phase may list parts (work inside it, or on other threads during it) with their own times; parts are
// shown, never summed.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace spire::rt::startup {

struct Part {
  std::string name;
  double ms = 0;
  std::string detail;  // counts, sizes, cache hits
};

struct Phase {
  std::string name;
  double ms = 0;
  std::string detail;
  std::vector<Part> parts;
};

struct Profile {
  std::vector<Phase> phases;
  bool closed = false;    // the first result is there
  double total_ms = 0;    // process start to the first result (closed), or to now
};

// Milliseconds since the kernel started this process (/proc/self/stat, in clock ticks of 10 ms: the start is
// rounded down, so this is never less than the true figure); 0 where that cannot be read.
double ms_since_process_start();

// Records a phase (dropped once the profile is closed). Thread-safe.
void record(Phase phase);
// The first result is there: the total is taken now and later phases are dropped. Only the first call counts.
void close();
// A copy of what was recorded so far.
Profile snapshot();
// The profile as text, one line a phase (parts indented beneath), then the time outside the phases and the total:
//   startup phase                               wall ms  detail
//   device opened (vulkan:0)                       41.2  ...
//   ...
//   outside these phases                          103.9  process start, loading libraries, the caller's own work
//   total since process start                     310.0  to the first result
std::string report(const Profile& p);

// Times a phase from construction to record() (or destruction, when record() was not called: the phase is then
// recorded as it stands, so a phase that throws still shows).
class PhaseTimer {
 public:
  explicit PhaseTimer(std::string name);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  void detail(std::string text) { phase_.detail = std::move(text); }
  void part(std::string name, double ms, std::string detail = {}) {
    phase_.parts.push_back({std::move(name), ms, std::move(detail)});
  }
  double elapsed_ms() const;
  void record();

 private:
  Phase phase_;
  std::chrono::steady_clock::time_point start_;
  bool recorded_ = false;
};

// Wall milliseconds since `start`, for parts timed by hand.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace spire::rt::startup
