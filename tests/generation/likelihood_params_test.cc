// The likelihood parameters (GenerationParams::likelihood, common/generation/validate.h): the
// official defaults, the proto round trip, and every bad value refused by its field's name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/generation/params_proto.h"
#include "common/generation/validate.h"

namespace unmask::generation {
namespace {

using ::testing::HasSubstr;

v1::GenerationParams WithLikelihood(std::int64_t continuation, int mc_num = 0, int batch_size = 0) {
  v1::GenerationParams in;
  in.mutable_likelihood()->set_continuation_tokens(continuation);
  in.mutable_likelihood()->set_mc_num(mc_num);
  in.mutable_likelihood()->set_batch_size(batch_size);
  return in;
}

TEST(LikelihoodParamTest, UnsetIsNoneAndZeroesTakeTheOfficialDefaults) {
  auto p = ParamsFromProto(v1::GenerationParams());
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->likelihood.has_value());
  EXPECT_FALSE(ParamsToProto(*p).has_likelihood());
  p = ParamsFromProto(WithLikelihood(3));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->likelihood.has_value());
  EXPECT_EQ(p->likelihood->continuation_tokens, 3);
  EXPECT_EQ(p->likelihood->mc_num, 128);  // get_log_likelihood()'s defaults
  EXPECT_EQ(p->likelihood->batch_size, 16);
  EXPECT_FALSE(p->likelihood->check_greedy);
}

TEST(LikelihoodParamTest, TheProtoRoundTripKeepsEveryField) {
  auto in = WithLikelihood(4, 12, 3);
  in.mutable_likelihood()->set_check_greedy(true);
  in.mutable_likelihood()->set_rows_per_forward(2);
  auto p = ParamsFromProto(in);
  ASSERT_TRUE(p.ok());
  const v1::GenerationParams out = ParamsToProto(*p);
  ASSERT_TRUE(out.has_likelihood());
  EXPECT_EQ(out.likelihood().continuation_tokens(), 4);
  EXPECT_EQ(out.likelihood().mc_num(), 12);
  EXPECT_EQ(out.likelihood().batch_size(), 3);
  EXPECT_TRUE(out.likelihood().check_greedy());
  EXPECT_EQ(out.likelihood().rows_per_forward(), 2);
  auto again = ParamsFromProto(out);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->likelihood->mc_num, 12);
}

TEST(LikelihoodParamTest, BadValuesAreRefusedByName) {
  struct Bad {
    v1::GenerationParams in;
    const char* field;
  };
  std::vector<Bad> bad = {
      {WithLikelihood(0), "params.likelihood.continuation_tokens"},
      {WithLikelihood(-2), "params.likelihood.continuation_tokens"},
      {WithLikelihood(2, -1), "params.likelihood.mc_num"},
      {WithLikelihood(2, kMaxMcNum + 1, 1), "params.likelihood.mc_num"},
      {WithLikelihood(2, 10, 4), "params.likelihood.batch_size"},   // does not divide
      {WithLikelihood(2, 8, 16), "params.likelihood.batch_size"},   // above mc_num
      {WithLikelihood(2, 8, -4), "params.likelihood.batch_size"},
  };
  for (int rows : {-1, 5}) {  // at most batch_size (4)
    auto in = WithLikelihood(2, 8, 4);
    in.mutable_likelihood()->set_rows_per_forward(rows);
    bad.push_back({in, "params.likelihood.rows_per_forward"});
  }
  auto with_logprobs = WithLikelihood(2);
  with_logprobs.set_logprobs(1);
  bad.push_back({with_logprobs, "params.logprobs"});
  for (const Bad& b : bad) {
    auto p = ParamsFromProto(b.in);
    ASSERT_FALSE(p.ok()) << b.field;
    EXPECT_THAT(p.status().ToString(), HasSubstr(b.field));
  }
  auto with_prompt_logprobs = WithLikelihood(2);
  with_prompt_logprobs.set_prompt_logprobs(2);
  EXPECT_TRUE(ParamsFromProto(with_prompt_logprobs).ok()) << "the prompt may be scored too";
}

TEST(LikelihoodParamTest, TheModelDecidesTheRest) {
  checkpoint::LladaConfig llada;
  llada.embedding_size = llada.vocab_size = 1000;
  llada.mask_token_id = 999;
  llada.max_sequence_length = 64;
  GenerationParams p;
  p.mask_id = 999;
  p.gen_length = p.block_length = p.steps = 1;
  p.likelihood = LikelihoodParams{4, 8, 4, true};
  EXPECT_TRUE(ValidateParams(p, llada, 6).ok());
  EXPECT_THAT(ValidateParams(p, llada, 3).ToString(), HasSubstr("likelihood.continuation_tokens"));
  checkpoint::LladaConfig dream = llada;
  dream.architecture = checkpoint::Architecture::kDream;
  EXPECT_THAT(ValidateParams(p, dream, 6).ToString(), HasSubstr("likelihood.check_greedy"));
  checkpoint::LladaConfig llada2 = llada;
  llada2.architecture = checkpoint::Architecture::kLlada2Moe;
  EXPECT_THAT(ValidateParams(p, llada2, 6).ToString(), HasSubstr("likelihood: LLaDA2"));
}

}  // namespace
}  // namespace unmask::generation
