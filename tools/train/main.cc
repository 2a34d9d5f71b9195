// unmask-train: trains unmask's own small LLaDA-architecture model (see train_command.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "common/model/cpu_features.h"
#include "common/model/threading.h"
#include "tools/train/train_command.h"

int main(int argc, char** argv) {
  unmask::train::TrainCommandOptions o;
  auto& t = o.train;
  auto& c = t.model;
  c.d_model = 256;
  c.n_heads = c.n_kv_heads = 4;
  c.n_layers = 8;
  c.mlp_hidden_size = 704;
  c.rope_theta = 10000;
  c.max_sequence_length = 1024;
  std::string compute = "auto";
  CLI::App app{"unmask-train: trains a small LLaDA-architecture masked-diffusion model on a verse corpus"};
  app.add_option("--corpus", o.corpus, "Verse lines '<book><chapter>:<verse> <text>' (tools/make_corpus.sh)")->required();
  app.add_option("--out", o.out, "Model directory to write (Hugging Face layout)")->required();
  app.add_option("--work", o.work, "Tokenizer and checkpoints; a rerun resumes from them (default OUT.work)");
  app.add_option("--vocab-size", o.vocab_size, "BPE vocabulary, special tokens included")->capture_default_str();
  app.add_option("--held-out-every", o.held_out_every, "Every Nth chapter is held out")->capture_default_str();
  app.add_option("--d-model", c.d_model)->capture_default_str();
  app.add_option("--n-layers", c.n_layers)->capture_default_str();
  app.add_option("--n-heads", c.n_heads)->capture_default_str();
  app.add_option("--mlp-hidden-size", c.mlp_hidden_size)->capture_default_str();
  app.add_option("--rope-theta", c.rope_theta)->capture_default_str();
  app.add_option("--seq-len", t.seq_len, "Pre-training window")->capture_default_str();
  app.add_option("--chat-len", t.chat_len, "Longest chat pair in tokens (longer pairs are left out)")->capture_default_str();
  app.add_option("--batch", t.batch)->capture_default_str();
  app.add_option("--pretrain-steps", t.pretrain_steps)->capture_default_str();
  app.add_option("--chat-steps", t.chat_steps, "Steps of the chat stage (each also does a pre-training batch)")->capture_default_str();
  app.add_option("--lr", t.lr)->capture_default_str();
  app.add_option("--chat-lr", t.chat_lr, "Peak learning rate of the chat stage (its own cosine)")->capture_default_str();
  app.add_option("--warmup-steps", t.warmup_steps)->capture_default_str();
  app.add_option("--weight-decay", t.weight_decay)->capture_default_str();
  app.add_option("--seed", t.seed)->capture_default_str();
  app.add_option("--compute", compute,
                 "auto (fp32 on a CPU, where the master weights are fp32; bf16 on a GPU: model/cpu_features.h), bf16 or fp32 (master weights are fp32 "
                 "either way)")
      ->capture_default_str();
  app.add_option("--threads", t.threads, "Intra-op threads (0: one per core)")->capture_default_str();
  app.add_option("--device", t.device, "cpu or cuda[:N]: where the forward and backward run")->capture_default_str();
  std::string padding = "batch";
  app.add_option("--chat-padding", padding,
                 "Pad chat answers with EOS to the batch's longest pair (batch) or always to --chat-len (full)")
      ->check(CLI::IsMember({"batch", "full"}))
      ->capture_default_str();
  app.add_option("--log-every", t.log_every)->capture_default_str();
  app.add_option("--eval-every", t.eval_every, "Held-out loss every N steps (0: only at the end)")->capture_default_str();
  app.add_option("--checkpoint-every", t.checkpoint_every)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  c.n_kv_heads = c.n_heads;
  t.chat_padding = padding == "full" ? unmask::train::TrainOptions::ChatPadding::kFull
                                     : unmask::train::TrainOptions::ChatPadding::kBatch;
  auto requested = unmask::model::ParsePrecisionFlag(compute);
  if (!requested.ok()) {
    std::cerr << "unmask-train: --compute: " << requested.status().ToString() << "\n";
    return 2;
  }
  if (auto cap = unmask::model::CheckMaxCpuIsa(); !cap.ok()) {
    std::cerr << "unmask-train: " << cap.ToString() << "\n";
    return 2;
  }
  const bool on_gpu = t.device.rfind("cuda", 0) == 0;
  const auto choice = unmask::model::ChooseCompute(*requested, unmask::model::HostCpuFeatures(), on_gpu,
                                                   unmask::model::Precision::kFloat32);
  t.compute = choice.compute;
  std::cout << "compute: " << unmask::model::PrecisionName(choice.compute) << " (" << choice.why << ")" << std::endl;
  auto threading = unmask::model::ConfigureThreading(t.threads);  // Trainer::Run applies the same plan
  if (!threading.ok()) {
    std::cerr << "unmask-train: --threads: " << threading.status().message() << "\n";
    return 2;
  }
  std::cout << "threads: " << threading->Describe() << std::endl;
  auto result = unmask::train::RunTrainCommand(o, std::cout);
  if (!result.ok()) {
    std::cerr << "unmask-train: " << result.status().ToString() << "\n";
    return result.status().code() == unmask::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
