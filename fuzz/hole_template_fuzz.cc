// Templates with holes (common/generation/canvas.h: ParseHoleTemplate, TemplateRegion): the fuzz
// bytes are a request's template text. Beyond "no crash, no leak, no hang":
//   - an error is InvalidArgument naming the field;
//   - a parsed template has a hole, every hole of 1..kMaxHoleLength tokens, and no empty or
//     adjacent text pieces;
//   - written back ("<hole:N>" for a hole, "<<hole:" for a literal "<hole:") it parses to the
//     same pieces: the marker syntax is unambiguous;
//   - its region (each text byte one token) has as many entries as text bytes plus hole tokens.
// Seeds: fuzz/corpus/hole_template (templates of the tests and the README).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/generation/canvas.h"
#include "fuzz/fuzz_check.h"

using namespace unmask;
using generation::TemplatePiece;

namespace {

std::string WriteBack(const std::vector<TemplatePiece>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    if (p.hole > 0) {
      out += "<hole:" + std::to_string(p.hole) + ">";
      continue;
    }
    for (std::size_t i = 0; i < p.text.size(); ++i) {
      if (p.text.compare(i, 6, "<hole:") == 0) out += '<';
      out += p.text[i];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto pieces = generation::ParseHoleTemplate(text, "template_text");
  if (!pieces.ok()) {
    UNMASK_FUZZ_CHECK(pieces.status().code() == StatusCode::kInvalidArgument, "errors are InvalidArgument");
    UNMASK_FUZZ_CHECK(pieces.status().ToString().find("template_text") != std::string::npos, "errors name the field");
    return 0;
  }
  bool any_hole = false;
  std::int64_t expected = 0;
  for (std::size_t i = 0; i < pieces->size(); ++i) {
    const TemplatePiece& p = (*pieces)[i];
    if (p.hole > 0) {
      UNMASK_FUZZ_CHECK(p.hole <= generation::kMaxHoleLength, "holes within the limit");
      any_hole = true;
      expected += p.hole;
      continue;
    }
    UNMASK_FUZZ_CHECK(p.hole == 0 && !p.text.empty(), "text pieces are not empty");
    UNMASK_FUZZ_CHECK(i == 0 || (*pieces)[i - 1].hole > 0, "text pieces are never adjacent");
    expected += static_cast<std::int64_t>(p.text.size());
  }
  UNMASK_FUZZ_CHECK(any_hole, "a parsed template has a hole");
  auto again = generation::ParseHoleTemplate(WriteBack(*pieces), "template_text");
  UNMASK_FUZZ_CHECK(again.ok() && again->size() == pieces->size(), "written back, it parses again");
  for (std::size_t i = 0; i < pieces->size(); ++i)
    UNMASK_FUZZ_CHECK((*again)[i].hole == (*pieces)[i].hole && (*again)[i].text == (*pieces)[i].text,
                      "written back, it parses to the same pieces");
  auto region = generation::TemplateRegion(*pieces, [](const std::string& t) -> StatusOr<std::vector<std::int64_t>> {
    return std::vector<std::int64_t>(t.begin(), t.end());
  });
  UNMASK_FUZZ_CHECK(region.ok() && static_cast<std::int64_t>(region->size()) == expected, "the region's length");
  return 0;
}
