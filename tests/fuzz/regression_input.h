// The inputs fuzzing found, kept in fuzz/regressions/<target>/ (they also seed tools/fuzz.sh).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace unmask::testing {

inline std::string RegressionPath(const std::string& target, const std::string& name) {
  return std::string(UNMASK_FUZZ_REGRESSIONS) + "/" + target + "/" + name;
}

inline std::string RegressionInput(const std::string& target, const std::string& name) {
  std::ifstream in(RegressionPath(target, name), std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace unmask::testing
