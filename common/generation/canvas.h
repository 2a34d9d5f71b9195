// Infilling and templates with holes: what a generation fills besides plain continuation.
//
// The sequence a sampler runs is the prompt, then the region (gen_length positions), then the
// suffix. A region position is a hole (kHole: it starts masked and the sampler fills it) or a
// fixed token (it starts as that token and nothing changes it); the suffix is fixed tokens the
// model attends to that are not part of the output. An empty region means every position a hole:
// with no suffix, plain generation; with one, infilling (OpenAI's `suffix`). A template with
// holes ("<hole:N>" markers in text, ParseHoleTemplate) becomes a region of fixed tokens and holes.
// No LibTorch, no tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::generation {

constexpr std::int64_t kHole = -1;
constexpr std::int64_t kMaxHoleLength = 4096;

struct Canvas {
  std::vector<std::int64_t> region;  // empty, or gen_length entries: kHole or a token id
  std::vector<std::int64_t> suffix;  // fixed tokens after the region

  bool empty() const { return region.empty() && suffix.empty(); }
  // A region with at least one fixed token (a template): its output keeps those tokens, so it is
  // never cut at an EOS.
  bool has_fixed_region() const;
  // The region's starting ids: holes as mask_id; all mask_id when the region is empty.
  std::vector<std::int64_t> RegionIds(std::int64_t gen_length, std::int64_t mask_id) const;
};

// The canvas fits the generation: region empty or of gen_length entries with at least one hole,
// every fixed id (region and suffix) in [0, vocab_size) and none equal to mask_id. Errors
// InvalidArgument naming the field (region_field, suffix_field: what the caller's request calls them).
Status ValidateCanvas(const Canvas& canvas, std::int64_t gen_length, std::int64_t vocab_size, std::int64_t mask_id,
                      const std::string& region_field = "canvas.region", const std::string& suffix_field = "canvas.suffix");

// A template's parts in order: text kept as it is (hole == 0), or a hole of `hole` tokens.
struct TemplatePiece {
  std::string text;
  std::int64_t hole = 0;
};

// Splits text at its "<hole:N>" markers (N decimal, 1..kMaxHoleLength). "<<hole:" stands for a
// literal "<hole:". Errors name field `field`: no hole at all, a hole of length 0 or above the
// limit, a marker that is not closed or whose length is not a number.
StatusOr<std::vector<TemplatePiece>> ParseHoleTemplate(const std::string& text, const std::string& field);

// The region of a parsed template: each text piece encoded with `encode` (its ids kept as they
// are), each hole as that many kHole.
using TextEncoder = std::function<StatusOr<std::vector<std::int64_t>>(const std::string&)>;
StatusOr<std::vector<std::int64_t>> TemplateRegion(const std::vector<TemplatePiece>& pieces, const TextEncoder& encode);

}  // namespace unmask::generation
