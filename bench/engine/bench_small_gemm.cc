// The few-row float32 kernels (common/model/small_gemm.h: AVX2 and AVX-512 paths, W stored as
// float32 or as bf16 bits) against the BLAS behind at::linear, side by side in one process, on
// the products of the issue-18 benchmark shape (d_model 512, MLP 1408, vocabulary 126464): the LM
// head over one 32-row block, and the layers over 96 rows (prompt 32 + gen 64) and 288 rows (gen
// 256). For a bf16 W the BLAS figure is what Linear does without a kernel: widen W to float32,
// then at::linear. All variants alternate call by call; each figure is the median over the calls,
// and each ratio the median of per-call ratios against the BLAS. A path this CPU cannot run
// shows "-".
//
//   bench_small_gemm [--threads N] [--calls 20] [--doc docs/benchmarks.md]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "common/model/cpu_features.h"
#include "common/model/small_gemm.h"

namespace {

struct Shape {
  const char* what;
  std::int64_t m, k, n;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

double Seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using unmask::model::GemmPath;
  CLI::App app{"the few-row float32 kernels against the BLAS"};
  int threads = 0, calls = 20;
  std::string doc;
  app.add_option("--threads", threads, "intra-op threads (0: all cores)");
  app.add_option("--calls", calls, "calls of each per shape")->check(CLI::Range(3, 100000));
  app.add_option("--doc", doc, "markdown file whose bench:small-gemm section is replaced");
  CLI11_PARSE(app, argc, argv);
  const std::string compute = unmask::bench::SetUpComputeOrExit(threads);
  const auto& cpu = unmask::model::HostCpuFeatures();
  const GemmPath paths[] = {GemmPath::kAvx2, GemmPath::kAvx512};

  const std::vector<Shape> shapes = {
      {"LM head, one block", 32, 512, 126464}, {"attention projection", 96, 512, 512},
      {"MLP up/gate", 96, 512, 1408},          {"MLP down", 96, 1408, 512},
      {"MLP up/gate, gen 256", 288, 512, 1408},
  };
  std::ostringstream table;
  table << "| product | rows x in -> out | W | BLAS ms | avx2 ms | avx512 ms | avx512 GFLOP/s | BLAS / avx2 "
           "| BLAS / avx512 |\n"
        << "|---|---|---|---|---|---|---|---|---|\n";
  at::manual_seed(1);
  for (const Shape& s : shapes) {
    const at::Tensor x = at::randn({s.m, s.k}), w32 = at::randn({s.n, s.k}), w16 = w32.to(at::kBFloat16);
    at::Tensor y = at::empty({s.m, s.n});
    for (const bool bf16 : {false, true}) {
      const at::Tensor& w = bf16 ? w16 : w32;
      auto blas = [&] { at::linear(x, bf16 ? w.to(at::kFloat) : w); };
      auto kernel = [&](GemmPath path) {
        if (bf16) {
          unmask::model::SmallGemmBf16W(path, x.data_ptr<float>(), s.m, s.k,
                                        reinterpret_cast<const std::uint16_t*>(w.data_ptr<at::BFloat16>()), s.n,
                                        y.data_ptr<float>(), s.n);
        } else {
          unmask::model::SmallGemmF32(path, x.data_ptr<float>(), s.m, s.k, w.data_ptr<float>(), s.n,
                                      y.data_ptr<float>(), s.n);
        }
      };
      blas();
      for (GemmPath p : paths)
        if (unmask::model::GemmPathRuns(p, cpu)) kernel(p);
      std::vector<double> tb;
      std::vector<std::vector<double>> tk(2), ratios(2);
      for (int c = 0; c < calls; ++c) {
        tb.push_back(Seconds(blas));
        for (int i = 0; i < 2; ++i) {
          if (!unmask::model::GemmPathRuns(paths[i], cpu)) continue;
          tk[i].push_back(Seconds([&] { kernel(paths[i]); }));
          ratios[i].push_back(tb.back() / tk[i].back());
        }
      }
      const double flops = 2.0 * s.m * s.k * s.n;
      auto ms = [](const std::vector<double>& t) {
        return t.empty() ? std::string("-") : Format("%.2f", Median(t) * 1e3);
      };
      auto ratio = [](const std::vector<double>& r) {
        return r.empty() ? std::string("-") : Format("**%.2fx**", Median(r));
      };
      const std::string gflops = tk[1].empty() ? "-" : Format("%.0f", flops / Median(tk[1]) / 1e9);
      const std::string row = Format("| %s | %lld x %lld -> %lld | %s | %.2f | %s | %s | %s | %s | %s |\n", s.what,
                                     static_cast<long long>(s.m), static_cast<long long>(s.k),
                                     static_cast<long long>(s.n), bf16 ? "bf16" : "f32", Median(tb) * 1e3,
                                     ms(tk[0]).c_str(), ms(tk[1]).c_str(), gflops.c_str(), ratio(ratios[0]).c_str(),
                                     ratio(ratios[1]).c_str());
      std::fputs(row.c_str(), stderr);
      table << row;
    }
  }
  std::ostringstream body;
  body << "The few-row float32 kernels behind `Linear` (common/model/small_gemm.h: W read in its stored [out, in] "
          "layout, float32 or bf16 widened as it is loaded, never repacked; 4 x-rows by 3 W-rows per AVX2 tile, 6 "
          "by 4 per AVX-512 tile) against the BLAS behind `at::linear` (OpenBLAS; for a bf16 W, after widening it "
          "to float32, as `Linear` does without a kernel), alternating call by call, "
       << calls << " calls each; medians, each ratio is the median of per-call ratios. Threads: " << compute
       << ".\n\n"
       << table.str() << "\nMachine: " << unmask::bench::MachineDescription() << " (CPU flags: "
       << unmask::model::DescribeCpuFlags(cpu) << "). Command: `" << unmask::bench::CommandLine(argc, argv) << "`.\n";
  std::printf("%s", body.str().c_str());
  if (!doc.empty() && !unmask::bench::ReplaceDocSection(doc, "small-gemm", body.str())) {
    std::fprintf(stderr, "cannot write %s\n", doc.c_str());
    return 1;
  }
  return 0;
}
