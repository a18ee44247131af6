// The global operator new and delete of the executables that link spire_huge_page_new (the spire CLI): a large
// allocation is asked for transparent huge pages before anything touches it.
//
// Why: importing a model writes gigabytes into fresh memory (the file's bytes, protobuf's copies of each weight, the
// weights decoded to doubles, the decoders' transposed and merged weights), and each 4 KiB page of it costs a page
// fault that the kernel must serve and zero. In a virtual machine that fault is dear: perf on the 2-core development
// VM put 55% of importing a 1.1 GB Llama-shaped model in page faults, and the same import ran 5 times faster with huge
// pages (glibc's GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which a program cannot set for itself once it runs: the file
// parsed in 1.7-2.0 s instead of 9.5-10.0, the weights read at 373-378 MB/s instead of 117-131). Linux's default
// transparent-huge-page mode, "madvise", gives them only to memory marked so; this marks every allocation of
// kLargeBytes or more. Smaller ones, and builds without Linux or under AddressSanitizer (whose own operator new checks
// new/delete pairing), are left as the C++ library makes them.
//
// Only an executable's own definition replaces the library's operator new, so this is an OBJECT library linked into
// the executables that want it, never a static or shared one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "base/huge_page_new.h"

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#include <sys/mman.h>
#include <unistd.h>

namespace spire {

bool huge_page_new_linked() { return true; }

}  // namespace spire

namespace {

void* allocate(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  void* p = std::malloc(bytes);
  if (!p) throw std::bad_alloc();
  if (bytes >= spire::kLargeBytes) {
    // From the first whole page on (malloc's block starts after its header); a failure (no transparent huge pages in
    // this kernel) leaves ordinary pages, which work as before.
    const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t first = (uintptr_t(p) + page - 1) & ~(page - 1), end = uintptr_t(p) + bytes;
    if (end > first) madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
  }
  return p;
}

}  // namespace

void* operator new(std::size_t bytes) { return allocate(bytes); }
void* operator new[](std::size_t bytes) { return allocate(bytes); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return allocate(bytes);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return allocate(bytes);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

#else

namespace spire {

bool huge_page_new_linked() { return false; }

}  // namespace spire

#endif
