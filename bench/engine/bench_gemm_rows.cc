// Does a batched step's product cost less per row than one job's? The few-row kernels
// (common/model/small_gemm.h) at unmask-kjv's shapes (d_model 256, MLP 704, vocabulary 4096) for
// the rows of 1, 4 and 8 jobs' 32-token blocks, on one thread, against the core's peak measured in
// the same run: a loop of independent vdpbf16ps (bf16 pairs) or FMAs (float32) on registers only.
// Each path this CPU runs gets its rows: bf16 compute (vdpbf16ps, where the CPU has AVX512_BF16),
// float32 on AVX-512 and on AVX2 (what `--precision auto` computes in where bf16 is not native).
// Variants alternate call by call; figures are medians.
//
//   bench_gemm_rows [--calls 200] [--doc docs/benchmarks.md]
#include <immintrin.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "common/model/cpu_features.h"
#include "common/model/small_gemm.h"

namespace {

using unmask::model::GemmPath;

struct Product {
  const char* what;
  std::int64_t k, n;
};

// A kernel path as the model runs it: bf16 x and W through vdpbf16ps, or float32 on a path.
struct Path {
  const char* name;
  GemmPath gemm;
  bool bf16;
};

double Seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The core's peak: 12 independent accumulators, so throughput, not latency, bounds the loop. (No
// lambdas inside: a lambda does not take its function's target attribute; and three loops rather
// than one template, because a function's target attributes cannot follow its template arguments.)
constexpr long kPeakIterations = 20'000'000;

__attribute__((target("avx512f,avx512bw,avx512bf16"))) double PeakBf16() {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f80));
  const __m512bh y = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3c00));
  const auto t0 = std::chrono::steady_clock::now();
  {
    for (long i = 0; i < kPeakIterations; ++i) {
#pragma GCC unroll 12
      for (auto& a : acc) a = _mm512_dpbf16_ps(a, x, y);
      __asm__ volatile("" : "+v"(x));  // keeps the loop from being folded
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  float sink[16];
  _mm512_storeu_ps(sink, acc[0]);
  __asm__ volatile("" : : "r"(sink) : "memory");
  return 12.0 * kPeakIterations * 64 / s / 1e9;  // 16 lanes x 2 products x 2 flops
}

__attribute__((target("avx512f,fma"))) double PeakAvx512() {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1e-3f);
  const __m512 y = _mm512_set1_ps(1e-3f);
  const auto t0 = std::chrono::steady_clock::now();
  {
    for (long i = 0; i < kPeakIterations; ++i) {
#pragma GCC unroll 12
      for (auto& a : acc) a = _mm512_fmadd_ps(x, y, a);
      __asm__ volatile("" : "+v"(x));
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  float sink[16];
  _mm512_storeu_ps(sink, acc[0]);
  __asm__ volatile("" : : "r"(sink) : "memory");
  return 12.0 * kPeakIterations * 32 / s / 1e9;
}

__attribute__((target("avx2,fma"))) double PeakAvx2() {
  __m256 acc[12];
  for (auto& a : acc) a = _mm256_setzero_ps();
  __m256 x = _mm256_set1_ps(1e-3f);
  const __m256 y = _mm256_set1_ps(1e-3f);
  const auto t0 = std::chrono::steady_clock::now();
  {
    for (long i = 0; i < kPeakIterations; ++i) {
#pragma GCC unroll 12
      for (auto& a : acc) a = _mm256_fmadd_ps(x, y, a);
      __asm__ volatile("" : "+x"(x));
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  float sink[8];
  _mm256_storeu_ps(sink, acc[0]);
  __asm__ volatile("" : : "r"(sink) : "memory");
  return 12.0 * kPeakIterations * 16 / s / 1e9;
}

double PeakOf(const Path& p) {
  if (p.bf16) return PeakBf16();
  return p.gemm == GemmPath::kAvx512 ? PeakAvx512() : PeakAvx2();
}

std::vector<Path> PathsOnThisCpu() {
  const auto& cpu = unmask::model::HostCpuFeatures();
  std::vector<Path> paths;
  if (unmask::model::SmallGemmBf16Native(GemmPath::kAvx512)) paths.push_back({"bf16 (vdpbf16ps)", GemmPath::kAvx512, true});
  if (unmask::model::GemmPathRuns(GemmPath::kAvx512, cpu)) paths.push_back({"f32 avx512", GemmPath::kAvx512, false});
  if (unmask::model::GemmPathRuns(GemmPath::kAvx2, cpu)) paths.push_back({"f32 avx2", GemmPath::kAvx2, false});
  return paths;
}

// One product's rows for 1, 4 and 8 jobs on one path, alternating call by call: median seconds.
std::vector<double> TimeRows(const Path& path, const Product& p, const std::vector<std::int64_t>& rows, int calls) {
  const std::int64_t max_rows = *std::max_element(rows.begin(), rows.end());
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(max_rows * p.k), w(p.n * p.k), y(max_rows * p.n);
  for (auto& v : x) v = dist(gen);
  for (auto& v : w) v = dist(gen);
  std::vector<std::uint16_t> x16(x.size()), w16(w.size()), y16(y.size());
  for (std::size_t i = 0; i < x.size(); ++i) x16[i] = static_cast<std::uint16_t>(reinterpret_cast<const std::uint32_t&>(x[i]) >> 16);
  for (std::size_t i = 0; i < w.size(); ++i) w16[i] = static_cast<std::uint16_t>(reinterpret_cast<const std::uint32_t&>(w[i]) >> 16);
  auto run = [&](std::int64_t m) {
    if (path.bf16) {
      unmask::model::SmallGemmBf16Rounded(path.gemm, x16.data(), m, p.k, w16.data(), p.n, y16.data(), p.n);
    } else {
      unmask::model::SmallGemmF32(path.gemm, x.data(), m, p.k, w.data(), p.n, y.data(), p.n);
    }
  };
  std::vector<std::vector<double>> t(rows.size());
  for (std::int64_t m : rows) run(m);  // warm
  for (int c = 0; c < calls; ++c)
    for (std::size_t i = 0; i < rows.size(); ++i) t[i].push_back(Seconds([&] { run(rows[i]); }));
  std::vector<double> out;
  for (const auto& v : t) out.push_back(Median(v));
  return out;
}

std::string Format(double v, const char* format) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the few-row kernels' cost per row for 1, 4 and 8 jobs' blocks, against the core's peak"};
  int calls = 200;
  std::string doc;
  app.add_option("--calls", calls, "calls of each per shape and row count")->check(CLI::Range(3, 100000));
  app.add_option("--doc", doc, "markdown file whose bench:gemm-rows section is replaced");
  CLI11_PARSE(app, argc, argv);
  const std::string compute = unmask::bench::SetUpComputeOrExit(1);
  const std::vector<Product> products = {
      {"q, k, v, attention out", 256, 256}, {"MLP gate, up", 256, 704}, {"MLP down", 704, 256}, {"LM head", 256, 4096}};
  const std::vector<std::int64_t> rows = {32, 128, 256};  // one 32-token block of 1, 4, 8 jobs

  std::ostringstream table;
  table << "| path | core's peak GFLOP/s | product | in -> out | 1 job (32 rows) us | GFLOP/s | share of peak | "
           "4 jobs (128 rows) us | GFLOP/s | 8 jobs (256 rows) us | GFLOP/s | per row, 8 jobs / 1 job |\n"
        << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Path& path : PathsOnThisCpu()) {
    const double peak = PeakOf(path);
    for (const Product& p : products) {
      const std::vector<double> s = TimeRows(path, p, rows, calls);
      auto gflops = [&](std::size_t i) { return 2.0 * rows[i] * p.k * p.n / s[i] / 1e9; };
      std::ostringstream row;
      row << "| " << path.name << " | " << Format(peak, "%.0f") << " | " << p.what << " | " << p.k << " -> " << p.n
          << " | " << Format(s[0] * 1e6, "%.1f") << " | " << Format(gflops(0), "%.0f") << " | "
          << Format(100.0 * gflops(0) / peak, "%.0f%%") << " | " << Format(s[1] * 1e6, "%.1f") << " | "
          << Format(gflops(1), "%.0f") << " | " << Format(s[2] * 1e6, "%.1f") << " | " << Format(gflops(2), "%.0f")
          << " | **" << Format((s[2] / rows[2]) / (s[0] / rows[0]), "%.2f") << "** |\n";
      std::fputs(row.str().c_str(), stderr);
      table << row.str();
    }
  }
  std::ostringstream body;
  body << "The few-row kernels (common/model/small_gemm.h) at unmask-kjv's products, for one 32-token block of 1, 4 "
          "and 8 jobs (what a dual_cache step multiplies), on one thread, against the core's peak measured in the "
          "same run (a register-only loop of 12 independent vdpbf16ps or FMAs). bf16 is what `--precision auto` "
          "computes in on a CPU with AVX512_BF16; float32 elsewhere. Row counts alternate call by call, "
       << calls << " calls each; medians. \"Per row, 8 jobs / 1 job\": the time of a row in a 256-row product over "
          "its time in a 32-row one (1.00: batching saves nothing on the products). Threads: "
       << compute << ".\n\n"
       << table.str() << "\nMachine: " << unmask::bench::MachineDescription()
       << " (CPU flags: " << unmask::model::DescribeCpuFlags(unmask::model::HostCpuFeatures()) << "). Command: `"
       << unmask::bench::CommandLine(argc, argv) << "`.\n";
  std::printf("%s", body.str().c_str());
  if (!doc.empty() && !unmask::bench::ReplaceDocSection(doc, "gemm-rows", body.str())) {
    std::fprintf(stderr, "cannot write %s\n", doc.c_str());
    return 1;
  }
  return 0;
}
