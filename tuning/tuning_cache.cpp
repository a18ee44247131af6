#include "tuning/tuning_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "runtime/cache_dir.h"

namespace spire::tuning {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHeader = "# spire tuning cache 1";
constexpr size_t kFields = 9;

// Fields are tab-separated and entries line-separated: neither may appear inside a field.
std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    size_t next = line.find(sep, at);
    out.push_back(line.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

// A time in milliseconds; "inf" too where `may_be_inf` (a heuristic that could not run on the device).
double parse_ms(const std::string& text, const std::string& what, bool may_be_inf = false) {
  if (may_be_inf && text == "inf") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0)
    throw std::runtime_error(fmt::format("{} '{}' is not a time in milliseconds", what, text));
  return v;
}

// The whole file, or nullopt when it does not exist; throws std::runtime_error when it cannot be read.
std::optional<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot open it: {}", std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw std::runtime_error("a read error");
  return s.str();
}

// Temporary files of concurrent saves in one process (threads) must not share a name either.
std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

DeviceKey DeviceKey::of(const rt::DeviceInfo& info) {
  return DeviceKey{std::string(rt::backend_name(info.backend)), clean(info.name), clean(info.driver)};
}

std::string TuningCache::default_path() {
  const fs::path dir = rt::cache_dir();  // the folder every spire cache shares
  return dir.empty() ? "spire-tuning.txt" : (dir / "tuning.txt").string();
}

TuningCache::TuningCache(std::string path, std::FILE* warn) : path_(std::move(path)), warn_(warn) {
  try {
    if (auto text = read_file(path_)) entries_ = parse(*text);
  } catch (const std::exception& e) {
    warn_once(fmt::format("ignoring the tuning cache {}: {} (it is rewritten on the next --tune)", path_, e.what()));
  }
}

void TuningCache::warn_once(const std::string& message) {
  if (warned_ || !warn_) return;
  warned_ = true;
  std::fprintf(warn_, "spire: warning: %s\n", message.c_str());
}

const CacheEntry* TuningCache::find(const DeviceKey& device, const lowering::TuningKey& key) const {
  auto it = entries_.find({device, key});
  return it == entries_.end() ? nullptr : &it->second;
}

void TuningCache::put(CacheEntry e) {
  auto k = std::make_pair(e.device, e.key);
  entries_[k] = e;
  unsaved_[k] = std::move(e);
}

lowering::MapTuningChoices TuningCache::choices_for(const rt::DeviceInfo& info) const {
  const DeviceKey device = DeviceKey::of(info);
  lowering::MapTuningChoices out;
  for (const auto& [k, e] : entries_)
    if (k.first == device) out.configs[k.second] = e.config;
  return out;
}

std::string TuningCache::format(const Entries& entries) {
  std::string out = std::string(kHeader) + "\n";
  out += "# backend, device, driver, template, shape, dtype, config, median ms, heuristic's median ms (tab-separated)\n";
  for (const auto& [k, e] : entries)
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.6g}\t{:.6g}\n", clean(e.device.backend), clean(e.device.name),
                       clean(e.device.driver), clean(e.key.op), clean(e.key.shape), clean(e.key.dtype),
                       e.config.text(), e.ms, e.heuristic_ms);
  return out;
}

TuningCache::Entries TuningCache::parse(const std::string& text) {
  std::vector<std::string> lines = split(text, '\n');
  if (lines.empty() || lines[0] != kHeader)
    throw std::runtime_error(fmt::format("its first line is not '{}'", kHeader));
  Entries out;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty() || line[0] == '#') continue;
    try {
      std::vector<std::string> f = split(line, '\t');
      if (f.size() != kFields) throw std::runtime_error(fmt::format("{} fields instead of {}", f.size(), kFields));
      for (size_t j : {0, 1, 3, 4, 5})
        if (f[j].empty()) throw std::runtime_error(fmt::format("field {} is empty", j + 1));
      CacheEntry e;
      e.device = {f[0], f[1], f[2]};
      e.key = {f[3], f[4], f[5]};
      try {
        e.config = lowering::heavy::Config::parse(f[6]);
      } catch (const std::invalid_argument& err) {
        throw std::runtime_error(err.what());
      }
      e.ms = parse_ms(f[7], "the time");
      e.heuristic_ms = parse_ms(f[8], "the heuristic's time", true);
      out[{e.device, e.key}] = std::move(e);
    } catch (const std::runtime_error& err) {
      throw std::runtime_error(fmt::format("line {}: {}", i + 1, err.what()));
    }
  }
  return out;
}

void TuningCache::save() {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(fmt::format("cannot write the tuning cache {}: {}", path_, why));
  };
  fs::path dir = fs::path(path_).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) fail(fmt::format("cannot create {}: {}", dir.string(), ec.message()));

  // Everything from reading the file to renaming the new one happens under the lock, so a concurrent save
  // cannot slip in between and lose this one's entries or its own.
  const std::string lock_path = path_ + ".lock";
  int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0) fail(fmt::format("cannot open {}: {}", lock_path, std::strerror(errno)));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing releases the flock
  } unlock{lock};
  while (::flock(lock, LOCK_EX) != 0)
    if (errno != EINTR) fail(fmt::format("cannot lock {}: {}", lock_path, std::strerror(errno)));

  Entries merged;
  try {
    if (auto text = read_file(path_)) merged = parse(*text);
  } catch (const std::exception& e) {
    warn_once(fmt::format("ignoring the tuning cache {}: {} (rewriting it)", path_, e.what()));
  }
  for (const auto& [k, e] : unsaved_) merged[k] = e;
  const std::string text = format(merged);

  const std::string temp = fmt::format("{}.tmp.{}.{}", path_, ::getpid(), g_temp_counter++);
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (!f) fail(fmt::format("cannot create {}: {}", temp, std::strerror(errno)));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fflush(f) == 0 && ok;
  ok = ::fsync(fileno(f)) == 0 && ok;  // the data is on disk before the name points at it
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), path_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temp.c_str());
    fail(why);
  }
  entries_ = std::move(merged);
  unsaved_.clear();
}

}  // namespace spire::tuning
