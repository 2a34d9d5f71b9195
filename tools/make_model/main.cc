// make-model: writes a random LLaDA checkpoint of any size in the Hugging Face layout.
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/quant/quant_policy.h"
#include "tools/make_model/make_model.h"

int main(int argc, char** argv) {
  unmask::tools::MakeModelOptions o;
  auto& c = o.config;
  std::string out, dtype = "bf16";
  CLI::App app{"make-model: random LLaDA checkpoints in the Hugging Face layout"};
  app.add_option("--out", out, "Output directory")->required();
  app.add_option("--d-model", c.d_model)->capture_default_str();
  app.add_option("--n-layers", c.n_layers)->capture_default_str();
  app.add_option("--n-heads", c.n_heads)->capture_default_str();
  app.add_option("--n-kv-heads", c.n_kv_heads, "Defaults to --n-heads");
  app.add_option("--mlp-hidden-size", c.mlp_hidden_size)->capture_default_str();
  app.add_option("--vocab-size", c.vocab_size)->capture_default_str();
  app.add_option("--max-sequence-length", c.max_sequence_length)->capture_default_str();
  app.add_option("--weight-tying", c.weight_tying)->capture_default_str();
  app.add_option("--shards", o.shards)->capture_default_str();
  app.add_option("--dtype", dtype, "bf16, fp16 or fp32")->capture_default_str();
  app.add_option("--seed", o.seed)->capture_default_str();
  app.add_option("--init-std", o.init_std)->capture_default_str();
  app.add_option("--tokenizer", o.tokenizer, "tokenizer.json to copy into the model directory");
  app.add_option("--active-vocab", o.active_vocab, "Zero the LM head rows of ids >= N (random models then emit only ids < N)");
  app.add_option("--head-scale", o.head_scale,
                 "Multiply the LM head by S (> 0): the same argmax, sharper confidences, so that the threshold rule "
                 "fires on a random model (parallel decoding benchmarks)")
      ->capture_default_str();
  app.add_flag("--fast-init", o.fast_init,
               "Draw on all cores with a counter-based generator (an 8B model in seconds); other values "
               "than the default generator's for the same seed");
  // The LLaDA-8B shape unless told otherwise.
  c.d_model = 4096;
  c.n_layers = 32;
  c.n_heads = 32;
  c.n_kv_heads = -1;
  c.mlp_hidden_size = 12288;
  CLI11_PARSE(app, argc, argv);
  if (c.n_kv_heads < 0) c.n_kv_heads = c.n_heads;
  c.embedding_size = c.vocab_size;
  const auto precision = unmask::weights::ParsePrecisionName(dtype);  // the one parser of precision names
  if (precision.ok() && *precision == unmask::weights::Precision::kBf16) {
    o.dtype = unmask::checkpoint::DType::kBF16;
  } else if (precision.ok() && *precision == unmask::weights::Precision::kFp16) {
    o.dtype = unmask::checkpoint::DType::kF16;
  } else if (precision.ok() && *precision == unmask::weights::Precision::kFp32) {
    o.dtype = unmask::checkpoint::DType::kF32;
  } else {
    std::cerr << "make-model: --dtype '" << dtype << "' is not one of bf16, fp16, fp32\n";
    return 2;
  }
  auto s = unmask::tools::MakeModel(out, o);
  if (!s.ok()) {
    std::cerr << "make-model: " << s.ToString() << "\n";
    return s.code() == unmask::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::cout << "wrote " << out << ": " << c.parameter_count() << " parameters\n";
  return 0;
}
