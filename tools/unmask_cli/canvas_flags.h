// `unmask generate` / `submit`: infilling (--suffix), templates with holes (--template-file) and
// log-probabilities (--logprobs), and how a completed job's logprobs are printed.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "common/util/status.h"
#include "unmask/v1/scheduler.pb.h"

namespace unmask::cli {

struct CanvasFlags {
  std::string suffix;                // --suffix: the fixed text after the generated gap
  std::string template_file;         // --template-file: text with <hole:N> markers
  std::optional<int> logprobs;       // --logprobs K: 0..20
  std::optional<int> prompt_logprobs;  // --prompt-logprobs K: 0..20
};

// Sets request.suffix, request.template_text (read from the file and checked for its holes here,
// so that a bad template is refused before any call), params.logprobs and params.prompt_logprobs. Errors name the flag
// (and the file): "--template-file t.txt: cannot read it: No such file or directory",
// "--template-file t.txt: has no hole: ...", "--logprobs: must be in [0, 20], got 21".
Status ApplyCanvasFlags(const CanvasFlags& flags, v1::GenerateRequest& request);

// The prompt logprobs, then the logprobs, of a completed job, one line per token after a header:
//   "  pos 3  id 1234  logprob -0.0123  top: 1234 -0.0123, 77 -4.5100"
// `tag` starts each line (the choice of an n > 1 stream). Nothing when there are none.
void PrintLogprobs(std::ostream& out, const v1::Completed& completed, const std::string& tag = "");

}  // namespace unmask::cli
