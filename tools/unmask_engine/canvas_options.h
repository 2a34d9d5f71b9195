// `unmask-engine generate`: infilling (--suffix), templates with holes (--template-file) and
// log-probabilities (--logprobs): the canvas built from the flags, and the logprobs printed.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/generation/canvas.h"
#include "common/sampler/step_event.h"
#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"

namespace unmask::cli {

// The canvas of --suffix and --template-file (the file read as it is), encoded with the
// tokenizer; errors name the flag (and the file). An empty canvas when neither is given.
StatusOr<generation::Canvas> BuildCanvas(const std::string& suffix, const std::string& template_file,
                                         const tokenizer::Tokenizer& tokenizer);

// With a template the generation's length is the template's: `gen_length` is set to it, and a
// different --gen-length is refused naming both flags.
Status FitTemplateLength(const generation::Canvas& canvas, const std::string& template_file,
                         std::optional<std::int64_t>& gen_length);

// The logprobs of one row as {"position", "token", "text", "logprob", "top": [{"token", "text",
// "logprob"}]}, positions below `length` only (a row cut at its EOS), fixed tokens left out.
// "text" only with a tokenizer.
nlohmann::json RowLogprobsJson(const std::vector<std::optional<sampler::TokenLogprob>>& row, std::size_t length,
                               const tokenizer::Tokenizer* tokenizer);

// The same as lines: "  pos 3  \" the\"  -0.0123  top: \" the\" -0.0123, \" a\" -4.5100"
// (token ids where there is no tokenizer).
void PrintRowLogprobs(std::ostream& out, const std::vector<std::optional<sampler::TokenLogprob>>& row,
                      std::size_t length, const tokenizer::Tokenizer* tokenizer);

}  // namespace unmask::cli
