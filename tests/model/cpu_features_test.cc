// The choices the engine makes from the CPU's features: given these flags, this kernel path and
// this compute type; an explicit flag always wins.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "common/model/compute_setup.h"
#include "common/model/cpu_features.h"
#include "common/model/small_gemm.h"

namespace unmask::model {
namespace {

using ::testing::HasSubstr;

CpuFeatures Avx2Epyc() {  // AMD EPYC Zen 3: AVX2 + FMA, no AVX-512, no bf16 instructions
  CpuFeatures c;
  c.model_name = "AMD EPYC 7B13";
  c.avx2 = c.fma = c.f16c = true;
  return c;
}
CpuFeatures Avx512Bf16Xeon() {  // Sapphire Rapids: AVX-512 with AVX512_BF16 and AMX
  CpuFeatures c = Avx2Epyc();
  c.model_name = "Intel(R) Xeon(R) Platinum 8481C";
  c.avx512f = c.avx512bw = c.avx512_bf16 = c.amx_bf16 = true;
  return c;
}
CpuFeatures Avx512NoBf16() {  // Skylake/Cascade Lake server: AVX-512F without bf16
  CpuFeatures c = Avx2Epyc();
  c.avx512f = c.avx512bw = true;
  return c;
}
CpuFeatures Sse4Only() { return CpuFeatures{}; }

TEST(GemmPathChoiceTest, TheWidestKernelTheCpuRuns) {
  EXPECT_EQ(BestGemmPath(Avx512Bf16Xeon()), GemmPath::kAvx512);
  EXPECT_EQ(BestGemmPath(Avx512NoBf16()), GemmPath::kAvx512);
  EXPECT_EQ(BestGemmPath(Avx2Epyc()), GemmPath::kAvx2);
  EXPECT_EQ(BestGemmPath(Sse4Only()), GemmPath::kBlas);
  CpuFeatures avx2_without_fma = Avx2Epyc();
  avx2_without_fma.fma = false;
  EXPECT_EQ(BestGemmPath(avx2_without_fma), GemmPath::kBlas);
}

TEST(GemmPathChoiceTest, WhichPathsRunWhere) {
  EXPECT_TRUE(GemmPathRuns(GemmPath::kBlas, Sse4Only()));
  EXPECT_FALSE(GemmPathRuns(GemmPath::kAvx2, Sse4Only()));
  EXPECT_TRUE(GemmPathRuns(GemmPath::kAvx2, Avx2Epyc()));
  EXPECT_FALSE(GemmPathRuns(GemmPath::kAvx512, Avx2Epyc()));
  EXPECT_TRUE(GemmPathRuns(GemmPath::kAvx512, Avx512NoBf16()));
}

TEST(GemmPathChoiceTest, ParsesEveryNameAndRefusesOthersNamingTheChoices) {
  for (GemmPath p : {GemmPath::kBlas, GemmPath::kAvx2, GemmPath::kAvx512}) {
    auto parsed = ParseGemmPath(GemmPathName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParseGemmPath("avx1024");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'avx1024' is not one of auto, avx512, avx2, blas"));
}

TEST(ComputeChoiceTest, Fp32WhereTheCpuHasNoBf16InstructionsAndSaysWhy) {
  for (const CpuFeatures& cpu : {Avx2Epyc(), Avx512NoBf16(), Sse4Only()})
    for (Precision stored : {Precision::kBFloat16, Precision::kFloat16, Precision::kFloat32}) {
      const ComputeChoice c = ChooseCompute(std::nullopt, cpu, /*on_gpu=*/false, stored);
      EXPECT_EQ(c.compute, Precision::kFloat32) << DescribeCpuFlags(cpu);
      EXPECT_THAT(c.why, HasSubstr("no avx512_bf16/amx_bf16"));
    }
}

TEST(ComputeChoiceTest, Bf16WeightsInBf16WhereTheCpuHasBf16Instructions) {
  CpuFeatures zen4 = Avx512NoBf16();
  zen4.avx512_bf16 = true;  // AMD EPYC Zen 4: AVX512_BF16 without AMX
  for (const CpuFeatures& cpu : {Avx512Bf16Xeon(), zen4}) {
    const ComputeChoice bf16 = ChooseCompute(std::nullopt, cpu, false, Precision::kBFloat16);
    EXPECT_EQ(bf16.compute, Precision::kBFloat16);
    EXPECT_THAT(bf16.why, HasSubstr("bf16 instructions"));
    // fp32 weights are not narrowed, fp16 ones are not computed in fp16 on a CPU.
    EXPECT_EQ(ChooseCompute(std::nullopt, cpu, false, Precision::kFloat32).compute, Precision::kFloat32);
    const ComputeChoice fp16 = ChooseCompute(std::nullopt, cpu, false, Precision::kFloat16);
    EXPECT_EQ(fp16.compute, Precision::kFloat32);
    EXPECT_THAT(fp16.why, HasSubstr("weights stored as fp16"));
  }
}

TEST(ComputeChoiceTest, AGpuComputesInItsHalfPrecision) {
  EXPECT_EQ(ChooseCompute(std::nullopt, Avx2Epyc(), true, Precision::kBFloat16).compute, Precision::kBFloat16);
  EXPECT_EQ(ChooseCompute(std::nullopt, Avx2Epyc(), true, Precision::kFloat32).compute, Precision::kBFloat16);
  EXPECT_EQ(ChooseCompute(std::nullopt, Avx2Epyc(), true, Precision::kFloat16).compute, Precision::kFloat16);
}

TEST(ComputeChoiceTest, AnExplicitPrecisionWinsEverywhere) {
  for (const CpuFeatures& cpu : {Avx2Epyc(), Avx512Bf16Xeon(), Sse4Only()})
    for (bool gpu : {false, true})
      for (Precision p : {Precision::kFloat32, Precision::kBFloat16, Precision::kFloat16}) {
        const ComputeChoice c = ChooseCompute(p, cpu, gpu, Precision::kBFloat16);
        EXPECT_EQ(c.compute, p);
        EXPECT_THAT(c.why, HasSubstr(std::string("--precision ") + PrecisionName(p) + " was given"));
      }
}

TEST(PrecisionFlagTest, AutoOrAPrecisionAndErrorsNameTheChoices) {
  auto a = ParsePrecisionFlag("auto");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  auto b = ParsePrecisionFlag("bf16");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(**b, Precision::kBFloat16);
  auto bad = ParsePrecisionFlag("fp8");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'fp8' is not one of auto, fp32, bf16, fp16"));
}

TEST(PrecisionFlagTest, StoredTypesOfTheLoader) {
  EXPECT_EQ(StoredPrecision("fp32"), Precision::kFloat32);
  EXPECT_EQ(StoredPrecision("fp16"), Precision::kFloat16);
  EXPECT_EQ(StoredPrecision("bf16"), Precision::kBFloat16);
  EXPECT_EQ(StoredPrecision("int4:g64"), Precision::kBFloat16);
  EXPECT_EQ(StoredPrecision("checkpoint"), Precision::kBFloat16);
}

TEST(HostCpuTest, DescribesTheFlagsAndAgreesWithTheCompiler) {
  const CpuFeatures& cpu = HostCpuFeatures();
  if (const char* cap = std::getenv(kMaxCpuIsaVariable); cap != nullptr) {  // *_capped_* runs: the cap applied
    CpuFeatures native;
    native.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    native.avx512f = __builtin_cpu_supports("avx512f");
    auto capped = CapCpuFeatures(native, cap);
    ASSERT_TRUE(capped.ok()) << capped.status().ToString();
    EXPECT_EQ(cpu.avx512f, capped->avx512f);
    EXPECT_EQ(cpu.isa_cap, capped->isa_cap);
    EXPECT_THAT(DescribeCpuFlags(cpu), HasSubstr(std::string("(capped by UNMASK_MAX_CPU_ISA=") + cap + ")"));
    return;
  }
  EXPECT_EQ(cpu.avx2, static_cast<bool>(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(cpu.avx512f, static_cast<bool>(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(cpu.isa_cap, "");
  if (cpu.avx2) {
    EXPECT_THAT(DescribeCpuFlags(cpu), HasSubstr("avx2"));
  }
  EXPECT_THAT(DescribeCpuFlags(Sse4Only()), HasSubstr("none of"));
  EXPECT_EQ(DescribeCpuFlags(Avx512Bf16Xeon()), "avx2 fma f16c avx512f avx512bw avx512_bf16 amx_bf16");
}

TEST(IsaCapTest, EachCapHidesWhatIsAboveIt) {
  const CpuFeatures xeon = Avx512Bf16Xeon();
  auto native = CapCpuFeatures(xeon, "native");
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(DescribeCpuFlags(*native), DescribeCpuFlags(xeon));
  EXPECT_EQ(native->isa_cap, "");

  auto no_amx = CapCpuFeatures(xeon, "avx512_bf16");
  ASSERT_TRUE(no_amx.ok());
  EXPECT_FALSE(no_amx->amx_bf16);
  EXPECT_TRUE(no_amx->avx512_bf16);
  EXPECT_TRUE(HasNativeBf16(*no_amx));

  auto skylake = CapCpuFeatures(xeon, "AVX512");  // oneDNN's spelling is upper case: either is taken
  ASSERT_TRUE(skylake.ok());
  EXPECT_EQ(DescribeCpuFlags(*skylake), "avx2 fma f16c avx512f avx512bw (capped by UNMASK_MAX_CPU_ISA=avx512)");
  EXPECT_EQ(BestGemmPath(*skylake), GemmPath::kAvx512);
  const ComputeChoice capped = ChooseCompute(std::nullopt, *skylake, false, Precision::kBFloat16);
  EXPECT_EQ(capped.compute, Precision::kFloat32);
  EXPECT_THAT(capped.why, HasSubstr("no avx512_bf16/amx_bf16 under UNMASK_MAX_CPU_ISA=avx512"));  // `unmask models` says why

  auto zen3 = CapCpuFeatures(xeon, "avx2");
  ASSERT_TRUE(zen3.ok());
  EXPECT_EQ(DescribeCpuFlags(*zen3), "avx2 fma f16c (capped by UNMASK_MAX_CPU_ISA=avx2)");
  EXPECT_EQ(BestGemmPath(*zen3), GemmPath::kAvx2);
  EXPECT_EQ(zen3->model_name, xeon.model_name);

  auto old = CapCpuFeatures(xeon, "baseline");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(BestGemmPath(*old), GemmPath::kBlas);
  EXPECT_THAT(DescribeCpuFlags(*old), HasSubstr("none of"));
}

TEST(IsaCapTest, ACapAboveTheCpuAddsNothing) {
  auto capped = CapCpuFeatures(Avx2Epyc(), "avx512_bf16");
  ASSERT_TRUE(capped.ok());
  EXPECT_FALSE(capped->avx512f);
  EXPECT_FALSE(capped->avx512_bf16);
  EXPECT_EQ(BestGemmPath(*capped), GemmPath::kAvx2);
}

TEST(IsaCapTest, ABadCapIsRefusedNamingTheVariableAndTheValues) {
  for (const char* bad : {"avx3", "", "avx2 "}) {
    auto capped = CapCpuFeatures(Avx512Bf16Xeon(), bad);
    ASSERT_FALSE(capped.ok()) << bad;
    EXPECT_THAT(capped.status().message(), HasSubstr(std::string("UNMASK_MAX_CPU_ISA: '") + bad +
                                                     "' is not one of native, avx512_bf16, avx512, avx2, baseline"));
  }
}

// Sets an environment variable for one scope and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(IsaCapTest, SetUpComputeRefusesABadCapNamingTheVariable) {
  ScopedEnv env(kMaxCpuIsaVariable, "avx1024");
  EXPECT_FALSE(CheckMaxCpuIsa().ok());
  ComputeSetupOptions o;
  o.threads = 1;
  auto bad = SetUpCompute(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("UNMASK_MAX_CPU_ISA: 'avx1024' is not one of"));
}

// engine_tests_on_<cpu> run these tests on an emulated CPU (qemu-x86_64 -cpu ...) and say in
// UNMASK_EXPECT_GEMM_PATH which path that CPU must get: detection reads the CPU it runs on.
TEST(HostCpuTest, TheEmulatedCpuOfTheTestRunnerGetsItsPath) {
  const char* expected = std::getenv("UNMASK_EXPECT_GEMM_PATH");
  if (expected == nullptr) GTEST_SKIP() << "UNMASK_EXPECT_GEMM_PATH is not set";
  auto want = ParseGemmPath(expected);
  ASSERT_TRUE(want.ok());
  const CpuFeatures& cpu = HostCpuFeatures();
  EXPECT_EQ(BestGemmPath(cpu), *want) << DescribeCpuFlags(cpu);
  EXPECT_EQ(ActiveGemmPath(), *want);
  EXPECT_FALSE(HasNativeBf16(cpu));  // the emulated CPUs have no bf16 instructions
  EXPECT_EQ(ChooseCompute(std::nullopt, cpu, false, Precision::kBFloat16).compute, Precision::kFloat32);
}

TEST(ComputeSetupTest, AnExplicitGemmFlagOverridesTheCpuChoice) {
  const GemmPath before = ActiveGemmPath();
  ComputeSetupOptions o;
  o.threads = 1;
  o.gemm = "blas";
  auto setup = SetUpCompute(o);
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  EXPECT_EQ(setup->gemm, GemmPath::kBlas);
  EXPECT_EQ(ActiveGemmPath(), GemmPath::kBlas);
  EXPECT_THAT(setup->gemm_line, HasSubstr("--gemm blas was given"));
  o.gemm = "auto";
  setup = SetUpCompute(o);
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ(setup->gemm, BestGemmPath(HostCpuFeatures()));
  (void)SetGemmPath(before);
}

TEST(ComputeSetupTest, BadFlagsAreRefusedNamingTheFlag) {
  ComputeSetupOptions o;
  o.gemm = "avx9";
  auto bad = SetUpCompute(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--gemm: gemm path 'avx9'"));
  o.gemm = "auto";
  o.threads = -3;
  o.threads_flag = "--intra-op-threads";
  bad = SetUpCompute(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--intra-op-threads: intra-op threads must be >= 0"));
  if (!GemmPathRuns(GemmPath::kAvx512, HostCpuFeatures())) {
    o.threads = 0;
    o.gemm = "avx512";
    bad = SetUpCompute(o);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("avx512"));
  }
}

}  // namespace
}  // namespace unmask::model
