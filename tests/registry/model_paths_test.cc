#include "common/registry/model_paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

// <tmp>/roots/{a,b} are the model roots; <tmp>/outside is not.
class ModelPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"roots", "roots/a", "roots/a/org", "roots/a/org/model", "roots/b", "roots/b/only-in-b",
                          "roots/a/org/model/sub", "outside", "outside/secret"}) {
      ASSERT_EQ(::mkdir(tmp_.Join(d).c_str(), 0755), 0) << d;
    }
    testing::WriteFile(tmp_.Join("roots/a/file"), "x");
    ASSERT_EQ(::symlink(tmp_.Join("outside/secret").c_str(), tmp_.Join("roots/a/escape").c_str()), 0);
    ASSERT_EQ(::symlink("../b/only-in-b", tmp_.Join("roots/a/to-b").c_str()), 0);
    ASSERT_EQ(::symlink("org/model", tmp_.Join("roots/a/alias").c_str()), 0);
    roots_ = {tmp_.Join("roots/a"), tmp_.Join("roots/b")};
  }

  std::string Real(const std::string& p) {
    char buf[PATH_MAX];
    EXPECT_NE(::realpath(tmp_.Join(p).c_str(), buf), nullptr);
    return buf;
  }

  testing::TempDir tmp_;
  std::vector<std::string> roots_;
};

TEST_F(ModelPathsTest, RelativeNamesResolveUnderTheRootsInOrder) {
  EXPECT_EQ(*ResolveModelDir(roots_, "org/model"), Real("roots/a/org/model"));
  EXPECT_EQ(*ResolveModelDir(roots_, "org/model/"), Real("roots/a/org/model"));
  EXPECT_EQ(*ResolveModelDir(roots_, "./org//model"), Real("roots/a/org/model"));
  EXPECT_EQ(*ResolveModelDir(roots_, "only-in-b"), Real("roots/b/only-in-b"));
  // Symlinks that stay inside the roots are fine, even across roots.
  EXPECT_EQ(*ResolveModelDir(roots_, "alias"), Real("roots/a/org/model"));
  EXPECT_EQ(*ResolveModelDir(roots_, "to-b"), Real("roots/b/only-in-b"));
}

TEST_F(ModelPathsTest, AbsolutePathsMustLieInsideARoot) {
  EXPECT_EQ(*ResolveModelDir(roots_, tmp_.Join("roots/a/org/model")), Real("roots/a/org/model"));
  auto outside = ResolveModelDir(roots_, tmp_.Join("outside/secret"));
  ASSERT_EQ(outside.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(outside.status().message().find("outside the model roots"), std::string::npos);
  EXPECT_NE(outside.status().message().find(Real("outside/secret")), std::string::npos);
  // An absolute path through a symlink inside a root that points outside is refused too.
  EXPECT_EQ(ResolveModelDir(roots_, tmp_.Join("roots/a/escape")).status().code(), StatusCode::kPermissionDenied);
}

TEST_F(ModelPathsTest, EscapesAreRefused) {
  for (const char* bad : {"..", "../outside/secret", "org/../../outside", "org/model/..", "/tmp/../etc"}) {
    auto r = ResolveModelDir(roots_, bad);
    ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("'..'"), std::string::npos) << r.status().message();
  }
  auto link = ResolveModelDir(roots_, "escape");
  ASSERT_EQ(link.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(link.status().message().find("symlink"), std::string::npos) << link.status().message();
  EXPECT_NE(link.status().message().find(Real("outside/secret")), std::string::npos);
  // A sibling directory whose name merely starts with a root's name is not inside it.
  ASSERT_EQ(::mkdir(tmp_.Join("roots/a-sibling").c_str(), 0755), 0);
  EXPECT_EQ(ResolveModelDir(roots_, tmp_.Join("roots/a-sibling")).status().code(), StatusCode::kPermissionDenied);
}

TEST_F(ModelPathsTest, MissingFilesAndEmptyInputs) {
  auto missing = ResolveModelDir(roots_, "org/nope");
  ASSERT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(Real("roots/a")), std::string::npos);
  EXPECT_NE(missing.status().message().find(Real("roots/b")), std::string::npos);
  EXPECT_EQ(ResolveModelDir(roots_, "file").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ResolveModelDir(roots_, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveModelDir({}, "org/model").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ResolveModelDir({tmp_.Join("no-root")}, "org/model").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ResolveModelDir(roots_, tmp_.Join("roots/a/nope")).status().code(), StatusCode::kNotFound);
}

TEST(IsPathUnderTest, ComparesWholeComponents) {
  EXPECT_TRUE(IsPathUnder("/a/b", "/a/b"));
  EXPECT_TRUE(IsPathUnder("/a/b/c", "/a/b"));
  EXPECT_FALSE(IsPathUnder("/a/bc", "/a/b"));
  EXPECT_FALSE(IsPathUnder("/a", "/a/b"));
  EXPECT_TRUE(IsPathUnder("/anything", "/"));
}

}  // namespace
}  // namespace unmask::weights
