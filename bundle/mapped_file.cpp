#include "bundle/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "bundle/bundle.h"

namespace spire::bundle {

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw BundleNotFound(fmt::format("{}: cannot open the bundle ({})", path, std::strerror(errno)));
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!regular) {
    ::close(fd);
    throw BundleError(fmt::format("{}: not a spire bundle (not a regular file)", path));
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    // MAP_POPULATE: the pages are mapped in one go (the checksum reads them all next) rather than fault by fault.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    const int error = errno;
    ::close(fd);
    if (p == MAP_FAILED) throw BundleError(fmt::format("{}: cannot map the bundle ({})", path, std::strerror(error)));
    data_ = static_cast<const uint8_t*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace spire::bundle
