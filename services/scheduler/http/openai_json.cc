#include "services/scheduler/http/openai_json.h"

namespace unmask::scheduler::http {

using json = nlohmann::ordered_json;

// What a bad value looked like, short enough for a message.
std::string Shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// `field` is the OpenAI API's name; it becomes the error's detail.field (the error's `param`).
Status Bad(const std::string& field, const std::string& rule, const json& got) {
  return InvalidFieldError(field, rule + ", got " + Shown(got));
}

// The value of `key`, or nullptr when it is absent or null (clients send null for "unset").
const json* Field(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

StatusOr<std::int64_t> Integer(const json& v, const std::string& field, std::int64_t lo, std::int64_t hi) {
  const std::string range = "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_number_integer()) return Bad(field, range, v);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) return Bad(field, range, v);
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi) return Bad(field, range, v);
  return n;
}

StatusOr<double> Number(const json& v, const std::string& field, double lo, double hi, const std::string& rule) {
  if (!v.is_number()) return Bad(field, rule, v);
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) return Bad(field, rule, v);
  return x;
}

StatusOr<std::string> String(const json& v, const std::string& field, std::size_t max_bytes, bool allow_empty) {
  if (!v.is_string()) return Bad(field, "must be a string", v);
  const auto& s = v.get_ref<const std::string&>();
  if (!allow_empty && s.empty()) return Bad(field, "must not be empty", v);
  if (s.size() > max_bytes) return Bad(field, "must be at most " + std::to_string(max_bytes) + " bytes", json(s.size()));
  return s;
}

// Whether `object` has a string field "type" equal to `type`. (json::value("type", "") would
// throw on a "type" that is not a string: found by fuzz/http_request_fuzz.cc.)
bool HasType(const json& object, const char* type) {
  if (!object.is_object()) return false;
  auto it = object.find("type");
  return it != object.end() && it->is_string() && it->get_ref<const std::string&>() == type;
}

// Whether a value asks for something (false, 0, "", [] and {} do not).
bool Truthy(const json& v) {
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  return (v.is_boolean() && v.get<bool>()) || (v.is_number() && v.get<double>() != 0) ||
         ((v.is_array() || v.is_object()) && !v.empty());
}


StatusOr<std::string> MessageContent(const json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return Bad(field, "must be a string or an array of text parts", content);
  std::string text;
  for (std::size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string pf = field + "[" + std::to_string(k) + "]";
    if (!HasType(part, "text") || !part.contains("text") || !part["text"].is_string())
      return Bad(pf, "must be {\"type\": \"text\", \"text\": \"...\"} (only text parts are supported)", part);
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace unmask::scheduler::http
