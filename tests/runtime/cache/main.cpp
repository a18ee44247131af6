// The cache tests' main: GoogleTest, or the child mode one test starts this executable in again
// (pipeline_cache_test.cpp: processes closing their devices at once).
#include <gtest/gtest.h>

#include <cstring>

namespace spire::rt::cache_test {
int pipeline_cache_child(int argc, char** argv);
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--pipeline-cache-child") == 0)
    return spire::rt::cache_test::pipeline_cache_child(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
