// Helpers of the common/jinja tests.
#pragma once

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/jinja/chat_template.h"

namespace unmask::jinja::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string ChatTemplatePath(const std::string& file) {
  return std::string(UNMASK_TEST_DATA) + "/chat_templates/" + file;
}

inline const nlohmann::ordered_json& Golden() {
  static const nlohmann::ordered_json golden =
      nlohmann::ordered_json::parse(ReadFile(ChatTemplatePath("golden.json")));
  return golden;
}

// The options the golden cases were rendered with: strftime_now reads a fixed clock, in UTC.
inline RenderOptions GoldenOptions() {
  setenv("TZ", "UTC", 1);
  tzset();
  RenderOptions options;
  const std::time_t now = Golden()["fixed_now"].get<std::time_t>();
  options.clock = [now] { return now; };
  return options;
}

// "expected ... got ...", from the first byte that differs.
inline std::string Diff(const std::string& expected, const std::string& actual) {
  std::size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  const std::size_t from = i < 40 ? 0 : i - 40;
  return "first difference at byte " + std::to_string(i) + "\n  expected: ..." + nlohmann::json(expected.substr(from, 120)).dump() +
         "\n  actual:   ..." + nlohmann::json(actual.substr(from, 120)).dump();
}

}  // namespace unmask::jinja::testing
