#include "services/scheduler/http/openai_render.h"

#include "services/scheduler/http/field_names.h"
#include "services/scheduler/http/logprobs_render.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;

const char* ObjectName(Endpoint e, bool chunk) {
  if (e == Endpoint::kChatCompletions) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

json Base(const CompletionIdentity& id, bool chunk) {
  return {{"id", id.id}, {"object", ObjectName(id.endpoint, chunk)}, {"created", id.created}, {"model", id.model}};
}

// Header values must be printable ASCII: anything else becomes '?'.
std::string HeaderSafe(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  return out;
}

json ParamsJson(const v1::GenerationParams& p) {
  json out = {{"max_tokens", p.gen_length()},
              {"block_length", p.block_length()},
              {"steps", p.steps()},
              {"sampler", p.sampler().empty() ? "reference" : p.sampler()},
              {"temperature", p.temperature()},
              {"cfg_scale", p.cfg_scale()},
              {"remasking", p.remasking() == v1::REMASKING_RANDOM ? "random" : "low_confidence"},
              {"seed", p.seed()}};
  if (p.threshold() > 0) out["threshold"] = p.threshold();
  if (p.factor() > 0) out["factor"] = p.factor();
  if (p.attention_query_chunk() > 0) out["attention_query_chunk"] = p.attention_query_chunk();
  if (p.has_early_stop()) out["early_stop"] = p.early_stop();
  const bool dream = p.sampler() == "dream";
  if (p.sampler() == "llada2" || p.sampler() == "llada21" || dream) {  // their own options, as they ran
    out["top_k"] = p.top_k();
    out["top_p"] = p.top_p();
  }
  if (p.sampler() == "llada2" || p.sampler() == "llada21") {
    out["minimal_topk"] = p.minimal_topk();
    out["eos_early_stop"] = p.eos_early_stop();
  }
  if (dream) {
    out["alg"] = p.alg();
    out["alg_temp"] = p.alg_temp();
    out["eps"] = p.eps();
  }
  if (p.sampler() == "llada21") {
    out["editing_threshold"] = p.editing_threshold();
    out["max_post_steps"] = p.max_post_steps();
    out["num_to_transfer"] = p.num_to_transfer();
  }
  return out;
}

}  // namespace

CompletionIdentity MakeIdentity(Endpoint endpoint, const std::string& job_id, std::int64_t created, const std::string& model) {
  return {endpoint, (endpoint == Endpoint::kChatCompletions ? "chatcmpl-" : "cmpl-") + job_id, created, model};
}

json Usage(std::int64_t prompt_tokens, std::int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json AcceptedExtension(const v1::SubmitResponse& submitted) {
  const v1::Accepted& a = submitted.accepted();
  json clamped = json::array();
  for (const auto& adj : a.adjustments()) {
    const std::string field = OpenAiFieldName(adj.field());  // gen_length is max_tokens here
    clamped.push_back({{"field", field}, {"asked", adj.asked()}, {"applied", adj.applied()}, {"reason", adj.reason()}});
  }
  json out = {{"job_id", submitted.job_id()}, {"params", ParamsJson(a.params())}, {"clamped", clamped}};
  if (!a.device_class().empty()) out["device_class"] = a.device_class();
  if (!a.job_ids().empty()) out["job_ids"] = std::vector<std::string>(a.job_ids().begin(), a.job_ids().end());
  return out;
}

std::string ClampedHeader(const v1::Accepted& accepted) {
  std::string out;
  for (const auto& adj : accepted.adjustments()) {
    const std::string field = OpenAiFieldName(adj.field());
    out += (out.empty() ? "" : ", ") + field + "=" + adj.asked() + "->" + adj.applied();
  }
  return out.empty() ? "none" : HeaderSafe(out);
}

json CompletionResponse(const CompletionIdentity& id, const std::vector<ChoiceText>& choices, const json& usage,
                        const json& extension) {
  json out = Base(id, /*chunk=*/false);
  out["choices"] = json::array();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    json choice = {{"index", i}, {"finish_reason", choices[i].finish_reason}, {"logprobs", choices[i].logprobs}};
    if (id.endpoint == Endpoint::kChatCompletions) {
      choice["message"] = {{"role", "assistant"}, {"content", choices[i].text}};
      if (!choices[i].tool_calls.is_null()) {
        if (choices[i].text.find_first_not_of(" \t\r\n") == std::string::npos) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = choices[i].tool_calls;
      }
    } else {
      choice["text"] = choices[i].text;
      if (!choices[i].likelihood.is_null()) choice["likelihood"] = choices[i].likelihood;
    }
    if (id.endpoint == Endpoint::kCompletions && !choices[i].prompt_logprobs.is_null())
      choice["prompt_logprobs"] = choices[i].prompt_logprobs;
    out["choices"].push_back(std::move(choice));
  }
  if (id.endpoint == Endpoint::kChatCompletions && !choices.empty() && !choices[0].prompt_logprobs.is_null())
    out["prompt_logprobs"] = choices[0].prompt_logprobs;
  out["usage"] = usage;
  if (!extension.is_null()) out["unmask"] = extension;
  return out;
}

json CompletionResponse(const CompletionIdentity& id, const std::string& text, const std::string& finish_reason,
                        const json& usage, const json& extension) {
  return CompletionResponse(id, std::vector<ChoiceText>{{text, finish_reason}}, usage, extension);
}

json ChatChunk(const CompletionIdentity& id, const json& delta, const json& finish_reason, const json& extension,
               int index, const json& logprobs) {
  json out = Base(id, /*chunk=*/true);
  out["choices"] =
      json::array({{{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", finish_reason}}});
  if (!extension.is_null()) out["unmask"] = extension;
  return out;
}

json TextChunk(const CompletionIdentity& id, const std::string& text, const json& finish_reason, const json& extension,
               int index, const json& logprobs) {
  json out = Base(id, /*chunk=*/true);
  out["choices"] =
      json::array({{{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason}}});
  if (!extension.is_null()) out["unmask"] = extension;
  return out;
}

json TextDeltaChunk(const CompletionIdentity& id, const std::string& text, const json& finish_reason,
                    const json& extension, int index, const json& logprobs) {
  if (id.endpoint == Endpoint::kCompletions) return TextChunk(id, text, finish_reason, extension, index, logprobs);
  return ChatChunk(id, text.empty() ? json::object() : json{{"content", text}}, finish_reason, extension, index,
                   logprobs);
}

json LastDeltaChunk(const CompletionIdentity& id, const std::string& text, const json& tool_calls,
                    const json& finish_reason, const json& extension, int index, const json& logprobs) {
  if (tool_calls.is_null() || id.endpoint == Endpoint::kCompletions)
    return TextDeltaChunk(id, text, finish_reason, extension, index, logprobs);
  json delta = json::object();
  if (!text.empty()) delta["content"] = text;
  delta["tool_calls"] = json::array();
  for (std::size_t k = 0; k < tool_calls.size(); ++k) {
    json call = {{"index", k}};
    call.update(tool_calls[k]);
    delta["tool_calls"].push_back(std::move(call));
  }
  return ChatChunk(id, delta, finish_reason, extension, index, logprobs);
}

json FirstChunk(const CompletionIdentity& id, const json& extension, int index, const std::string& text,
                const json& logprobs) {
  if (id.endpoint == Endpoint::kCompletions) return TextChunk(id, text, nullptr, extension, index, logprobs);
  return ChatChunk(id, {{"role", "assistant"}, {"content", text}}, nullptr, extension, index, logprobs);
}

json UsageChunk(const CompletionIdentity& id, const json& usage) {
  json out = Base(id, /*chunk=*/true);
  out["choices"] = json::array();
  out["usage"] = usage;
  return out;
}

json StepExtension(const v1::StepEvent& step) {
  return {{"step", step.step()},
          {"block", step.block()},
          {"step_in_block", step.step_in_block()},
          {"positions", json(std::vector<std::int64_t>(step.unmasked().positions().begin(), step.unmasked().positions().end()))},
          {"tokens", json(std::vector<std::int64_t>(step.unmasked().tokens().begin(), step.unmasked().tokens().end()))}};
}

json ModelList(const v1::ListServedModelsResponse& models) {
  json data = json::array();
  for (const auto& m : models.models()) {
    data.push_back({{"id", m.model()},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "unmask"},
                    {"unmask", {{"executors", std::vector<std::string>(m.executors().begin(), m.executors().end())},
                                {"precision", m.precision()},
                                {"budget_bytes", m.budget_bytes()}}}});
  }
  return {{"object", "list"}, {"data", data}};
}

std::string SseData(const json& payload) {
  return "data: " + DumpJson(payload) + "\n\n";
}

std::string SseComment(const std::string& text) {
  std::string line = text;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return ": " + line + "\n\n";
}

}  // namespace unmask::scheduler::http
