// RemoveTree: rm -rf without std::filesystem::remove_all (see remove_tree.h for why).
#include "common/util/remove_tree.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace unmask::util {
namespace {
namespace fs = std::filesystem;

fs::path Fresh(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("unmask-remove-tree-" + std::to_string(::getpid()) + "-" + name);
  EXPECT_TRUE(RemoveTree(p.string()));
  return p;
}

TEST(RemoveTree, RemovesANestedTreeButNotWhatALinkPointsAt) {
  const fs::path root = Fresh("tree"), outside = Fresh("outside");
  fs::create_directories(root / "a" / "b" / "c");
  fs::create_directories(outside);
  std::ofstream(root / "a" / "b" / "c" / "file") << "x";
  std::ofstream(root / "top") << "y";
  std::ofstream(outside / "keep") << "z";
  fs::create_directory_symlink(outside, root / "a" / "link");
  std::string error;
  EXPECT_TRUE(RemoveTree(root.string(), &error)) << error;
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(outside / "keep"));
  EXPECT_TRUE(RemoveTree(outside.string()));
  EXPECT_FALSE(fs::exists(outside));
}

TEST(RemoveTree, AMissingPathIsAlreadyRemovedAndAFileIsRemoved) {
  const fs::path missing = Fresh("missing"), file = Fresh("file");
  EXPECT_TRUE(RemoveTree(missing.string()));
  std::ofstream(file) << "x";
  EXPECT_TRUE(RemoveTree(file.string()));
  EXPECT_FALSE(fs::exists(file));
}

TEST(RemoveTree, APathThatCannotBeReachedIsNamed) {
  const std::string bad = (fs::temp_directory_path() / std::string(300, 'x')).string();  // over NAME_MAX
  std::string error;
  EXPECT_FALSE(RemoveTree(bad, &error));
  EXPECT_NE(error.find(bad), std::string::npos) << error;
  EXPECT_NE(error.find("too long"), std::string::npos) << error;
}

}  // namespace
}  // namespace unmask::util
