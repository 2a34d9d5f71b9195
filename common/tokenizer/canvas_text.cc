#include "common/tokenizer/canvas_text.h"

#include <cstdint>
#include <vector>

namespace unmask::tokenizer {
namespace {

StatusOr<std::vector<std::int64_t>> EncodeText(const Tokenizer& tokenizer, const std::string& text,
                                               const std::string& field) {
  auto ids = tokenizer.Encode(text, /*parse_special_tokens=*/true);
  if (!ids.ok()) return InvalidFieldError(field, ids.status().message());
  return std::vector<std::int64_t>(ids->begin(), ids->end());
}

}  // namespace

StatusOr<generation::Canvas> EncodeCanvas(const Tokenizer& tokenizer, const std::string& suffix,
                                          const std::string& template_text, const std::string& field_prefix) {
  generation::Canvas canvas;
  if (!suffix.empty()) {
    UNMASK_ASSIGN_OR_RETURN(canvas.suffix, EncodeText(tokenizer, suffix, field_prefix + "suffix"));
  }
  if (!template_text.empty()) {
    const std::string field = field_prefix + "template_text";
    UNMASK_ASSIGN_OR_RETURN(auto pieces, generation::ParseHoleTemplate(template_text, field));
    UNMASK_ASSIGN_OR_RETURN(canvas.region, generation::TemplateRegion(pieces, [&](const std::string& text) {
                              return EncodeText(tokenizer, text, field);
                            }));
  }
  return canvas;
}

std::string DecodeRegion(const Tokenizer& tokenizer, const std::vector<std::int64_t>& region) {
  std::vector<std::int32_t> known;
  for (auto id : region) {
    if (id >= 0 && id <= INT32_MAX && tokenizer.IdToToken(static_cast<std::int32_t>(id)))
      known.push_back(static_cast<std::int32_t>(id));
  }
  auto text = tokenizer.Decode(known, /*skip_special_tokens=*/true);
  return text.ok() ? *text : "";
}

}  // namespace unmask::tokenizer
