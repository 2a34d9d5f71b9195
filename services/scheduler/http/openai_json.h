// The JSON field readers the OpenAI request parsers share: each names the field at fault in its
// InvalidArgument ("<field>: <rule>, got <value>"), the field becoming the error's `param`.
// Bodies are ordered_json: an object keeps its members' order (a tool's JSON Schema reaches the
// chat template as the client wrote it, as transformers renders it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/util/status.h"

namespace unmask::scheduler::http {

// What a bad value looked like, short enough for a message.
std::string Shown(const nlohmann::ordered_json& v);
// InvalidArgument "<field>: <rule>, got <value shown>".
Status Bad(const std::string& field, const std::string& rule, const nlohmann::ordered_json& got);
// The value of `key`, or nullptr when it is absent or null (clients send null for "unset").
const nlohmann::ordered_json* Field(const nlohmann::ordered_json& body, const char* key);
StatusOr<std::int64_t> Integer(const nlohmann::ordered_json& v, const std::string& field, std::int64_t lo, std::int64_t hi);
StatusOr<double> Number(const nlohmann::ordered_json& v, const std::string& field, double lo, double hi, const std::string& rule);
StatusOr<std::string> String(const nlohmann::ordered_json& v, const std::string& field, std::size_t max_bytes,
                             bool allow_empty = false);
// Whether `object` has a string field "type" equal to `type`.
bool HasType(const nlohmann::ordered_json& object, const char* type);
// Whether a value asks for something (false, 0, "", [] and {} do not).
bool Truthy(const nlohmann::ordered_json& v);
// A message's content: a string, or an array of {"type": "text", "text": ...} parts joined.
StatusOr<std::string> MessageContent(const nlohmann::ordered_json& content, const std::string& field);

}  // namespace unmask::scheduler::http
