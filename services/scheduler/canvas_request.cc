#include "services/scheduler/canvas_request.h"

#include <string>

#include "common/tokenizer/canvas_text.h"

namespace unmask::scheduler {

bool WantsCanvas(const v1::GenerateRequest& r) { return !r.suffix().empty() || !r.template_text().empty(); }

StatusOr<generation::Canvas> EncodeRequestCanvas(const v1::GenerateRequest& r, const tokenizer::Tokenizer* tok) {
  if (!WantsCanvas(r)) return generation::Canvas{};
  if (tok == nullptr) {
    const std::string field = r.template_text().empty() ? "suffix" : "template_text";
    return FailedPreconditionError("model '" + r.model() + "' has no tokenizer (tokenizer.json, or vocab.json with merges.txt) under the scheduler's model roots, "
                                   "so its text cannot be encoded")
        .WithField(field);
  }
  return tokenizer::EncodeCanvas(*tok, r.suffix(), r.template_text());
}

Status ApplyTemplateLength(const generation::Canvas& canvas, v1::GenerationParams& params) {
  if (canvas.region.empty()) return OkStatus();
  const auto length = static_cast<std::int64_t>(canvas.region.size());
  if (params.has_gen_length() && params.gen_length() != length)
    return InvalidFieldError("params.gen_length", "is " + std::to_string(params.gen_length()) +
                                                      ", but the template is " + std::to_string(length) +
                                                      " tokens long; leave gen_length unset with a template");
  params.set_gen_length(length);
  return OkStatus();
}

Status CheckCanvasRoom(std::size_t prompt_tokens, const generation::Canvas& canvas,
                       const checkpoint::LladaConfig& config) {
  const auto context = static_cast<std::int64_t>(prompt_tokens + canvas.suffix.size());
  const std::string sizes = "the prompt (" + std::to_string(prompt_tokens) + " tokens) + the suffix (" +
                            std::to_string(canvas.suffix.size()) + " tokens)";
  if (!canvas.suffix.empty() && context >= config.max_sequence_length)
    return InvalidFieldError("suffix", sizes + " leave no room for a gap in the model's max_sequence_length (" +
                                           std::to_string(config.max_sequence_length) + ")");
  const auto region = static_cast<std::int64_t>(canvas.region.size());
  if (region > 0 && context + region > config.max_sequence_length)
    return InvalidFieldError("template_text", "the template (" + std::to_string(region) + " tokens) + " + sizes +
                                                  " exceed the model's max_sequence_length (" +
                                                  std::to_string(config.max_sequence_length) + ")");
  return OkStatus();
}

Status CheckRequestCanvas(const generation::Canvas& canvas, const generation::GenerationParams& params,
                          const checkpoint::LladaConfig& config) {
  return generation::ValidateCanvas(canvas, params.gen_length, config.embedding_size, params.mask_id, "template_text",
                                    "suffix");
}

v1::Canvas CanvasToProto(const generation::Canvas& canvas) {
  v1::Canvas out;
  for (auto id : canvas.region) out.add_region(id);
  for (auto id : canvas.suffix) out.add_suffix(id);
  return out;
}

}  // namespace unmask::scheduler
