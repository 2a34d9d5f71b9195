#include "services/scheduler/http/logprobs_render.h"

#include <algorithm>
#include <cmath>

#include "services/scheduler/http/token_text.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr double kMinLogprob = -9999.0;

double Finite(double logprob) { return std::isnan(logprob) ? kMinLogprob : std::max(logprob, kMinLogprob); }

json Bytes(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

json CompletionLogprobs(const tokenizer::Tokenizer* tok, const std::vector<LogprobToken>& tokens, std::size_t offset) {
  json strings = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  for (const LogprobToken& t : tokens) {
    strings.push_back(TokenString(tok, t.id));
    offsets.push_back(offset);
    offset += CodePoints(t.piece);
    if (!t.logprob) {
      logprobs.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    logprobs.push_back(Finite(t.logprob->logprob()));
    json top = json::object();
    for (const auto& alt : t.logprob->top()) {
      const std::string key = TokenString(tok, alt.token());
      if (!top.contains(key)) top[key] = Finite(alt.logprob());  // two ids of one string: the likelier
    }
    tops.push_back(std::move(top));
  }
  return {{"tokens", std::move(strings)}, {"token_logprobs", std::move(logprobs)}, {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

json ChatLogprobs(const tokenizer::Tokenizer* tok, const std::vector<LogprobToken>& tokens) {
  json content = json::array();
  for (const LogprobToken& t : tokens) {
    json entry = {{"token", TokenString(tok, t.id)}, {"bytes", Bytes(TokenBytes(tok, t.id))}, {"top_logprobs", json::array()}};
    entry["logprob"] = t.logprob ? json(Finite(t.logprob->logprob())) : json(nullptr);
    if (t.logprob) {
      for (const auto& alt : t.logprob->top()) {
        entry["top_logprobs"].push_back({{"token", TokenString(tok, alt.token())},
                                         {"logprob", Finite(alt.logprob())},
                                         {"bytes", Bytes(TokenBytes(tok, alt.token()))}});
      }
    }
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}};
}

bool AllNumbers(const json& object) {
  return std::all_of(object.begin(), object.end(), [](const json& v) { return v.is_number(); });
}

// `v` with its key order kept, but a completions top_logprobs object ({token: logprob}, inside
// an array under "top_logprobs") ordered most likely first.
ordered_json Ordered(const json& v, bool in_top_logprobs) {
  if (v.is_array()) {
    ordered_json out = ordered_json::array();
    for (const json& x : v) out.push_back(Ordered(x, in_top_logprobs));
    return out;
  }
  if (!v.is_object()) return ordered_json(v);
  ordered_json out = ordered_json::object();
  if (in_top_logprobs && AllNumbers(v)) {
    std::vector<std::pair<std::string, double>> entries;
    for (auto it = v.begin(); it != v.end(); ++it) entries.emplace_back(it.key(), it.value().get<double>());
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [key, logprob] : entries) out[key] = logprob;
    return out;
  }
  for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = Ordered(it.value(), it.key() == "top_logprobs");
  return out;
}

// Whether some choice carries completions' top_logprobs objects (the only thing Ordered changes).
bool HasTopLogprobObjects(const json& body) {
  auto choices = body.find("choices");
  if (choices == body.end() || !choices->is_array()) return false;
  for (const json& c : *choices) {
    if (!c.is_object()) continue;
    auto lp = c.find("logprobs");
    if (lp != c.end() && lp->is_object() && lp->contains("top_logprobs")) return true;
  }
  return false;
}

}  // namespace

json LogprobsJson(Endpoint endpoint, const tokenizer::Tokenizer* tokenizer, const std::vector<LogprobToken>& tokens,
                  std::size_t offset) {
  if (endpoint == Endpoint::kChatCompletions) return ChatLogprobs(tokenizer, tokens);
  return CompletionLogprobs(tokenizer, tokens, offset);
}

std::string DumpJson(const json& body) {
  if (!body.is_object() || !HasTopLogprobObjects(body)) return body.dump(-1, ' ', false, json::error_handler_t::replace);
  return Ordered(body, false).dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

json VllmPromptLogprobs(const google::protobuf::RepeatedPtrField<v1::TokenLogprob>& logprobs,
                        std::int64_t prompt_tokens, int k, const tokenizer::Tokenizer* tokenizer) {
  json out = json::array();
  for (std::int64_t p = 0; p < prompt_tokens; ++p) out.push_back(nullptr);
  auto entry = [tokenizer](double logprob, json rank, std::int64_t id) {
    return json{{"logprob", Finite(logprob)}, {"rank", std::move(rank)},
                {"decoded_token", tokenizer ? json(TokenString(tokenizer, id)) : json(nullptr)}};
  };
  for (const v1::TokenLogprob& lp : logprobs) {
    if (lp.position() < 1 || lp.position() >= prompt_tokens) continue;
    json at = json::object();
    const int kept = std::min(k, lp.top_size());
    for (int t = 0; t < kept; ++t) {
      int better = 0;  // vLLM's rank within the alternatives: those strictly more likely, plus one
      while (better < t && lp.top(better).logprob() > lp.top(t).logprob()) ++better;
      at[std::to_string(lp.top(t).token())] = entry(lp.top(t).logprob(), better + 1, lp.top(t).token());
    }
    at[std::to_string(lp.token())] = entry(lp.logprob(), lp.rank() > 0 ? json(lp.rank()) : json(nullptr), lp.token());
    out[static_cast<std::size_t>(lp.position())] = std::move(at);
  }
  return out;
}

}  // namespace unmask::scheduler::http
