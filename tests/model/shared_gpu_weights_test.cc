// Two processes computing from one GPU allocation (the weight store's CUDA path, end to end below
// gRPC): this process loads the golden checkpoint into a segment, copies the data region to GPU 0
// and exports it (what `unmask-loader --device cuda:0` does per model); two child processes (this
// binary exec'd again) each attach the segment, open the allocation by its CUDA IPC descriptor
// (what an executor does with AttachEvent.device_handle), build the model on cuda:0 over it and
// compare its logits with the same model on CPU. Skipped, naming why, where no GPU and no CUDA
// LibTorch exist. Each child prints one JSON line of figures.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/model/llada_model.h"
#include "common/segment/cuda_ipc.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/weight_view.h"
#include "tests/fixtures/test_paths.h"

namespace unmask::model {
namespace {

at::Tensor GoldenInput() {
  std::ifstream in(unmask::testing::TestDataPath("tiny-llada.golden.json"));
  auto ids = nlohmann::json::parse(in)["forward"]["input"].get<std::vector<std::int64_t>>();
  return at::from_blob(ids.data(), {1, static_cast<std::int64_t>(ids.size())}, at::kLong).clone();
}

// The child. Exit 0 when the GPU model computes from the shared allocation (its bf16 embedding
// is a view inside it) and agrees with the CPU model; the figures go to stdout as JSON.
int ChildMain(const std::string& segment_name, const std::string& descriptor_text) {
  auto fail = [](const std::string& what) {
    std::cerr << "child " << ::getpid() << ": " << what << "\n";
    return 2;
  };
  auto attached = weights::AttachedModel::Attach(segment_name);
  if (!attached.ok()) return fail(attached.status().ToString());
  auto descriptor = weights::cuda::IpcDescriptor::Parse(descriptor_text);
  if (!descriptor.ok()) return fail(descriptor.status().ToString());
  auto opened = weights::cuda::DeviceImport::Open(*descriptor);
  if (!opened.ok()) return fail(opened.status().ToString());
  auto import = std::make_shared<weights::cuda::DeviceImport>(std::move(*opened));
  if (Status s = attached->SetDeviceRegion(0, import->device_ptr(), import->size(), descriptor_text, import); !s.ok())
    return fail(s.ToString());
  auto segment = std::make_shared<const weights::AttachedModel>(std::move(*attached));

  ModelOptions gpu_options;
  gpu_options.device = "cuda:0";
  gpu_options.precision = Precision::kBFloat16;
  ModelOptions cpu_options = gpu_options;
  cpu_options.device = "cpu";
  auto gpu = LladaModel::FromSegment(segment, gpu_options);
  if (!gpu.ok()) return fail(gpu.status().ToString());
  auto cpu = LladaModel::FromSegment(segment, cpu_options);
  if (!cpu.ok()) return fail(cpu.status().ToString());

  // Zero copy: the embedding (stored bf16, computed bf16) lies inside the imported allocation.
  const auto* wte = static_cast<const std::uint8_t*>((*gpu)->weights().wte.weight().data_ptr());
  const bool inside = wte >= import->device_ptr() && wte < import->device_ptr() + import->size();
  if (!inside) return fail("the GPU embedding is not a view of the shared allocation");

  const at::Tensor input = GoldenInput();
  const at::Tensor on_gpu = (*gpu)->Logits(input.to(at::Device("cuda:0")), at::Tensor())[0].to(at::kFloat).cpu();
  const at::Tensor on_cpu = (*cpu)->Logits(input, at::Tensor())[0].to(at::kFloat);
  const double top1 = on_gpu.argmax(-1).eq(on_cpu.argmax(-1)).to(at::kFloat).mean().item<double>();
  const double max_abs = (on_gpu - on_cpu).abs().max().item<double>();
  const double scale = on_cpu.abs().max().item<double>();
  std::cout << nlohmann::json{{"pid", ::getpid()},
                              {"precision", segment->manifest().precision},
                              {"top1_agreement_gpu_vs_cpu", top1},
                              {"max_abs_diff", max_abs},
                              {"max_rel_diff", max_abs / scale}}
                   .dump()
            << std::endl;
  // bf16 on two devices: different kernels round differently; quantized layers go through two
  // different dequantization paths that give the same bits (linear_test), so the same bound holds.
  if (top1 < 0.95 || max_abs / scale > 0.05) return fail("GPU and CPU logits disagree");
  return 0;
}

bool GpuAvailable(std::string* why) {
  if (!weights::cuda::CompiledIn()) return *why = "built without CUDA IPC", false;
  auto count = weights::cuda::DeviceCount();
  if (!count.ok()) return *why = "no usable CUDA device: " + count.status().message(), false;
  if (*count == 0) return *why = "no CUDA device", false;
  if (!at::hasCUDA()) return *why = "this LibTorch has no CUDA", false;
  return true;
}

pid_t SpawnChild(const std::string& segment, const std::string& descriptor) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/proc/self/exe", "shared_gpu_weights_test", "--gpu-child", segment.c_str(), descriptor.c_str(), nullptr);
    ::_exit(127);
  }
  return pid;
}

class SharedGpuWeightsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SharedGpuWeightsTest, TwoProcessesComputeFromOneExportedAllocation) {
  std::string why;
  if (!GpuAvailable(&why)) GTEST_SKIP() << why;
  auto spec = weights::PrecisionSpec::Parse(GetParam());
  ASSERT_TRUE(spec.ok());
  auto loaded = weights::LoadModelDir(unmask::testing::TestDataPath("tiny-llada"), *spec,
                                      std::string("gpu-share-") + std::to_string(::getpid()));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto exported = weights::cuda::DeviceExport::FromHost(0, loaded->segment.data() + loaded->manifest.data_offset,
                                                        loaded->manifest.totals.data_bytes);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  const std::string descriptor = exported->descriptor().ToString();
  // Both children run at once, each with its own CUDA context over the same allocation.
  const pid_t a = SpawnChild(loaded->segment.name(), descriptor);
  const pid_t b = SpawnChild(loaded->segment.name(), descriptor);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  for (pid_t pid : {a, b}) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "a child died of a signal";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's message on stderr";
  }
  (void)loaded->segment.Unlink();
}

INSTANTIATE_TEST_SUITE_P(Precisions, SharedGpuWeightsTest, ::testing::Values("bf16", "int8", "int4:g32"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace unmask::model

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--gpu-child") == 0) return unmask::model::ChildMain(argv[2], argv[3]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
