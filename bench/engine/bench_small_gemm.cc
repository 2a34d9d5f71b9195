// The few-row float32 kernel (common/model/small_gemm.h) against the BLAS behind at::linear, side
// by side in one process, on the products of the issue-18 benchmark shape (d_model 512, MLP 1408,
// vocabulary 126464): the LM head over one 32-row block, and the layers over 96 rows (prompt 32 +
// gen 64) and 288 rows (gen 256). The two alternate call by call; each figure is the median over
// the calls, and the ratio the median of per-call-pair ratios.
//
//   bench_small_gemm [--threads N] [--calls 20] [--doc docs/benchmarks.md]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/bench_report.h"
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

double Seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the few-row float32 kernel against the BLAS"};
  int threads = 0, calls = 20;
  std::string doc;
  app.add_option("--threads", threads, "intra-op threads (0: all cores)");
  app.add_option("--calls", calls, "calls of each per shape")->check(CLI::Range(3, 100000));
  app.add_option("--doc", doc, "markdown file whose bench:small-gemm section is replaced");
  CLI11_PARSE(app, argc, argv);
  if (!unmask::model::SmallGemmSupported()) {
    std::fprintf(stderr, "this CPU has no AVX-512F: the kernel does not run here\n");
    return 1;
  }
  if (threads > 0) at::set_num_threads(threads);

  const std::vector<Shape> shapes = {
      {"LM head, one block", 32, 512, 126464}, {"attention projection", 96, 512, 512},
      {"MLP up/gate", 96, 512, 1408},          {"MLP down", 96, 1408, 512},
      {"MLP up/gate, gen 256", 288, 512, 1408},
  };
  std::ostringstream table;
  table << "| product | rows x in -> out | BLAS ms | kernel ms | kernel GFLOP/s | BLAS / kernel |\n"
        << "|---|---|---|---|---|---|\n";
  at::manual_seed(1);
  for (const Shape& s : shapes) {
    const at::Tensor x = at::randn({s.m, s.k}), w = at::randn({s.n, s.k});
    at::Tensor y = at::empty({s.m, s.n});
    auto kernel = [&] {
      unmask::model::SmallGemmF32(x.data_ptr<float>(), s.m, s.k, w.data_ptr<float>(), s.n, y.data_ptr<float>(), s.n);
    };
    auto blas = [&] { at::linear(x, w); };
    kernel();
    blas();
    std::vector<double> tk, tb, ratios;
    for (int c = 0; c < calls; ++c) {
      tb.push_back(Seconds(blas));
      tk.push_back(Seconds(kernel));
      ratios.push_back(tb.back() / tk.back());
    }
    const double flops = 2.0 * s.m * s.k * s.n;
    char row[256];
    std::snprintf(row, sizeof row, "| %s | %lld x %lld -> %lld | %.2f | %.2f | %.0f | **%.2fx** |\n", s.what,
                  static_cast<long long>(s.m), static_cast<long long>(s.k), static_cast<long long>(s.n),
                  Median(tb) * 1e3, Median(tk) * 1e3, flops / Median(tk) / 1e9, Median(ratios));
    std::fputs(row, stderr);
    table << row;
  }
  std::ostringstream body;
  body << "The few-row float32 kernel behind `Linear` (common/model/small_gemm.h: W read in its stored [out, in] "
          "layout, 6 x-rows by 4 W-rows per AVX-512 tile, never repacked) against the BLAS behind `at::linear` "
          "(OpenBLAS), alternating call by call, "
       << calls << " calls each, " << at::get_num_threads()
       << " intra-op threads; medians, the ratio is the median of per-pair ratios.\n\n"
       << table.str() << "\nMachine: " << unmask::bench::MachineDescription()
       << ". Command: `" << unmask::bench::CommandLine(argc, argv) << "`.\n";
  std::printf("%s", body.str().c_str());
  if (!doc.empty() && !unmask::bench::ReplaceDocSection(doc, "small-gemm", body.str())) {
    std::fprintf(stderr, "cannot write %s\n", doc.c_str());
    return 1;
  }
  return 0;
}
