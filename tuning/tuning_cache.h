// The persistent tuning cache: which config won for each (device, driver, template, shapes, dtype), so the
// next run uses it without timing anything.
//
// A text file, by default $SPIRE_CACHE_DIR/tuning.txt, else $XDG_CACHE_HOME/spire/tuning.txt, else
// ~/.cache/spire/tuning.txt (`--tuning-cache FILE` overrides). Its first line is "# spire tuning cache 1";
// every other line is a comment (#), blank, or one entry of nine tab-separated fields:
//
//   backend  device name  driver  template  shape  dtype  config  median ms  heuristic's median ms
//   vulkan   NVIDIA H100 80GB HBM3  NVIDIA 550.54.15  matmul  m64_k784_n120  f32  tile_m=64,...  0.0123  0.0201
//
// The device fields come from rt::DeviceInfo (backend, name, driver), so a result is never reused on another
// GPU, another backend of the same GPU or another driver. A file that does not read as this format (another
// version, a truncated line, garbage) is ignored with one warning and rewritten on the next save: it is
// only a cache. Saving takes an exclusive lock (flock on FILE.lock), re-reads the file, adds this process's
// new entries, writes a temporary file in the same folder and renames it over FILE: readers never see a
// partial file, and two processes saving at once both keep their entries.
#pragma once

#include <compare>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "kernels/tuning_config.h"
#include "lowering/tuning_choices.h"
#include "runtime/device.h"

namespace spire::tuning {

struct DeviceKey {
  std::string backend;  // "vulkan", "cuda"
  std::string name;     // rt::DeviceInfo::name
  std::string driver;   // rt::DeviceInfo::driver
  static DeviceKey of(const rt::DeviceInfo& info);  // tabs and line breaks become spaces
  friend auto operator<=>(const DeviceKey&, const DeviceKey&) = default;
};

struct CacheEntry {
  DeviceKey device;
  lowering::TuningKey key;
  lowering::heavy::Config config;
  double ms = 0;            // the winner's median device time when it was tuned
  double heuristic_ms = 0;  // the heuristic config's, timed in the same run (infinity: it could not run)
};

class TuningCache {
 public:
  // $SPIRE_CACHE_DIR/tuning.txt, else $XDG_CACHE_HOME/spire/tuning.txt, else $HOME/.cache/spire/tuning.txt
  // (else ./spire-tuning.txt where not even HOME is set).
  static std::string default_path();

  // Reads `path`: a missing file is an empty cache; an unreadable or malformed one is ignored with one
  // warning on `warn` (nullptr: silent).
  explicit TuningCache(std::string path, std::FILE* warn = stderr);

  const std::string& path() const { return path_; }
  size_t size() const { return entries_.size(); }

  const CacheEntry* find(const DeviceKey& device, const lowering::TuningKey& key) const;
  // Adds or replaces the entry for its device and key; save() writes it.
  void put(CacheEntry e);

  // Writes the file as described above (creating its folder), then holds the merged entries. Throws
  // std::runtime_error naming the file when it cannot be written.
  void save();

  // Every entry of one device, for CompileOptions::tuning.
  lowering::MapTuningChoices choices_for(const rt::DeviceInfo& info) const;

  // The file's text for these entries, and the entries a text holds (std::runtime_error naming the line for
  // anything malformed). Exposed for tests.
  using Entries = std::map<std::pair<DeviceKey, lowering::TuningKey>, CacheEntry>;
  static std::string format(const Entries& entries);
  static Entries parse(const std::string& text);

 private:
  void warn_once(const std::string& message);

  std::string path_;
  std::FILE* warn_;
  bool warned_ = false;
  Entries entries_;
  Entries unsaved_;  // put() since the last save(): what save() adds to the file
};

}  // namespace spire::tuning
