#include "bench/common/bench_compute.h"

#include <cstdlib>
#include <ctime>
#include <iostream>

#include "bench/common/bench_report.h"
#include "common/model/compute_setup.h"
#include "common/model/cpu_features.h"
#include "common/model/torch_util.h"

namespace unmask::bench {

std::string SetUpComputeOrExit(int threads, const std::string& gemm, bool tune_allocator) {
  model::ComputeSetupOptions o;
  o.tune_allocator = tune_allocator;
  o.threads = threads;
  o.gemm = gemm;
  auto setup = model::SetUpCompute(o);
  if (!setup.ok()) {
    std::cerr << setup.status().message() << "\n";
    std::exit(2);
  }
  const std::string line = setup->cpu + " (" + setup->cpu_flags + "); " + setup->threads + "; gemm " + setup->gemm_line +
                           "; " + setup->allocator;
  std::cerr << "compute: " << line << "\n";
  return line;
}

std::unique_ptr<model::LladaModel> LoadModelOrExit(const std::string& dir, const std::string& precision,
                                                   const model::ModelOptions& base) {
  model::ModelOptions options = base;
  auto device = model::ParseDevice(options.device);
  if (!device.ok()) {
    std::cerr << "--device: " << device.status().message() << "\n";
    std::exit(2);
  }
  if (precision == "auto") {
    options.precision =
        model::ChooseCompute(std::nullopt, model::HostCpuFeatures(), device->is_cuda(), model::Precision::kBFloat16)
            .compute;
  } else {
    auto parsed = model::ParsePrecision(precision);
    if (!parsed.ok()) {
      std::cerr << "--precision: " << parsed.status().message() << "\n";
      std::exit(2);
    }
    options.precision = *parsed;
  }
  auto loaded = model::LladaModel::Load(dir, options);
  if (!loaded.ok()) {
    std::cerr << loaded.status().ToString() << "\n";
    std::exit(1);
  }
  return std::move(*loaded);
}

std::string MachineFooter(const std::string& compute, int argc, char** argv) {
  char today[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(today, sizeof today, "%Y-%m-%d", std::gmtime(&now));
  const auto& cpu = model::HostCpuFeatures();
  return "\nMachine: " + MachineDescription() + "; lscpu model name: " +
         (cpu.model_name.empty() ? std::string("unknown") : cpu.model_name) + ", flags: " + model::DescribeCpuFlags(cpu) +
         ". Compute: " + compute + ". Date: " + today + ". Command: `" + CommandLine(argc, argv) + "`.\n";
}

}  // namespace unmask::bench
