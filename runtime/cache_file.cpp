#include "runtime/cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "runtime/device.h"

namespace spire::rt {

namespace fs = std::filesystem;

namespace {

// Temporary files of concurrent writes from threads of one process must not share a name either.
std::atomic<uint64_t> g_temp_counter{0};

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<std::string> read_whole_file(const fs::path& path) {
  FileDescriptor f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Error(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw Error(fmt::format("cannot stat {}: {}", path.string(), std::strerror(errno)));
  std::string bytes;
  bytes.reserve(size_t(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(f.fd, chunk, sizeof(chunk));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
    }
    bytes.append(chunk, size_t(n));
  }
  return bytes;
}

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  auto fail = [&](const std::string& why) { return Error(fmt::format("cannot write {}: {}", path.string(), why)); };
  const fs::path dir = path.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw fail(fmt::format("cannot create the folder {}: {}", dir.string(), ec.message()));
  }
  // Unique per process and per write; O_EXCL refuses a leftover of a crashed writer that had the same pid.
  const fs::path temp = path.string() + fmt::format(".tmp.{}.{}", ::getpid(), g_temp_counter++);
  FileDescriptor f{::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
  if (f.fd < 0) throw fail(fmt::format("cannot create {}: {}", temp.string(), std::strerror(errno)));
  auto give_up = [&](const std::string& what) {
    std::string why = fmt::format("{}: {}", what, std::strerror(errno));
    ::close(f.fd);
    f.fd = -1;
    ::unlink(temp.c_str());
    return fail(why);
  };
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw give_up(fmt::format("writing {}", temp.string()));
    }
    done += size_t(n);
  }
  // The data must be on disk before the name points at it, or a crash could leave a complete-looking empty file.
  if (::fsync(f.fd) != 0) throw give_up(fmt::format("flushing {}", temp.string()));
  if (::close(f.fd) != 0) {
    f.fd = -1;
    std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw fail(fmt::format("closing {}: {}", temp.string(), why));
  }
  f.fd = -1;
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw fail(fmt::format("renaming {} over it: {}", temp.string(), why));
  }
}

}  // namespace spire::rt
