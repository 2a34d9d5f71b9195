// A request's infilling suffix and template with holes, as text, turned into the token canvas the
// samplers run (common/generation/canvas.h). Shared by the scheduler and unmask-engine.
#pragma once

#include <string>

#include "common/generation/canvas.h"
#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"

namespace unmask::tokenizer {

// The canvas of `suffix` (encoded whole: the fixed text after the gap) and `template_text` (its
// "<hole:N>" markers become holes, the text between them is encoded piece by piece, special
// tokens parsed as in a prompt); either may be empty. With a template, the region is the
// template (gen_length must be region.size()); without one it is empty (all holes). Errors name
// field_prefix + "suffix" / field_prefix + "template_text".
StatusOr<generation::Canvas> EncodeCanvas(const Tokenizer& tokenizer, const std::string& suffix,
                                          const std::string& template_text, const std::string& field_prefix = "");

// The text of a finished canvas region (holes filled): special tokens (EOS, EoT, padding) left
// out, as in a completion's text.
std::string DecodeRegion(const Tokenizer& tokenizer, const std::vector<std::int64_t>& region);

}  // namespace unmask::tokenizer
