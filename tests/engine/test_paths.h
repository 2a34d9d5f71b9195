// Where the tests find their data: tests/data, passed in by CMake (never outside the tree).
#pragma once

#include <string>

namespace unmask::testing {

inline std::string TestDataPath(const std::string& relative) {
  return std::string(UNMASK_TEST_DATA_DIR) + "/" + relative;
}

}  // namespace unmask::testing
