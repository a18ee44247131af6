// The translation unit that builds the tests' precompiled headers (tests/CMakeLists.txt: spire_test_pch).
