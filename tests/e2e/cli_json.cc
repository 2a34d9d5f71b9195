#include "tests/e2e/cli_json.h"

#include <sstream>

namespace unmask::testing {

using nlohmann::json;

std::vector<json> JsonLines(const std::string& out) {
  std::vector<json> lines;
  std::stringstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

json LastLineWith(const std::string& out, const std::string& key) {
  json found;
  for (const json& j : JsonLines(out))
    if (j.is_object() && j.contains(key)) found = j;
  return found;
}

std::vector<std::int64_t> IdsOf(const json& array) {
  std::vector<std::int64_t> ids;
  for (const auto& v : array) ids.push_back(v.is_string() ? std::stoll(v.get<std::string>()) : v.get<std::int64_t>());
  return ids;
}

std::vector<std::int64_t> CompletedIds(const std::vector<json>& events) {
  std::vector<std::int64_t> ids;
  for (const auto& ev : events) {
    if (!ev.is_object() || !ev.contains("completed")) continue;
    for (std::int64_t id : IdsOf(ev["completed"]["ids"])) ids.push_back(id);
  }
  return ids;
}

std::string IdList(const json& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ",") + std::to_string(id.get<std::int64_t>());
  return s;
}

}  // namespace unmask::testing
