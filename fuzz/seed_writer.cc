// Writes the seeds that are easiest made by the real writers: manifests and whole weight
// segments (header + manifest + data) of a tiny LLaDA layout in several precisions, and small
// safetensors files. Usage: fuzz_seed_writer <corpus dir> (fuzz/make_corpus.sh runs it).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_writer.h"
#include "common/checkpoint/llada_config.h"
#include "common/segment/layout.h"
#include "common/segment/segment_format.h"
#include "tests/fixtures/tiny_config.h"

using namespace unmask;

namespace {

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

// The fixtures' small config (tests/fixtures/tiny_config.h) on one layer of two heads, a
// vocabulary of 48 and LLaDA's context, with an end-of-turn id inside the vocabulary as a chat
// checkpoint has.
checkpoint::LladaConfig SeedConfig() {
  unmask::testing::TinyShape shape;
  shape.n_layers = 1;
  shape.vocab = 48;
  shape.n_heads = 2;
  shape.max_sequence_length = 4096;
  checkpoint::LladaConfig config = unmask::testing::SmallConfig(shape);
  config.eot_token_id = shape.vocab - 3;
  return config;
}

// A ready segment of `manifest` whose data region holds pseudo-random bytes.
std::string Segment(weights::Manifest manifest, std::uint32_t seed) {
  const weights::SegmentPlan plan = weights::PlanSegment(manifest);
  std::string bytes(plan.segment_bytes, '\0');
  auto* base = reinterpret_cast<std::uint8_t*>(bytes.data());
  std::mt19937 rng(seed);
  for (std::uint64_t i = plan.data_offset; i < plan.segment_bytes; ++i) base[i] = static_cast<std::uint8_t>(rng());
  weights::WriteSegmentHeader(base, plan, manifest.totals.data_bytes);
  weights::MarkSegmentReady(base);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string corpus = argv[1];
  const checkpoint::LladaConfig config = SeedConfig();
  std::uint32_t seed = 1;
  for (const char* spec_text : {"bf16", "fp32", "int8", "int4:g32:asym", "int4:g32:sym:emb"}) {
    auto spec = weights::PrecisionSpec::Parse(spec_text);
    auto manifest = spec.ok() ? weights::PlanLayout(config, *spec) : spec.status();
    if (!manifest.ok()) {
      std::fprintf(stderr, "%s: %s\n", spec_text, manifest.status().ToString().c_str());
      return 1;
    }
    manifest->model_id = "tiny";
    manifest->source_dir = "/models/tiny";
    manifest->config_json = config.ToJsonText();
    std::string name = spec_text;
    for (char& ch : name) ch = (ch == ':' ? '_' : ch);
    const std::string segment = Segment(*manifest, seed++);
    weights::PlanSegment(*manifest);
    WriteBytes(corpus + "/manifest/" + name + ".json", manifest->ToJson());
    if (name != "fp32") WriteBytes(corpus + "/segment/" + name + ".seg", segment);  // the largest; bf16 covers it
  }

  // safetensors: one tensor of each dtype, a scalar, an empty tensor, metadata.
  std::vector<checkpoint::TensorSpec> specs = {
      {"model.transformer.ln_f.weight", checkpoint::DType::kBF16, {4}},
      {"f32", checkpoint::DType::kF32, {2, 3}},
      {"f16", checkpoint::DType::kF16, {3}},
      {"f64", checkpoint::DType::kF64, {1}},
      {"i8", checkpoint::DType::kI8, {5}},
      {"u8", checkpoint::DType::kU8, {2, 2}},
      {"i16", checkpoint::DType::kI16, {2}},
      {"i32", checkpoint::DType::kI32, {1, 1}},
      {"i64", checkpoint::DType::kI64, {1}},
      {"bool", checkpoint::DType::kBool, {3}},
      {"scalar", checkpoint::DType::kF32, {}},
      {"empty", checkpoint::DType::kF32, {0, 4}},
  };
  auto fill = [](const checkpoint::TensorSpec& s, std::uint8_t* dst) {
    for (std::uint64_t i = 0; i < s.nbytes(); ++i) dst[i] = static_cast<std::uint8_t>(i * 37 + 11);
  };
  auto status = checkpoint::WriteSafetensors(corpus + "/safetensors/dtypes.safetensors", specs, fill,
                                             {{"format", "pt"}, {"note", "seed"}});
  if (status.ok())
    status = checkpoint::WriteSafetensors(corpus + "/safetensors/empty.safetensors", {}, fill, {});
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
