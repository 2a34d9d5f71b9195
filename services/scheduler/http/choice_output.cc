#include "services/scheduler/http/choice_output.h"

#include "services/scheduler/http/token_text.h"
#include "services/scheduler/tool_calls.h"

namespace unmask::scheduler::http {
namespace {

using nlohmann::json;

// Code points of the pieces [0, n).
std::size_t CharsBefore(const std::vector<std::string>& pieces, std::size_t n) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < n && i < pieces.size(); ++i) chars += CodePoints(pieces[i]);
  return chars;
}

}  // namespace

ChoiceOutput::ChoiceOutput(const OutputPlan& plan)
    : plan_(plan),
      text_(plan.tokenizer, plan.token_ids, plan.gen_length, plan.stop, plan.region, /*track_tokens=*/plan.logprobs >= 0),
      echo_chars_(plan.echo ? CodePoints(plan.echo_text) : 0) {}

void ChoiceOutput::Record(const v1::TokenLogprob& logprob, std::int64_t position) {
  if (position < 0 || position > (std::int64_t{1} << 24)) return;
  const auto p = static_cast<std::size_t>(position);
  if (p >= by_position_.size()) by_position_.resize(p + 1);
  by_position_[p] = logprob;
}

std::vector<LogprobToken> ChoiceOutput::Tokens(std::size_t first, const std::vector<std::int64_t>& ids,
                                               const std::vector<std::string>& pieces) const {
  std::vector<LogprobToken> out;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const std::size_t position = first + k;
    LogprobToken t{ids[k], k < pieces.size() ? pieces[k] : "", std::nullopt};
    const bool fixed = position < plan_.region.size() && plan_.region[position] != kHoleId;
    if (!fixed && position < by_position_.size()) t.logprob = by_position_[position];
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<LogprobToken> ChoiceOutput::EchoTokens() const {
  std::vector<LogprobToken> out;
  if (!plan_.echo) return out;
  const auto pieces = TokenPieces::Of(plan_.tokenizer.get(), plan_.echo_ids, /*skip_special_tokens=*/false);
  for (std::size_t k = 0; k < plan_.echo_ids.size(); ++k) {
    LogprobToken t{plan_.echo_ids[k], pieces[k], std::nullopt};
    // The executor scored the prompt the core encoded; a token that differs has none.
    if (k < prompt_.size() && prompt_[k] && prompt_[k]->token() == t.id) t.logprob = prompt_[k];
    out.push_back(std::move(t));
  }
  return out;
}

void ChoiceOutput::OnPromptLogprobs(const google::protobuf::RepeatedPtrField<v1::TokenLogprob>& logprobs) {
  for (const auto& lp : logprobs) {
    if (lp.position() < 0 || static_cast<std::size_t>(lp.position()) >= plan_.echo_ids.size()) continue;
    const auto p = static_cast<std::size_t>(lp.position());
    if (p >= prompt_.size()) prompt_.resize(p + 1);
    prompt_[p] = lp;
  }
}

json ChoiceOutput::Json(const std::vector<LogprobToken>& tokens, std::size_t offset) const {
  if (plan_.logprobs < 0 || tokens.empty()) return nullptr;
  return LogprobsJson(plan_.endpoint, plan_.tokenizer.get(), tokens, offset);
}

ChoiceOutput::Chunk ChoiceOutput::Begin() {
  const StreamedText::Delta d = text_.Begin();
  std::vector<LogprobToken> tokens = EchoTokens();
  for (auto& t : Tokens(d.first_token, d.ids, d.pieces)) tokens.push_back(std::move(t));
  return {(plan_.echo ? plan_.echo_text : "") + Release(d.text), Json(tokens, 0)};
}

ChoiceOutput::Chunk ChoiceOutput::OnStep(const v1::StepEvent& step) {
  if (plan_.score_only) return {"", nullptr};
  const auto& u = step.unmasked();
  // StepEvent.logprobs is aligned with unmasked.positions; a core that sends them otherwise
  // still says each one's position.
  const bool aligned = step.logprobs_size() == u.positions_size();
  for (int k = 0; k < step.logprobs_size(); ++k) Record(step.logprobs(k), aligned ? u.positions(k) : step.logprobs(k).position());
  const StreamedText::Delta d = text_.Step({u.positions().begin(), u.positions().end()}, {u.tokens().begin(), u.tokens().end()});
  return {Release(d.text), Json(Tokens(d.first_token, d.ids, d.pieces), echo_chars_ + d.text_offset)};
}

std::string ChoiceOutput::Release(const std::string& delta) {
  if (!plan_.tool_use.parse()) return delta;
  streamed_ += delta;
  if (!plan_.tool_use.forced_prefix().empty()) return "";
  // Only the text not yet released can hold where a call begins (what went out holds no part of
  // one), so each step looks at the new text and the held-back tail, not the whole answer.
  const std::size_t limit = released_ + ToolCallStart(std::string_view(streamed_).substr(released_));
  if (limit <= released_) return "";
  std::string out = streamed_.substr(released_, limit - released_);
  released_ = limit;
  return out;
}

void ChoiceOutput::FinishToolCalls(const std::string& text, const std::string& job_id, Done& done) const {
  ParsedToolCalls parsed = ReadToolCalls(plan_.tool_use, job_id, text);
  const std::string whole = parsed.calls.empty() ? plan_.tool_use.forced_prefix() + text : parsed.content;
  done.text = whole;
  done.last.text = released_ < whole.size() ? whole.substr(released_) : "";
  if (parsed.calls.empty()) return;
  done.finish_reason = "tool_calls";
  done.tool_calls = json::array();
  for (const auto& call : parsed.calls) {
    done.tool_calls.push_back(
        {{"id", call.id()}, {"type", "function"}, {"function", {{"name", call.name()}, {"arguments", call.arguments()}}}});
  }
}

ChoiceOutput::Done ChoiceOutput::Finish(const v1::Completed& c, const std::string& job_id) {
  for (const auto& lp : c.logprobs()) Record(lp, lp.position());  // the final word on each position
  OnPromptLogprobs(c.prompt_logprobs());
  if (plan_.score_only) {
    Done done;
    done.text = plan_.echo_text;
    done.finish_reason = "length";
    done.tool_calls = nullptr;
    done.logprobs = Json(EchoTokens(), 0);
    done.last = {"", nullptr};
    return done;
  }
  const StreamedText::Final f = text_.Finish({c.ids().begin(), c.ids().end()}, c.finish_reason());
  Done done;
  done.text = (plan_.echo ? plan_.echo_text : "") + f.text;
  done.finish_reason = f.finish_reason;
  done.tool_calls = nullptr;
  const bool tools = plan_.tool_use.parse();
  if (tools) FinishToolCalls(f.text, job_id, done);
  if (plan_.logprobs < 0) {
    if (!tools) done.last.text = f.delta;
    done.logprobs = nullptr;
    done.last.logprobs = nullptr;
    return done;
  }
  const std::vector<LogprobToken> all = Tokens(0, f.ids, f.pieces);
  std::vector<LogprobToken> whole = EchoTokens();
  whole.insert(whole.end(), all.begin(), all.end());
  done.logprobs = LogprobsJson(plan_.endpoint, plan_.tokenizer.get(), whole, 0);
  const std::vector<LogprobToken> rest(all.begin() + static_cast<std::ptrdiff_t>(f.first_unsent), all.end());
  done.last = {tools ? done.last.text : f.delta, Json(rest, echo_chars_ + CharsBefore(f.pieces, f.first_unsent))};
  return done;
}

}  // namespace unmask::scheduler::http
