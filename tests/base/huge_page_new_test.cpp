// base/huge_page_new.cpp: in an executable that links it, an allocation of kLargeBytes or more lies in memory marked
// for transparent huge pages (the "hg" flag of its mapping in /proc/self/smaps, which madvise(MADV_HUGEPAGE) sets),
// a smaller one does not, and both hold what is written to them.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/huge_page_new.h"

namespace spire {
namespace {

// The VmFlags of the mapping that holds address `p`, from /proc/self/smaps ("" if none does).
std::string vm_flags_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = uintptr_t(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8) + " ";
  }
  return "";
}

TEST(HugePageNew, ALargeAllocationIsMarkedForHugePagesAndASmallOneIsNot) {
  if (!huge_page_new_linked()) GTEST_SKIP() << "this build leaves operator new as it is (not Linux, or AddressSanitizer)";
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  std::vector<double> large(2 * kLargeBytes / sizeof(double));
  for (size_t i = 0; i < large.size(); i += 4096) large[i] = double(i);
  const std::string flags = vm_flags_at(large.data() + large.size() / 2);
  ASSERT_NE(flags, "") << "no mapping holds the allocation";
  EXPECT_NE(flags.find(" hg "), std::string::npos) << "VmFlags:" << flags;
  for (size_t i = 0; i < large.size(); i += 4096) EXPECT_EQ(large[i], double(i));

  auto small = std::make_unique<char[]>(kLargeBytes / 4);
  small[0] = 1;
  EXPECT_EQ(vm_flags_at(small.get()).find(" hg "), std::string::npos) << "VmFlags:" << vm_flags_at(small.get());
}

}  // namespace
}  // namespace spire
