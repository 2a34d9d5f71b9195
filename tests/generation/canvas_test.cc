// Templates with holes and the canvas rules (common/generation/canvas.h), and the logprobs fields.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/generation/canvas.h"
#include "common/generation/params_proto.h"
#include "common/generation/validate.h"

namespace unmask::generation {
namespace {

using ::testing::HasSubstr;

TEST(HoleTemplateTest, SplitsTextAndHolesInOrder) {
  auto pieces = ParseHoleTemplate("{\"a\": \"<hole:3>\", \"b\": <hole:12>}", "template_text");
  ASSERT_TRUE(pieces.ok()) << pieces.status().ToString();
  ASSERT_EQ(pieces->size(), 5U);
  EXPECT_EQ((*pieces)[0].text, "{\"a\": \"");
  EXPECT_EQ((*pieces)[1].hole, 3);
  EXPECT_EQ((*pieces)[2].text, "\", \"b\": ");
  EXPECT_EQ((*pieces)[3].hole, 12);
  EXPECT_EQ((*pieces)[4].text, "}");
}

TEST(HoleTemplateTest, HolesMayStartEndAndFollowEachOther) {
  auto pieces = ParseHoleTemplate("<hole:1><hole:2>", "t");
  ASSERT_TRUE(pieces.ok());
  ASSERT_EQ(pieces->size(), 2U);
  EXPECT_EQ((*pieces)[0].hole, 1);
  EXPECT_EQ((*pieces)[1].hole, 2);
}

TEST(HoleTemplateTest, ADoubledBracketIsALiteralMarker) {
  auto pieces = ParseHoleTemplate("write <<hole:5> here: <hole:5>", "t");
  ASSERT_TRUE(pieces.ok()) << pieces.status().ToString();
  ASSERT_EQ(pieces->size(), 2U);
  EXPECT_EQ((*pieces)[0].text, "write <hole:5> here: ");
  EXPECT_EQ((*pieces)[1].hole, 5);
}

TEST(HoleTemplateTest, BadTemplatesAreRefusedNamingTheField) {
  const std::map<std::string, std::string> bad = {
      {"no hole at all", "has no hole"},
      {"", "has no hole"},
      {"a <hole:0> b", "a hole of 0 tokens"},
      {"a <hole:4097> b", "a hole of 4097 tokens"},
      {"a <hole:9999999> b", "not a number of tokens"},
      {"a <hole:> b", "not a number of tokens"},
      {"a <hole:-3> b", "not a number of tokens"},
      {"a <hole:3 b> c", "not a number of tokens"},
      {"a <hole:3", "is not closed"},
      {"only <<hole:3> escaped", "has no hole"},
  };
  for (const auto& [text, why] : bad) {
    auto r = ParseHoleTemplate(text, "template_text");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().ToString(), HasSubstr("template_text")) << text;
    EXPECT_THAT(r.status().ToString(), HasSubstr(why)) << text;
  }
}

TEST(HoleTemplateTest, TheRegionEncodesTextAndLaysOutHoles) {
  auto pieces = ParseHoleTemplate("ab<hole:2>c", "t");
  ASSERT_TRUE(pieces.ok());
  auto region = TemplateRegion(*pieces, [](const std::string& text) -> StatusOr<std::vector<std::int64_t>> {
    std::vector<std::int64_t> ids;
    for (char c : text) ids.push_back(c);
    return ids;
  });
  ASSERT_TRUE(region.ok());
  EXPECT_EQ(*region, (std::vector<std::int64_t>{'a', 'b', kHole, kHole, 'c'}));
  auto failing = TemplateRegion(*pieces, [](const std::string&) -> StatusOr<std::vector<std::int64_t>> {
    return InvalidFieldError("template_text", "cannot encode");
  });
  EXPECT_FALSE(failing.ok());
}

TEST(CanvasTest, RegionIdsMaskTheHoles) {
  Canvas c;
  EXPECT_EQ(c.RegionIds(3, 9), (std::vector<std::int64_t>{9, 9, 9}));
  EXPECT_FALSE(c.has_fixed_region());
  c.region = {5, kHole, 6};
  EXPECT_EQ(c.RegionIds(3, 9), (std::vector<std::int64_t>{5, 9, 6}));
  EXPECT_TRUE(c.has_fixed_region());
  c.region = {kHole, kHole};
  EXPECT_FALSE(c.has_fixed_region());
}

TEST(CanvasTest, ValidateRefusesWhatCannotRun) {
  Canvas c;
  EXPECT_TRUE(ValidateCanvas(c, 4, 100, 99).ok());
  c.region = {1, kHole, 2};
  EXPECT_THAT(ValidateCanvas(c, 4, 100, 99).ToString(), HasSubstr("gen_length (4)"));
  c.region = {1, 2, 3, 4};
  EXPECT_THAT(ValidateCanvas(c, 4, 100, 99).ToString(), HasSubstr("no hole"));
  c.region = {1, kHole, 99, 4};
  EXPECT_THAT(ValidateCanvas(c, 4, 100, 99, "template_text", "suffix").ToString(), HasSubstr("template_text"));
  c.region = {1, kHole, 100, 4};
  EXPECT_THAT(ValidateCanvas(c, 4, 100, 99).ToString(), HasSubstr("entry 2 is 100"));
  c.region = {1, kHole, -2, 4};
  EXPECT_FALSE(ValidateCanvas(c, 4, 100, 99).ok());
  c.region.clear();
  c.suffix = {3, kHole};
  EXPECT_THAT(ValidateCanvas(c, 4, 100, 99, "template_text", "suffix").ToString(), HasSubstr("suffix"));
  c.suffix = {3, 4};
  EXPECT_TRUE(ValidateCanvas(c, 4, 100, 99).ok());
}

TEST(LogprobsParamTest, TheRangeIsZeroToTwentyAndUnsetMeansNone) {
  v1::GenerationParams in;
  auto p = ParamsFromProto(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->logprobs, -1);
  EXPECT_FALSE(ParamsToProto(*p).has_logprobs());
  for (int k : {0, 5, 20}) {
    in.set_logprobs(k);
    p = ParamsFromProto(in);
    ASSERT_TRUE(p.ok()) << k;
    EXPECT_EQ(p->logprobs, k);
    EXPECT_EQ(ParamsToProto(*p).logprobs(), k);
  }
  for (int k : {-1, 21, 1000}) {
    in.set_logprobs(k);
    p = ParamsFromProto(in);
    ASSERT_FALSE(p.ok()) << k;
    EXPECT_THAT(p.status().ToString(), HasSubstr("params.logprobs"));
  }
}

TEST(LogprobsParamTest, PromptLogprobsTakeTheSameRangeUnderTheirOwnName) {
  v1::GenerationParams in;
  auto p = ParamsFromProto(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->prompt_logprobs, -1);
  EXPECT_FALSE(ParamsToProto(*p).has_prompt_logprobs());
  for (int k : {0, 7, 20}) {
    in.set_prompt_logprobs(k);
    p = ParamsFromProto(in);
    ASSERT_TRUE(p.ok()) << k;
    EXPECT_EQ(p->prompt_logprobs, k);
    EXPECT_EQ(p->logprobs, -1) << "the generated tokens' are a separate field";
    EXPECT_EQ(ParamsToProto(*p).prompt_logprobs(), k);
  }
  for (int k : {-1, 21, 1000}) {
    in.set_prompt_logprobs(k);
    p = ParamsFromProto(in);
    ASSERT_FALSE(p.ok()) << k;
    EXPECT_THAT(p.status().ToString(), HasSubstr("params.prompt_logprobs"));
  }
}

}  // namespace
}  // namespace unmask::generation
