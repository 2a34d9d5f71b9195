// CUDA IPC between two processes: this process exports a device allocation filled with a known
// pattern, a child process (this binary exec'd again with --ipc-child) imports it by its text
// descriptor and checks the bytes. Skipped, with the reason, where no CUDA device exists.
#include "common/segment/cuda_ipc.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace unmask::weights::cuda {
namespace {

std::vector<std::uint8_t> Pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  return v;
}

// The child: imports the descriptor and compares the bytes with the pattern. Exit 0 when equal.
int ChildMain(const std::string& descriptor_text, std::uint32_t seed) {
  auto descriptor = IpcDescriptor::Parse(descriptor_text);
  if (!descriptor.ok()) {
    std::cerr << "child: " << descriptor.status().ToString() << "\n";
    return 2;
  }
  auto imported = DeviceImport::Open(*descriptor);
  if (!imported.ok()) {
    std::cerr << "child: " << imported.status().ToString() << "\n";
    return 2;
  }
  const auto expected = Pattern(descriptor->bytes, seed);
  std::vector<std::uint8_t> got(descriptor->bytes);
  if (Status s = imported->CopyToHost(0, got.data(), got.size()); !s.ok()) {
    std::cerr << "child: " << s.ToString() << "\n";
    return 2;
  }
  TensorEntry entry;  // a "tensor" in the middle, addressed by its manifest offset
  entry.name = "t";
  entry.offset = 4096;
  entry.nbytes = 128;
  auto at = imported->TensorData(entry);
  if (!at.ok() || *at != imported->device_ptr() + 4096) {
    std::cerr << "child: TensorData did not index the allocation by offset\n";
    return 4;
  }
  if (got != expected) {
    std::size_t i = 0;
    while (got[i] == expected[i]) ++i;
    std::cerr << "child: byte " << i << " is " << int(got[i]) << ", expected " << int(expected[i]) << "\n";
    return 3;
  }
  return 0;
}

// GTEST_SKIP with the reason unless this build and machine can run CUDA IPC.
#define SKIP_WITHOUT_CUDA_DEVICE()                                                                  \
  do {                                                                                              \
    if (!CompiledIn()) GTEST_SKIP() << "built without CUDA IPC (no CUDA toolkit at configure time)"; \
    auto count = DeviceCount();                                                                     \
    if (!count.ok()) GTEST_SKIP() << "no usable CUDA device: " << count.status().message();          \
    if (*count == 0) GTEST_SKIP() << "cudaGetDeviceCount reports no CUDA device";                   \
  } while (0)

TEST(CudaIpcTest, ChildProcessImportsTheExportedBytes) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const std::size_t bytes = (std::size_t{3} << 20) + 123;  // several chunks, not a multiple of one
  const std::uint32_t seed = 12345;
  const auto host = Pattern(bytes, seed);
  auto exported = DeviceExport::FromHost(0, host.data(), bytes, /*chunk_bytes=*/1 << 20);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  const std::string text = exported->descriptor().ToString();
  ASSERT_TRUE(IpcDescriptor::Parse(text).ok()) << text;

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // exec at once: CUDA state must not be used in a forked child.
    const std::string seed_text = std::to_string(seed);
    ::execl("/proc/self/exe", "cuda_ipc_test", "--ipc-child", text.c_str(), seed_text.c_str(), nullptr);
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: import failed, 3: bytes differ, 4: bad tensor address (see stderr)";
}

TEST(CudaIpcTest, DescriptorRoundTripsAndBadOnesAreRefusedNamingThePart) {
  std::uint8_t handle[kIpcHandleBytes];
  for (std::size_t i = 0; i < sizeof(handle); ++i) handle[i] = static_cast<std::uint8_t>(i * 37);
  IpcDescriptor d;
  d.device = 1;
  d.bytes = 123456789;
  d.handle_hex = BytesToHex(handle, sizeof(handle));
  auto parsed = IpcDescriptor::Parse(d.ToString());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->device, 1);
  EXPECT_EQ(parsed->bytes, 123456789u);
  std::uint8_t back[kIpcHandleBytes];
  ASSERT_TRUE(HexToBytes(parsed->handle_hex, back, sizeof(back)).ok());
  EXPECT_EQ(std::memcmp(back, handle, sizeof(handle)), 0);

  auto bad = [](const std::string& text) { return IpcDescriptor::Parse(text).status().message(); };
  EXPECT_NE(bad("cuda:0:1:00").find("does not start with"), std::string::npos);
  EXPECT_NE(bad("cuda-ipc:v1:x:10:" + d.handle_hex).find("device"), std::string::npos);
  EXPECT_NE(bad("cuda-ipc:v1:0:0:" + d.handle_hex).find("bytes"), std::string::npos);
  EXPECT_NE(bad("cuda-ipc:v1:0:10:abc").find("handle"), std::string::npos);
  EXPECT_NE(bad("cuda-ipc:v1:0:10:" + std::string(128, 'g')).find("not a hex digit"), std::string::npos);
}

TEST(CudaIpcTest, WithoutADeviceCallsFailNamingWhy) {
  if (CompiledIn()) {
    auto count = DeviceCount();
    if (count.ok() && *count > 0) GTEST_SKIP() << "this machine has a CUDA device";
  }
  const std::uint8_t byte = 1;
  auto exported = DeviceExport::FromHost(0, &byte, 1);
  ASSERT_FALSE(exported.ok());
  EXPECT_NE(exported.status().message().find(CompiledIn() ? "cuda" : "no CUDA IPC"), std::string::npos)
      << exported.status().ToString();
}

}  // namespace
}  // namespace unmask::weights::cuda

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--ipc-child") == 0)
    return unmask::weights::cuda::ChildMain(argv[2], static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
