// The real unmask-engine and make-model binaries, run the way a user runs them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tests/fixtures/temp_checkpoint.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/test_paths.h"

namespace unmask {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

using testing::CommandResult;
using testing::RunCommand;

std::string Join(const json& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ",") + std::to_string(id.get<std::int64_t>());
  return s;
}

TEST(UnmaskEngineCliTest, GenerateJsonMatchesTheGoldenFileForBatchAndSampledCases) {
  std::ifstream in(unmask::testing::TestDataPath("tiny-llada.golden.json"));
  const json golden = json::parse(in);
  for (int index : {3, 7, 8}) {  // a batch of two, temperature 0.7, random remasking
    const json& c = golden["cases"][index];
    std::string cmd = std::string(UNMASK_ENGINE_BIN) + " generate --model " + unmask::testing::TestDataPath("tiny-llada");
    for (const auto& row : c["prompt"]) cmd += " --prompt-ids " + Join(row);
    cmd += " --steps " + std::to_string(c["steps"].get<int>()) + " --gen-length " + std::to_string(c["gen_length"].get<int>()) +
           " --block-length " + std::to_string(c["block_length"].get<int>()) + " --temperature " +
           std::to_string(c["temperature"].get<double>()) + " --remasking " + c["remasking"].get<std::string>() +
           " --seed " + std::to_string(c["seed"].get<int>()) + " --precision fp32 --json";  // the golden is fp32
    CommandResult r = RunCommand(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    json out = json::parse(r.out);
    EXPECT_EQ(out["output"], c["output"]) << "case " << index;
    EXPECT_EQ(out["unmasked_per_step"], c["unmasked_per_step"]) << "case " << index;
    EXPECT_GT(out["seconds"].get<double>(), 0.0);
  }
}

TEST(UnmaskEngineCliTest, BadInputExitsWithTwoAndNamesTheProblem) {
  const std::string base = std::string(UNMASK_ENGINE_BIN) + " generate --model " + unmask::testing::TestDataPath("tiny-llada");
  CommandResult r = RunCommand(base + " --prompt-ids 1,,2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--prompt-ids '1,,2': element 1"));
  r = RunCommand(base + " --prompt-ids 1,2 --gen-length 12 --block-length 8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--block-length: must divide gen_length (12), got 8"));
  r = RunCommand(base + " --prompt-ids 1 --remasking sideways");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--remasking: 'sideways' is not one of low_confidence, random"));
  r = RunCommand(base + " --prompt-ids 1 --precision fp8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("precision 'fp8'"));
  r = RunCommand(std::string(UNMASK_ENGINE_BIN) + " generate --model /nonexistent --prompt-ids 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("/nonexistent/config.json"));
  r = RunCommand(base + " --prompt-ids 1 --steps banana");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--steps"));
}

TEST(UnmaskEngineCliTest, EveryFastModeIsReachableAndGivesFastDllmsIds) {
  std::ifstream in(unmask::testing::TestDataPath("tiny-llada.fastdllm.golden.json"));
  const json golden = json::parse(in);
  for (int index : {0, 1, 2, 3}) {  // prefix_cache, prefix_cache+threshold, dual_cache, dual_cache+threshold
    const json& c = golden["cases"][index];
    const std::string cmd = std::string(UNMASK_ENGINE_BIN) + " generate --model " +
                            unmask::testing::TestDataPath("tiny-llada") + " --prompt-ids " + Join(c["prompt"]) +
                            " --steps " + std::to_string(c["steps"].get<int>()) + " --gen-length " +
                            std::to_string(c["gen_length"].get<int>()) + " --block-length " +
                            std::to_string(c["block_length"].get<int>()) + " --sampler " + c["sampler"].get<std::string>() +
                            " --threshold 0.9 --no-early-stop --precision fp32 --json";  // the golden is fp32
    CommandResult r = RunCommand(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const json out = json::parse(r.out);
    EXPECT_EQ(out["output"][0], c["output"]) << c["sampler"];
    EXPECT_EQ(out["sampler"], c["sampler"]);
    EXPECT_EQ(out["steps_run"], c["nfe"]) << c["sampler"];
  }
}

TEST(UnmaskEngineCliTest, BadSamplerOptionsAreNamed) {
  const std::string base =
      std::string(UNMASK_ENGINE_BIN) + " generate --model " + unmask::testing::TestDataPath("tiny-llada") + " --prompt-ids 1,2";
  CommandResult r = RunCommand(base + " --sampler warp_speed");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--sampler"));
  EXPECT_THAT(r.out, HasSubstr("warp_speed"));
  EXPECT_THAT(r.out, HasSubstr("dual_cache+threshold"));  // what is accepted
  r = RunCommand(base + " --sampler threshold --threshold -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--threshold: must be in [0, 1], got -1"));
  r = RunCommand(base + " --sampler factor --factor 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--factor: must be in (0, 1e+06], got 0"));
  r = RunCommand(base + " --threads -2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--threads"));
  r = RunCommand(base + " --gemm turbo");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--gemm: gemm path 'turbo' is not one of auto, avx512, avx2, blas"));
}

TEST(UnmaskEngineCliTest, TheKernelAndTheBlasGiveTheSameIds) {
  const std::string base = std::string(UNMASK_ENGINE_BIN) + " generate --model " +
                           unmask::testing::TestDataPath("tiny-llada") +
                           " --prompt-ids 1,2,3,4 --gen-length 16 --block-length 8 --steps 16 --precision fp32 --json";
  CommandResult blas = RunCommand(base + " --gemm blas");
  ASSERT_EQ(blas.exit_code, 0) << blas.out;
  for (const char* path : {"auto", "avx2", "avx512"}) {
    CommandResult kernel = RunCommand(base + " --gemm " + path);
    if (kernel.exit_code == 2 && kernel.out.find("this CPU lacks") != std::string::npos) continue;  // not on this CPU
    ASSERT_EQ(kernel.exit_code, 0) << kernel.out;
    const json out = json::parse(kernel.out);
    EXPECT_EQ(json::parse(blas.out)["output"], out["output"]) << path;
    if (std::string(path) != "auto") {
      EXPECT_THAT(out["compute"]["gemm"].get<std::string>(), HasSubstr(std::string(path) + " (--gemm"));
    }
  }
}

// UNMASK_MAX_CPU_ISA=avx2: this CPU runs as an AVX2-only one (every choice made without AVX-512),
// says so, and gives the BLAS's ids; a bad value stops the start naming the variable.
TEST(UnmaskEngineCliTest, TheIsaCapMakesTheChoicesAsOnANarrowerCpu) {
  const std::string base = std::string(UNMASK_ENGINE_BIN) + " generate --model " +
                           unmask::testing::TestDataPath("tiny-llada") +
                           " --prompt-ids 1,2,3,4 --gen-length 16 --block-length 8 --steps 16 --json";
  CommandResult blas = RunCommand(base + " --precision fp32 --gemm blas");
  ASSERT_EQ(blas.exit_code, 0) << blas.out;
  CommandResult capped = RunCommand("UNMASK_MAX_CPU_ISA=avx2 " + base);
  ASSERT_EQ(capped.exit_code, 0) << capped.out;
  const json out = json::parse(capped.out);
  const std::string flags = out["compute"]["cpu_flags"].get<std::string>();
  EXPECT_THAT(flags, HasSubstr("(capped by UNMASK_MAX_CPU_ISA=avx2)"));
  EXPECT_THAT(flags, Not(HasSubstr("avx512")));
  EXPECT_EQ(out["compute"]["precision"], "fp32");  // no bf16 instructions below the cap
  EXPECT_THAT(out["compute"]["gemm"].get<std::string>(), HasSubstr("avx2 (the widest"));
  EXPECT_EQ(out["output"], json::parse(blas.out)["output"]);

  CommandResult wider = RunCommand("UNMASK_MAX_CPU_ISA=avx2 " + base + " --gemm avx512");
  EXPECT_EQ(wider.exit_code, 2);
  EXPECT_THAT(wider.out, HasSubstr("avx512"));
  CommandResult bad = RunCommand("UNMASK_MAX_CPU_ISA=avx3 " + base);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("UNMASK_MAX_CPU_ISA: 'avx3' is not one of native, avx512_bf16, avx512, avx2, baseline"));
}

// No --precision: the compute type comes from the device and the CPU, and the output says which
// and why, with the threading and the kernel path.
TEST(UnmaskEngineCliTest, TheDefaultPrecisionIsChosenAndExplained) {
  const std::string base = std::string(UNMASK_ENGINE_BIN) + " generate --model " +
                           unmask::testing::TestDataPath("tiny-llada") +
                           " --prompt-ids 1,2,3,4 --gen-length 16 --block-length 8 --steps 16 --json";
  CommandResult r = RunCommand(base);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json compute = json::parse(r.out)["compute"];
  // tiny-llada is stored as bf16: bf16 where the CPU has bf16 instructions, fp32 elsewhere.
  const std::string flags = compute["cpu_flags"].get<std::string>();
  const bool native_bf16 = flags.find("avx512_bf16") != std::string::npos || flags.find("amx_bf16") != std::string::npos;
  EXPECT_EQ(compute["precision"], native_bf16 ? "bf16" : "fp32") << flags;
  EXPECT_THAT(compute["precision_why"].get<std::string>(), HasSubstr("CPU"));
  EXPECT_THAT(compute["threads"].get<std::string>(), HasSubstr("intra-op threads"));
  EXPECT_FALSE(compute["cpu_flags"].get<std::string>().empty());
  r = RunCommand(base + " --precision bf16");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(json::parse(r.out)["compute"]["precision"], "bf16");
  EXPECT_EQ(json::parse(r.out)["compute"]["precision_why"], "--precision bf16 was given");
  r = RunCommand(base + " --precision fp64");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--precision: precision 'fp64' is not one of auto, fp32, bf16, fp16"));
}

TEST(MakeModelCliTest, WritesACheckpointTheEngineGeneratesFrom) {
  unmask::testing::TempDir dir;
  const std::string model = dir.File("m");
  CommandResult made = RunCommand(std::string(MAKE_MODEL_BIN) + " --out " + model +
                        " --d-model 32 --n-layers 2 --n-heads 4 --n-kv-heads 2 --mlp-hidden-size 48 --vocab-size 126464 --shards 3");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  EXPECT_THAT(made.out, HasSubstr("parameters"));
  std::ifstream index(model + "/model.safetensors.index.json");
  EXPECT_EQ(json::parse(index)["weight_map"].size(), 1u + 2u * 9u + 2u);
  CommandResult gen = RunCommand(std::string(UNMASK_ENGINE_BIN) + " generate --model " + model +
                       " --prompt-ids 5,6,7 --steps 8 --gen-length 8 --block-length 4 --precision bf16 --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.out;
  EXPECT_EQ(json::parse(gen.out)["output"][0].size(), 8u);

  CommandResult bad = RunCommand(std::string(MAKE_MODEL_BIN) + " --out " + dir.File("bad") + " --d-model 30 --n-heads 4");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("'d_model' (30) is not divisible by 'n_heads' (4)"));
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

const std::string kLladaLikeTokenizer = unmask::testing::TestDataPath("tokenizers/llada-like.tokenizer.json");

TEST(UnmaskEngineCliTest, ChatPromptIsEncodedWithTheTemplateAndTextIsPrinted) {
  CommandResult r = RunCommand(std::string(UNMASK_ENGINE_BIN) + " generate --model " + unmask::testing::TestDataPath("tiny-llada") +
                               " --tokenizer " + kLladaLikeTokenizer +
                               " --prompt 'Hello there' --chat --steps 8 --gen-length 8 --block-length 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json out = json::parse(r.out);
  const auto prompt = out["prompt_ids"][0].get<std::vector<std::int64_t>>();
  ASSERT_GE(prompt.size(), 8u);
  EXPECT_EQ(prompt[0], 126080);  // <|startoftext|>
  EXPECT_EQ(prompt[1], 126346);  // <|start_header_id|>
  // user turn + assistant generation prompt: two headers, one <|eot_id|>, no EOS.
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), 126346), 2);
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), 126347), 2);
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), 126348), 1);
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), 126081), 0);
  EXPECT_TRUE(out.contains("text"));
  EXPECT_EQ(out["output"][0].size(), 8u);
}

TEST(UnmaskEngineCliTest, PromptWithoutTokenizerIsRefused) {
  CommandResult r = RunCommand(std::string(UNMASK_ENGINE_BIN) + " generate --model " + unmask::testing::TestDataPath("tiny-llada") +
                               " --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--prompt needs a tokenizer"));
  r = RunCommand(std::string(UNMASK_ENGINE_BIN) + " generate --model " + unmask::testing::TestDataPath("tiny-llada") +
                 " --prompt hi --prompt-ids 1,2 --tokenizer " + kLladaLikeTokenizer);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("either --prompt or --prompt-ids"));
}

TEST(UnmaskEngineCliTest, TokenizeAndDetokenizeRoundTripThroughTheBinary) {
  CommandResult ids = RunCommand("printf 'hello <|eot_id|> world' | " + std::string(UNMASK_ENGINE_BIN) +
                                 " tokenize --special --json --tokenizer " + kLladaLikeTokenizer);
  ASSERT_EQ(ids.exit_code, 0) << ids.out;
  const json j = json::parse(ids.out);
  const auto list = j["ids"].get<std::vector<std::int64_t>>();
  EXPECT_NE(std::find(list.begin(), list.end(), 126348), list.end()) << "the special token was not parsed";
  CommandResult text = RunCommand("echo '" + j.dump() + "' | " + std::string(UNMASK_ENGINE_BIN) +
                                  " detokenize --tokenizer " + kLladaLikeTokenizer);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_EQ(text.out, "hello <|eot_id|> world");
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

using ::testing::HasSubstr;
using testing::RunCommand;
using nlohmann::json;

const std::string kTinyGenerate = std::string(UNMASK_ENGINE_BIN) + " generate --model " +
                                  unmask::testing::TestDataPath("tiny-llada") +
                                  " --prompt-ids 1,2,3,4 --gen-length 16 --block-length 8 --steps 16 --json";

// --repeat: the loaded model generates again; every run's time is reported, the output is the same.
TEST(UnmaskEngineRunOptionsTest, RepeatReportsEveryRunAndTheSameOutput) {
  testing::CommandResult once = RunCommand(kTinyGenerate + " --sampler dual_cache");
  ASSERT_EQ(once.exit_code, 0) << once.out;
  testing::CommandResult r = RunCommand(kTinyGenerate + " --sampler dual_cache --repeat 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["output"], json::parse(once.out)["output"]);
  ASSERT_EQ(out["runs_seconds"].size(), 3u);
  EXPECT_EQ(out["runs_seconds"][2], out["seconds"]);
  EXPECT_TRUE(out["runs_identical"].get<bool>());
  EXPECT_GT(out["load_seconds"].get<double>(), 0);
  // The host's time in the forwards: part of the generation, never more.
  EXPECT_GT(out["forward_seconds"].get<double>(), 0);
  EXPECT_LE(out["forward_seconds"].get<double>(), out["seconds"].get<double>());
  // --time-forwards waits for each forward: the same output, the forwards still within the run.
  testing::CommandResult timed = RunCommand(kTinyGenerate + " --sampler dual_cache --time-forwards");
  ASSERT_EQ(timed.exit_code, 0) << timed.out;
  const json t = json::parse(timed.out);
  EXPECT_EQ(t["output"], out["output"]);
  EXPECT_GT(t["forward_seconds"].get<double>(), 0);
  EXPECT_LE(t["forward_seconds"].get<double>(), t["seconds"].get<double>());
  for (const char* bad : {" --repeat 0", " --repeat -1", " --repeat many"}) {
    testing::CommandResult b = RunCommand(kTinyGenerate + bad);
    EXPECT_NE(b.exit_code, 0) << bad;
    EXPECT_THAT(b.out, HasSubstr("--repeat")) << bad;
  }
}

// --weights: the loader's conversion in-process. bf16 through the segment is the checkpoint's
// own bf16, so the ids are those of the plain load; quantized weights generate, the embedding
// table and the LM head quantized too (":emb", ":head"); nothing is left in /dev/shm; a bad spec
// is named.
TEST(UnmaskEngineRunOptionsTest, WeightsAreConvertedAsTheLoaderDoes) {
  testing::CommandResult plain = RunCommand(kTinyGenerate);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  testing::CommandResult bf16 = RunCommand(kTinyGenerate + " --weights bf16");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.out;
  EXPECT_EQ(json::parse(bf16.out)["output"], json::parse(plain.out)["output"]);
  for (const char* spec : {"int8", "int4:g64", "int4:g64:emb:head", "int8:emb"}) {
    testing::CommandResult q = RunCommand(kTinyGenerate + " --weights " + spec);
    ASSERT_EQ(q.exit_code, 0) << spec << ": " << q.out;
    EXPECT_EQ(json::parse(q.out)["output"][0].size(), 16u) << spec;
  }
  testing::CommandResult leftovers = RunCommand("ls /dev/shm | grep -c unmask-engine");
  EXPECT_EQ(leftovers.out, "0\n");
  testing::CommandResult bad = RunCommand(kTinyGenerate + " --weights int9");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("--weights: precision spec 'int9'"));
}

// A GPU-only flag where it cannot run (a CPU device and build): the command succeeds with the
// plain run's output and says `why` on stderr. Returns its --json output.
json GpuFlagOnTheCpu(const std::string& flag, const std::string& why) {
  testing::TempDir dir;
  testing::CommandResult plain = RunCommand(kTinyGenerate);
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  testing::CommandResult r = RunCommand("(" + kTinyGenerate + " " + flag + " 2>" + dir.File("err") + ")");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  if (r.exit_code != 0 || plain.exit_code != 0) return json();
  const json out = json::parse(r.out);
  EXPECT_EQ(out["output"], json::parse(plain.out)["output"]) << flag;
  std::ifstream err(dir.File("err"));
  const std::string said((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_THAT(said, HasSubstr(why));
  return out;
}

// --fused-kernels on the CPU: ATen's operators run, and --json says the kernels were not used.
TEST(UnmaskEngineRunOptionsTest, FusedKernelsOnTheCpuSayWhyAndChangeNothing) {
  const json out =
      GpuFlagOnTheCpu("--fused-kernels", "--fused-kernels: the kernels need --device cuda; ATen's operators run");
  ASSERT_FALSE(out.is_null());
  EXPECT_FALSE(out["compute"]["fused_kernels"].get<bool>());
}

// --no-fused-kernels on the CPU: accepted silently (ATen's operators run there anyway), the same output.
TEST(UnmaskEngineRunOptionsTest, NoFusedKernelsOnTheCpuChangesNothing) {
  testing::TempDir dir;
  testing::CommandResult plain = RunCommand(kTinyGenerate);
  testing::CommandResult r = RunCommand("(" + kTinyGenerate + " --no-fused-kernels 2>" + dir.File("err") + ")");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(json::parse(r.out)["output"], json::parse(plain.out)["output"]);
  EXPECT_FALSE(json::parse(r.out)["compute"]["fused_kernels"].get<bool>());
  std::ifstream err(dir.File("err"));
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>()), "");
}

// Asking for the fused kernels and for ATen's operators at once is refused, naming both flags.
TEST(UnmaskEngineRunOptionsTest, FusedAndNoFusedKernelsAreRefused) {
  testing::CommandResult r = RunCommand(kTinyGenerate + " --fused-kernels --no-fused-kernels 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--fused-kernels excludes --no-fused-kernels"));
}

// On a GPU the fused kernels are the default (measured on an H200: the same ids as ATen's
// operators, 1.12-1.27x faster, docs/benchmarks.md); --no-fused-kernels turns them off. Only where
// this build and machine have CUDA.
TEST(UnmaskEngineRunOptionsTest, FusedKernelsAreTheDefaultOnCuda) {
  const std::string cuda = kTinyGenerate + " --device cuda --precision bf16";
  testing::CommandResult on = RunCommand(cuda + " 2>&1");
  if (on.exit_code != 0 && on.out.find("has no CUDA") != std::string::npos) GTEST_SKIP() << "no CUDA here";
  ASSERT_EQ(on.exit_code, 0) << on.out;
  testing::CommandResult off = RunCommand(cuda + " --no-fused-kernels");
  ASSERT_EQ(off.exit_code, 0) << off.out;
  const json fused = json::parse(on.out), aten = json::parse(off.out);
  EXPECT_TRUE(fused["compute"]["fused_kernels"].get<bool>());
  EXPECT_FALSE(aten["compute"]["fused_kernels"].get<bool>());
  EXPECT_EQ(fused["output"], aten["output"]);
}

// The likelihood's samples a forward: unset, a draw's all (as the official code); asked, that
// many; the estimate the same up to float rounding; more than a draw refused naming the field.
TEST(UnmaskEngineLikelihoodTest, RowsPerForwardChangeTheForwardsNotTheEstimate) {
  const std::string ask = std::string(UNMASK_ENGINE_BIN) + " generate --model " +
                          unmask::testing::TestDataPath("tiny-llada") +
                          " --prompt-ids 5,6,7,8,9,10 --continuation-tokens 3 --mc-num 8 --mc-batch-size 4 --json";
  const auto run = [](const std::string& command) {
    testing::CommandResult r = RunCommand(command);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.exit_code == 0 ? json::parse(r.out)["likelihood"] : json();
  };
  const json all = run(ask), two = run(ask + " --mc-rows-per-forward 2"), one = run(ask + " --mc-rows-per-forward 1");
  ASSERT_FALSE(all.is_null() || two.is_null() || one.is_null());
  EXPECT_EQ(all["forwards"], 2);
  EXPECT_EQ(all["rows_per_forward"], 4);
  EXPECT_EQ(two["forwards"], 4);
  EXPECT_EQ(one["forwards"], 8);
  EXPECT_EQ(one["rows_per_forward"], 1);
  const double value = all["loglikelihood"].get<double>();
  EXPECT_NEAR(two["loglikelihood"].get<double>(), value, 1e-5 * std::abs(value));
  EXPECT_NEAR(one["loglikelihood"].get<double>(), value, 1e-5 * std::abs(value));
  testing::CommandResult bad = RunCommand(ask + " --mc-rows-per-forward 5 2>&1");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("rows-per-forward")) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("must be in [0, batch_size 4]")) << bad.out;
}

// --cuda-graphs on the CPU: the forwards run eagerly, nothing is captured.
TEST(UnmaskEngineRunOptionsTest, CudaGraphsOnTheCpuSayWhyAndChangeNothing) {
  const json out = GpuFlagOnTheCpu("--cuda-graphs", "--cuda-graphs: graphs need --device cuda; the forwards run eagerly");
  ASSERT_FALSE(out.is_null());
  EXPECT_EQ(out["cuda_graphs"]["captures"], 0);
}

}  // namespace
}  // namespace unmask
