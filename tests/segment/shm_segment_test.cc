#include "common/segment/shm_segment.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

std::uint64_t Fnv1a(const std::uint8_t* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void FillPattern(std::uint8_t* p, std::size_t n, std::uint32_t seed) {
  std::uint32_t x = seed;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<std::uint8_t>(x >> 24);
  }
}

class ShmSegmentTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(testing::LeakedSegmentsOfThisProcess().empty()); }
};

TEST_F(ShmSegmentTest, CreateAttachReadOnlyAndUnlink) {
  const std::string name = ShmSegment::MakeName("test-model");
  const std::size_t size = 3 * 4096 + 17;
  auto writer = ShmSegment::Create(name, size);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  EXPECT_TRUE(writer->writable());
  EXPECT_EQ(writer->size(), size);
  FillPattern(writer->mutable_data(), size, 1);

  auto reader = ShmSegment::OpenReadOnly(name);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_FALSE(reader->writable());
  EXPECT_EQ(reader->mutable_data(), nullptr);
  EXPECT_EQ(reader->size(), size);
  EXPECT_EQ(std::memcmp(reader->data(), writer->data(), size), 0);
  writer->mutable_data()[5] ^= 0xff;  // one shared object, not a copy
  EXPECT_EQ(reader->data()[5], writer->data()[5]);

  ASSERT_TRUE(writer->Unlink().ok());
  EXPECT_TRUE(writer->unlinked());
  auto gone = ShmSegment::OpenReadOnly(name);
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  // Mappings outlive the name.
  EXPECT_EQ(std::memcmp(reader->data(), writer->data(), size), 0);
  EXPECT_TRUE(writer->Unlink().ok()) << "unlinking twice is a no-op";
}

TEST_F(ShmSegmentTest, ForkedChildAttachesAndReadsTheSameBytes) {
  const std::string name = ShmSegment::MakeName("fork");
  const std::size_t size = 1 << 20;
  auto writer = ShmSegment::Create(name, size);
  ASSERT_TRUE(writer.ok());
  FillPattern(writer->mutable_data(), size, 77);
  const std::uint64_t expected = Fnv1a(writer->data(), size);

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::uint64_t hash = 0;
    {
      auto seg = ShmSegment::OpenReadOnly(name);
      if (seg.ok()) hash = Fnv1a(seg->data(), seg->size());
    }
    (void)!::write(fds[1], &hash, sizeof(hash));
    ::_exit(0);
  }
  ::close(fds[1]);
  std::uint64_t child_hash = 0;
  ASSERT_EQ(::read(fds[0], &child_hash, sizeof(child_hash)), static_cast<ssize_t>(sizeof(child_hash)));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(child_hash, expected);
  ASSERT_TRUE(writer->Unlink().ok());
}

TEST_F(ShmSegmentTest, ReadOnlyMappingFaultsOnWrite) {
  const std::string name = ShmSegment::MakeName("ro");
  auto writer = ShmSegment::Create(name, 4096);
  ASSERT_TRUE(writer.ok());
  auto reader = ShmSegment::OpenReadOnly(name);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(writer->Unlink().ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The default action, not a sanitizer's SEGV handler (which would report the expected fault).
    ::signal(SIGSEGV, SIG_DFL);
    const_cast<volatile std::uint8_t*>(reader->data())[0] = 1;  // must fault
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) << "writing a PROT_READ mapping must fault";
  EXPECT_EQ(writer->data()[0], 0);
}

TEST_F(ShmSegmentTest, CreatingAnExistingNameFails) {
  const std::string name = ShmSegment::MakeName("dup");
  auto first = ShmSegment::Create(name, 4096);
  ASSERT_TRUE(first.ok());
  auto second = ShmSegment::Create(name, 4096);
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find(name), std::string::npos);
  ASSERT_TRUE(first->Unlink().ok());
}

TEST_F(ShmSegmentTest, ErrorsNameTheSegmentAndTheErrno) {
  auto missing = ShmSegment::OpenReadOnly("/unmask-does-not-exist-" + std::to_string(::getpid()));
  ASSERT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("unmask-does-not-exist"), std::string::npos);
  EXPECT_NE(missing.status().message().find("No such file or directory"), std::string::npos)
      << missing.status().message();
  EXPECT_EQ(ShmSegment::UnlinkName("/unmask-does-not-exist").code(), StatusCode::kNotFound);
  EXPECT_EQ(ShmSegment::Create(ShmSegment::MakeName("zero"), 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ShmSegmentTest, InvalidNamesAreRejected) {
  for (const std::string& bad : std::vector<std::string>{"", "/", "noslash", "/a/b", "/..", "/.", "/with space",
                                                         "/tab\t", "/" + std::string(251, 'x')}) {
    Status s = ShmSegment::ValidateName(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
    EXPECT_EQ(ShmSegment::Create(bad, 4096).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ShmSegment::ValidateName("/unmask-GSAI-ML_LLaDA-8B.v1-12-0").ok());
}

TEST_F(ShmSegmentTest, MakeNameSanitizesTheModelId) {
  const std::string a = ShmSegment::MakeName("GSAI-ML/LLaDA-8B Instruct");
  const std::string b = ShmSegment::MakeName("GSAI-ML/LLaDA-8B Instruct");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("/unmask-GSAI-ML_LLaDA-8B_Instruct-" + std::to_string(::getpid()) + "-", 0), 0u) << a;
  EXPECT_TRUE(ShmSegment::ValidateName(a).ok());
  EXPECT_TRUE(ShmSegment::ValidateName(ShmSegment::MakeName(std::string(500, '/'))).ok());
}

TEST_F(ShmSegmentTest, ASegmentLargerThanShmIsResourceExhaustedAndLeavesNothing) {
  struct statvfs st {};
  ASSERT_EQ(::statvfs("/dev/shm", &st), 0);
  if (st.f_blocks == 0) GTEST_SKIP() << "/dev/shm has no size limit";
  // More than the whole file system: tmpfs refuses the reservation up front, no memory is touched.
  const std::size_t too_big = static_cast<std::size_t>(st.f_blocks) * st.f_frsize * 2;
  const std::string name = ShmSegment::MakeName("huge");
  auto seg = ShmSegment::Create(name, too_big);
  ASSERT_FALSE(seg.ok());
  EXPECT_EQ(seg.status().code(), StatusCode::kResourceExhausted) << seg.status().ToString();
  EXPECT_NE(seg.status().message().find(name), std::string::npos);
  EXPECT_EQ(ShmSegment::OpenReadOnly(name).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace unmask::weights
