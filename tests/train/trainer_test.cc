// The trainer on a slice of the corpus: the loss falls, a resumed run equals the uninterrupted
// one, bad input is named, and the export is a checkpoint the engine loads.
#include "tools/train/trainer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <ATen/ATen.h>

#include "common/model/llada_model.h"
#include "common/tokenizer/bpe_trainer.h"
#include "tools/train/train_command.h"
#include "common/util/remove_tree.h"

namespace unmask::train {
namespace {
namespace fs = std::filesystem;

const std::string kSlice = std::string(UNMASK_TEST_DATA) + "/corpus/kjv-genesis-slice.txt";

std::string TempDir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("unmask-train-test-" + std::to_string(::getpid()) + "-" + name);
  unmask::util::RemoveTree(p);
  return p.string();
}

TrainOptions TinyOptions() {
  TrainOptions o;
  auto& c = o.model;
  c.d_model = 64;
  c.n_heads = c.n_kv_heads = 2;
  c.n_layers = 2;
  c.mlp_hidden_size = 128;
  c.rope_theta = 10000;
  c.max_sequence_length = 256;
  o.seq_len = 64;
  o.chat_len = 64;
  o.batch = 8;
  o.lr = 3e-3;
  o.warmup_steps = 5;
  o.log_every = 5;
  o.eval_every = 0;
  o.checkpoint_every = 4;
  o.compute = model::Precision::kFloat32;
  o.threads = 1;  // bit-for-bit reproducible
  return o;
}

// The slice, tokenized with a tokenizer trained on its training chapters.
class TrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto corpus = ReadVerseCorpus(kSlice, 8);
    ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
    std::vector<std::string> texts;
    for (const auto& c : corpus->train) texts.push_back(c.Text());
    tokenizer::BpeTrainerOptions bo;
    bo.vocab_size = 400;
    bo.special_tokens = TrainedSpecialTokens();
    auto json = tokenizer::TrainByteLevelBpe(texts, bo);
    ASSERT_TRUE(json.ok());
    auto tok = tokenizer::Tokenizer::FromJson(*json, "slice");
    ASSERT_TRUE(tok.ok());
    auto ids = tokenizer::FindChatTokenIds(**tok);
    ASSERT_TRUE(ids.ok());
    data_ = new TrainData;
    data_->mask_id = ids->mask;
    data_->eos_id = ids->eos;
    data_->train_stream = *TokenStream(corpus->train, **tok, ids->eos);
    data_->held_out_stream = *TokenStream(corpus->held_out, **tok, ids->eos);
    data_->chat = *MakeChatExamples(corpus->train, **tok, *ids, 64);
    vocab_ = (*tok)->id_limit();
  }
  static TrainOptions Options() {
    TrainOptions o = TinyOptions();
    o.model.vocab_size = o.model.embedding_size = vocab_;
    o.model.mask_token_id = data_->mask_id;
    o.model.eos_token_id = o.model.pad_token_id = data_->eos_id;
    return o;
  }
  static TrainData* data_;
  static std::int64_t vocab_;
};
TrainData* TrainerTest::data_ = nullptr;
std::int64_t TrainerTest::vocab_ = 0;

TEST_F(TrainerTest, AFewDozenStepsLowerTheLoss) {
  TrainOptions o = Options();
  o.pretrain_steps = 40;
  o.chat_steps = 0;
  auto trainer = Trainer::Create(o, *data_);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  const double before = (*trainer)->HeldOutLoss();
  std::vector<double> losses;
  auto r = (*trainer)->Run([&](const StepReport& s) { losses.push_back(s.loss); });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->steps, 40);
  ASSERT_EQ(losses.size(), 8u);
  // A random model is near ln(vocab) nats per token; 40 steps learn at least which tokens are common.
  EXPECT_NEAR(before, std::log(static_cast<double>(vocab_)), 1.0);
  EXPECT_LT(r->final_held_out_loss, before - 1.0) << "held-out loss " << before << " -> " << r->final_held_out_loss;
  EXPECT_LT(losses.back(), losses.front() - 0.5) << "first and last logged training loss";
}

TEST_F(TrainerTest, AResumedRunContinuesWhereItStoppedAndEndsAsTheUninterruptedOne) {
  TrainOptions o = Options();
  o.pretrain_steps = 8;
  o.chat_steps = 4;  // the resume crosses into the chat stage
  o.work_dir = TempDir("straight");
  auto straight = Trainer::Create(o, *data_);
  ASSERT_TRUE(straight.ok());
  ASSERT_TRUE((*straight)->Run(nullptr).ok());
  const double expected = (*straight)->HeldOutLoss();

  o.work_dir = TempDir("resumed");
  auto first = Trainer::Create(o, *data_);
  (*first)->StopAfterStep(4);
  auto part = (*first)->Run(nullptr);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->steps, 4);
  EXPECT_TRUE(fs::exists(o.work_dir + "/checkpoint/params.pt"));

  auto second = Trainer::Create(o, *data_);  // a new process would start the same way
  std::vector<std::int64_t> logged;
  auto rest = (*second)->Run([&](const StepReport& s) { logged.push_back(s.step); });
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(rest->resumed_from, 4);
  EXPECT_EQ(rest->steps, 12);
  EXPECT_EQ(logged, (std::vector<std::int64_t>{5, 10, 12}));
  EXPECT_DOUBLE_EQ((*second)->HeldOutLoss(), expected);

  // A work directory of another model shape is refused rather than mixed in.
  TrainOptions other = o;
  other.model.n_layers = 3;
  auto mixed = Trainer::Create(other, *data_);
  ASSERT_TRUE(mixed.ok());
  auto refused = (*mixed)->Run(nullptr);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("another model shape"), std::string::npos);
  unmask::util::RemoveTree(TempDir("straight"));
  unmask::util::RemoveTree(o.work_dir);
}

TEST_F(TrainerTest, OptionsThatCannotTrainAreNamed) {
  TrainOptions o = Options();
  o.seq_len = 0;
  EXPECT_NE(Trainer::Create(o, *data_).status().message().find("'seq_len' must be positive"), std::string::npos);
  o = Options();
  o.seq_len = static_cast<std::int64_t>(data_->train_stream.size()) + 1;
  o.model.max_sequence_length = o.seq_len;
  EXPECT_NE(Trainer::Create(o, *data_).status().message().find("fewer than seq_len"), std::string::npos);
  o = Options();
  TrainData no_chat = *data_;
  no_chat.chat.clear();
  EXPECT_NE(Trainer::Create(o, no_chat).status().message().find("no chat pairs"), std::string::npos);
  TrainData bad_id = *data_;
  bad_id.mask_id = static_cast<std::int32_t>(vocab_);
  EXPECT_NE(Trainer::Create(o, bad_id).status().message().find("outside the embedding"), std::string::npos);
  o = Options();
  o.device = "tpu";
  EXPECT_NE(Trainer::Create(o, *data_).status().message().find("device 'tpu'"), std::string::npos);
  if (!at::hasCUDA()) {
    o.device = "cuda";
    EXPECT_EQ(Trainer::Create(o, *data_).status().code(), StatusCode::kFailedPrecondition);
  }
}

// The chat stage pads answers with EOS to the batch's longest pair (LLaDA's SFT) or to chat_len;
// the two put different amounts of EOS into the loss, so the same steps give different losses.
TEST_F(TrainerTest, ChatPaddingToTheBatchOrToChatLenTrainsDifferently) {
  std::vector<double> loss;
  for (auto padding : {TrainOptions::ChatPadding::kBatch, TrainOptions::ChatPadding::kFull}) {
    TrainOptions o = Options();
    o.pretrain_steps = 0;
    o.chat_steps = 5;
    o.chat_padding = padding;
    auto trainer = Trainer::Create(o, *data_);
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    auto r = (*trainer)->Run(nullptr);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(std::isfinite(r->final_loss));
    loss.push_back(r->final_loss);
  }
  EXPECT_NE(loss[0], loss[1]);
}

// On a GPU (skipped elsewhere): the same initial weights give the same held-out loss on cuda as on
// the CPU, and a few steps on cuda lower it.
TEST_F(TrainerTest, TrainsOnCudaAsOnCpu) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA in this LibTorch or no GPU";
  TrainOptions o = Options();
  o.pretrain_steps = 40;
  o.chat_steps = 0;
  auto cpu = Trainer::Create(o, *data_);
  o.device = "cuda";
  auto gpu = Trainer::Create(o, *data_);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  const double before = (*gpu)->HeldOutLoss();
  EXPECT_NEAR(before, (*cpu)->HeldOutLoss(), 1e-3 * before);
  auto r = (*gpu)->Run(nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LT(r->final_held_out_loss, before - 1.0);
}

TrainCommandOptions CommandOptions(const std::string& corpus, const std::string& name) {
  TrainCommandOptions o;
  o.corpus = corpus;
  o.out = TempDir(name);
  o.vocab_size = 400;
  o.held_out_every = 8;
  o.train = TinyOptions();
  o.train.pretrain_steps = 6;
  o.train.chat_steps = 2;
  return o;
}

TEST(TrainCommand, BadInputIsNamed) {
  std::ostringstream log;
  auto missing = RunTrainCommand(CommandOptions("/nonexistent/corpus.txt", "missing"), log);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/corpus.txt"), std::string::npos);

  const std::string empty = TempDir("empty.txt");
  std::ofstream(empty) << "";
  auto none = RunTrainCommand(CommandOptions(empty, "none"), log);
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("holds no verse"), std::string::npos) << none.status().ToString();
  fs::remove(empty);

  TrainCommandOptions small = CommandOptions(kSlice, "small");
  small.vocab_size = 100;
  auto too_small = RunTrainCommand(small, log);
  EXPECT_EQ(too_small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_small.status().message().find("too small for the 6 special tokens"), std::string::npos)
      << too_small.status().ToString();
  unmask::util::RemoveTree(small.out + ".work");
}

TEST(TrainCommand, WritesACheckpointTheEngineLoadsWithItsOwnTokenIds) {
  TrainCommandOptions o = CommandOptions(kSlice, "export");
  std::ostringstream log;
  auto r = RunTrainCommand(o, log);
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << log.str();
  EXPECT_NE(log.str().find("step 5/8 pretrain"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("step 8/8 chat"), std::string::npos) << log.str();
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "training.json"})
    EXPECT_TRUE(fs::exists(o.out + "/" + f)) << f;
  auto config = checkpoint::LladaConfig::FromFile(o.out + "/config.json");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->vocab_size, 400);
  EXPECT_EQ(config->eos_token_id, 0);
  EXPECT_EQ(config->mask_token_id, 2);
  EXPECT_EQ(config->eot_token_id, 5);
  model::ModelOptions mo;
  mo.precision = model::Precision::kBFloat16;
  auto m = model::LladaModel::Load(o.out, mo);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  at::Tensor ids = at::full({1, 8}, config->mask_token_id, at::kLong);
  EXPECT_EQ((*m)->Logits(ids, at::Tensor()).size(-1), 400);
  std::ifstream tc(o.out + "/tokenizer_config.json");
  const auto j = nlohmann::json::parse(tc);
  EXPECT_EQ(j["mask_token"], "<|mdm_mask|>");
  EXPECT_NE(j["chat_template"].get<std::string>().find("<|start_header_id|>"), std::string::npos);
  unmask::util::RemoveTree(o.out);
  unmask::util::RemoveTree(o.out + ".work");
}

}  // namespace
}  // namespace unmask::train
