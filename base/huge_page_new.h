// base/huge_page_new.cpp: the global operator new of the executables that link spire_huge_page_new asks for
// transparent huge pages for every allocation of kLargeBytes or more (why: that file's header).
#pragma once

#include <cstddef>

namespace spire {

// Allocations of this size and more are marked for huge pages: 2 MiB pages leave at most one partly used page at
// each end, a small share of blocks this large.
inline constexpr std::size_t kLargeBytes = std::size_t(4) << 20;

// Whether this executable's operator new is the one above (false where it is left out: not Linux, AddressSanitizer).
bool huge_page_new_linked();

}  // namespace spire
