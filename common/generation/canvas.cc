#include "common/generation/canvas.h"

#include <algorithm>

namespace unmask::generation {
namespace {

constexpr char kMarker[] = "<hole:";
constexpr std::size_t kMarkerLength = sizeof(kMarker) - 1;

Status CheckIds(const std::vector<std::int64_t>& ids, const std::string& field, std::int64_t vocab_size, std::int64_t mask_id,
                bool holes_allowed) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = ids[i];
    if (holes_allowed && id == kHole) continue;
    if (id < 0 || id >= vocab_size || id == mask_id)
      return InvalidFieldError(field, "entry " + std::to_string(i) + " is " + std::to_string(id) +
                                          ", not a token of the model's vocabulary [0, " + std::to_string(vocab_size) +
                                          ") other than the mask id" + (holes_allowed ? " or -1 (a hole)" : ""));
  }
  return OkStatus();
}

}  // namespace

bool Canvas::has_fixed_region() const {
  return std::any_of(region.begin(), region.end(), [](std::int64_t id) { return id != kHole; });
}

std::vector<std::int64_t> Canvas::RegionIds(std::int64_t gen_length, std::int64_t mask_id) const {
  if (region.empty()) return std::vector<std::int64_t>(static_cast<std::size_t>(gen_length), mask_id);
  std::vector<std::int64_t> ids = region;
  for (auto& id : ids)
    if (id == kHole) id = mask_id;
  return ids;
}

Status ValidateCanvas(const Canvas& canvas, std::int64_t gen_length, std::int64_t vocab_size, std::int64_t mask_id,
                      const std::string& region_field, const std::string& suffix_field) {
  if (!canvas.region.empty()) {
    if (static_cast<std::int64_t>(canvas.region.size()) != gen_length)
      return InvalidFieldError(region_field, "has " + std::to_string(canvas.region.size()) +
                                                    " entries; it must have gen_length (" + std::to_string(gen_length) +
                                                    ")");
    if (std::find(canvas.region.begin(), canvas.region.end(), kHole) == canvas.region.end())
      return InvalidFieldError(region_field, "has no hole (-1): there is nothing to generate");
  }
  UNMASK_RETURN_IF_ERROR(CheckIds(canvas.region, region_field, vocab_size, mask_id, /*holes_allowed=*/true));
  return CheckIds(canvas.suffix, suffix_field, vocab_size, mask_id, /*holes_allowed=*/false);
}

StatusOr<std::vector<TemplatePiece>> ParseHoleTemplate(const std::string& text, const std::string& field) {
  std::vector<TemplatePiece> pieces;
  std::string literal;
  std::size_t i = 0;
  bool any_hole = false;
  while (i < text.size()) {
    if (text.compare(i, kMarkerLength + 1, std::string("<") + kMarker) == 0) {  // "<<hole:" = a literal "<hole:"
      literal += kMarker;
      i += kMarkerLength + 1;
      continue;
    }
    if (text.compare(i, kMarkerLength, kMarker) != 0) {
      literal += text[i++];
      continue;
    }
    const std::size_t close = text.find('>', i + kMarkerLength);
    const std::string at = "the marker at byte " + std::to_string(i);
    if (close == std::string::npos) return InvalidFieldError(field, at + " is not closed with '>'");
    const std::string digits = text.substr(i + kMarkerLength, close - i - kMarkerLength);
    if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), [](char c) {
          return c >= '0' && c <= '9';
        }))
      return InvalidFieldError(field, at + " has length '" + digits + "', not a number of tokens (<hole:N>)");
    const std::int64_t n = std::stoll(digits);
    if (n < 1 || n > kMaxHoleLength)
      return InvalidFieldError(field, at + " is a hole of " + std::to_string(n) + " tokens; a hole has 1 to " +
                                          std::to_string(kMaxHoleLength));
    if (!literal.empty()) pieces.push_back({std::move(literal), 0});
    literal.clear();
    pieces.push_back({"", n});
    any_hole = true;
    i = close + 1;
  }
  if (!literal.empty()) pieces.push_back({std::move(literal), 0});
  if (!any_hole) return InvalidFieldError(field, "has no hole: mark each one with <hole:N> (N tokens)");
  return pieces;
}

StatusOr<std::vector<std::int64_t>> TemplateRegion(const std::vector<TemplatePiece>& pieces, const TextEncoder& encode) {
  std::vector<std::int64_t> region;
  for (const auto& piece : pieces) {
    if (piece.hole > 0) {
      region.insert(region.end(), static_cast<std::size_t>(piece.hole), kHole);
      continue;
    }
    UNMASK_ASSIGN_OR_RETURN(std::vector<std::int64_t> ids, encode(piece.text));
    region.insert(region.end(), ids.begin(), ids.end());
  }
  return region;
}

}  // namespace unmask::generation
