// A file mapped read-only into memory (mmap), so a bundle's 100 MB of weights are read in place, page by page as they
// are uploaded, instead of copied through a buffer first.
//
// The mapping covers exactly the file's size when it was opened (fstat), and readers never look past bytes(): a
// shorter file than its header promises is refused by the bundle's length check before a payload byte is touched,
// so a truncated file is an error message, never a SIGBUS. (A file cut short by another process while mapped would
// still fault; writers replace bundles by renaming a new file over them, which leaves this mapping intact.)
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace spire::bundle {

class MappedFile {
 public:
  // Throws BundleNotFound when the file cannot be opened, BundleError when it is not a regular file or cannot be
  // mapped, each naming `path`.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace spire::bundle
