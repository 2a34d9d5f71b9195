#include "common/jinja/chat_template.h"

#include <new>
#include <utility>

#include "common/jinja/error.h"
#include "common/jinja/lexer.h"
#include "common/jinja/parser.h"
#include "common/jinja/runtime.h"
#include "common/jinja/scopes.h"

namespace unmask::jinja {

struct Template::Impl {
  std::string source;  // normalized
  Body body;
  std::vector<std::string> undefined;  // the names the template's frame starts undefined
};

namespace {

// Runs `f`, turning what it throws into a Status.
template <typename T, typename F>
StatusOr<T> Guard(const std::string& source, F f, const std::uint32_t* pos) {
  try {
    return f();
  } catch (TemplateError& e) {
    if (e.pos == kNoPos && pos != nullptr) e.pos = *pos;  // the construct being run
    return ToStatus(e, source);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted, "chat template: out of memory").WithReason(kReasonLimit);
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, std::string("chat template: ") + e.what()).WithReason(kReasonRender);
  }
}

}  // namespace

StatusOr<Template> Template::Parse(const std::string& text) {
  auto impl = std::make_shared<Impl>();
  impl->source = NormalizeSource(text);
  Status status = Guard<bool>(impl->source, [&] {
                    impl->body = ParseTemplate(impl->source);
                    impl->undefined = AnalyzeScopes(impl->body);
                    return true;
                  }, nullptr).status();
  if (!status.ok()) return status;
  Template t;
  t.impl_ = std::move(impl);
  return t;
}

StatusOr<std::string> Template::Render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  if (!impl_) return FailedPreconditionError("chat template: Render on a template that was not parsed");
  Runtime runtime(impl_->source, options);
  return Guard<std::string>(impl_->source, [&] { return runtime.Render(impl_->body, impl_->undefined, context); }, runtime.pos_ptr());
}

StatusOr<std::string> RenderChatTemplate(const std::string& template_text, const nlohmann::ordered_json& context,
                                         const RenderOptions& options) {
  StatusOr<Template> t = Template::Parse(template_text);
  if (!t.ok()) return t.status();
  return t->Render(context, options);
}

nlohmann::ordered_json ChatTemplateContext(const nlohmann::ordered_json& tokenizer_config,
                                           const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                           const nlohmann::ordered_json& tools) {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  const auto token_text = [](const nlohmann::ordered_json& token) -> nlohmann::ordered_json {
    if (token.is_object() && token.contains("content")) return token["content"];
    return token;
  };
  if (tokenizer_config.is_object()) {
    for (const char* name : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
      const auto it = tokenizer_config.find(name);
      if (it == tokenizer_config.end() || it->is_null()) continue;
      context[name] = token_text(*it);
    }
    const auto extra = tokenizer_config.find("additional_special_tokens");
    if (extra != tokenizer_config.end() && extra->is_array()) {
      nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
      for (const auto& token : *extra) tokens.push_back(token_text(token));
      context["additional_special_tokens"] = std::move(tokens);
    }
  }
  return context;
}

}  // namespace unmask::jinja
