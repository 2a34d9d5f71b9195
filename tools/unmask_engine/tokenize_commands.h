// The `tokenize` and `detokenize` subcommands of unmask-engine.
//
//   unmask-engine tokenize   --tokenizer FILE [--json] [--special]       < text
//   unmask-engine detokenize --tokenizer FILE [--json] [--skip-special]  < ids
//
// tokenize encodes stdin exactly as read (a trailing newline is text too; use printf or echo -n)
// and prints the ids separated by spaces, or {"ids":[...]} with --json, followed by a newline.
// --special turns special-token parsing on ("<|eot_id|>" becomes one id).
// detokenize reads ids separated by commas and/or whitespace, or a JSON array, or {"ids":[...]},
// and prints the text exactly (no newline added), or {"text":"..."} plus a newline with --json.
// --skip-special leaves special tokens out.
// Errors (no --tokenizer, unreadable or malformed tokenizer, invalid UTF-8, bad or unknown ids)
// are printed to stderr and the command exits with code 2: the callbacks throw
// CLI::RuntimeError(2); main() returns its get_exit_code() (CLI11_PARSE / app.exit() do the same
// and print nothing more).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/tokenizer/tokenizer.h"
#include "common/util/status.h"

namespace unmask::cli {

// What `tokenize` prints for `text` (newline-terminated).
StatusOr<std::string> TokenizeToText(const tokenizer::Tokenizer& tokenizer, std::string_view text, bool json,
                                     bool parse_special_tokens);

// Parses the id list `detokenize` accepts. InvalidArgument names the offending item.
StatusOr<std::vector<int32_t>> ParseIds(std::string_view input);

// What `detokenize` prints for `input`.
StatusOr<std::string> DetokenizeToText(const tokenizer::Tokenizer& tokenizer, std::string_view input, bool json,
                                       bool skip_special_tokens);

// Registers both subcommands, reading std::cin and writing std::cout / std::cerr.
void AddTokenizeCommands(CLI::App& app);
// Same with explicit streams (for tests). The streams must outlive `app`'s parse.
void AddTokenizeCommands(CLI::App& app, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace unmask::cli
