// Reading the `unmask` CLI's --json output (one JSON event per line) in end-to-end tests.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace unmask::testing {

// Every line of `out` that parses as JSON.
std::vector<nlohmann::json> JsonLines(const std::string& out);
// The last such line with top-level key `key`; null when none has it.
nlohmann::json LastLineWith(const std::string& out, const std::string& key);
// A JSON array of ids as int64 (proto3 JSON prints int64 as strings).
std::vector<std::int64_t> IdsOf(const nlohmann::json& array);
// The ids of the completed event(s).
std::vector<std::int64_t> CompletedIds(const std::vector<nlohmann::json>& events);
// "1,2,3", for --prompt-ids.
std::string IdList(const nlohmann::json& ids);

}  // namespace unmask::testing
