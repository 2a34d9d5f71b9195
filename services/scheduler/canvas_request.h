// The canvas of a GenerateRequest (its `suffix` and `template_text`, issue 31): encoded with the
// model's tokenizer into the token canvas the executor's samplers run (common/generation/canvas.h),
// and the one parameter a template decides (gen_length, its length in tokens). Errors name the
// request's fields.
#pragma once

#include "common/checkpoint/llada_config.h"
#include "common/generation/canvas.h"
#include "common/generation/params.h"
#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::scheduler {

// True when the request asks for a canvas (a suffix or a template).
bool WantsCanvas(const v1::GenerateRequest& r);

// The canvas of `r` (empty when it asks for none). `tok` may be null only then: without a
// tokenizer the error is FailedPrecondition naming the field.
StatusOr<generation::Canvas> EncodeRequestCanvas(const v1::GenerateRequest& r, const tokenizer::Tokenizer* tok);

// With a template: params.gen_length becomes the template's length in tokens; a gen_length the
// request gave must equal it (InvalidArgument naming params.gen_length). Otherwise unchanged.
Status ApplyTemplateLength(const generation::Canvas& canvas, v1::GenerationParams& params);

// Room for the canvas in the model's context: prompt + suffix must leave at least one position
// (else the error names suffix), and prompt + template + suffix must fit (template_text).
Status CheckCanvasRoom(std::size_t prompt_tokens, const generation::Canvas& canvas,
                       const checkpoint::LladaConfig& config);

// The canvas against the parameters that will run and the model (ValidateCanvas), errors naming
// template_text and suffix.
Status CheckRequestCanvas(const generation::Canvas& canvas, const generation::GenerationParams& params,
                          const checkpoint::LladaConfig& config);

// The canvas as the executor's RunRequest carries it.
v1::Canvas CanvasToProto(const generation::Canvas& canvas);

}  // namespace unmask::scheduler
