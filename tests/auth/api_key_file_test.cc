#include "common/auth/api_key_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/auth/sha256.h"

namespace unmask::auth {
namespace {

using ::testing::HasSubstr;

// SHA-256 of "abc" (FIPS 180-2, appendix B.1) and of the empty string.
constexpr char kAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex("abc"), kAbc);
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(ApiKeyFileTest, ParsesHashesNamesLimitsCommentsAndBlankLines) {
  const std::string text = "# keys of the demo\n\n"
                           "sha256:" + std::string(kAbc) + " alice max_queued_jobs=2 requests_per_second=0.5\r\n"
                           "  sha256:" + Sha256Hex("second") + "   \n"
                           "sha256:" + Sha256Hex("third") + " bob requests_per_second=10\n";
  auto parsed = ParseApiKeyFile(text, "keys");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 3u);
  const ApiKeyEntry& a = (*parsed)[0];
  EXPECT_EQ(a.sha256_hex, kAbc);
  EXPECT_EQ(a.name, "alice");
  EXPECT_EQ(a.limits.max_queued_jobs, 2);
  EXPECT_DOUBLE_EQ(a.limits.requests_per_second, 0.5);
  EXPECT_EQ(a.line, 3);
  EXPECT_EQ((*parsed)[1].name, "sha256:" + Sha256Hex("second").substr(0, 12));
  EXPECT_EQ((*parsed)[1].limits.max_queued_jobs, 0);
  EXPECT_EQ((*parsed)[1].limits.requests_per_second, 0);
  EXPECT_EQ((*parsed)[2].limits.max_queued_jobs, 0);
  EXPECT_DOUBLE_EQ((*parsed)[2].limits.requests_per_second, 10);
}

TEST(ApiKeyFileTest, UppercaseHexIsTheSameHash) {
  std::string upper = kAbc;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto parsed = ParseApiKeyFile("sha256:" + upper + "\n", "keys");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ((*parsed)[0].sha256_hex, kAbc);
}

struct BadLine {
  const char* name;
  std::string line;  // written as line 3, after a comment and a good key
  const char* says;
};

class ApiKeyFileBadLineTest : public ::testing::TestWithParam<BadLine> {};

TEST_P(ApiKeyFileBadLineTest, IsRefusedWithItsLineNumber) {
  const std::string good = "sha256:" + Sha256Hex("good") + " good\n";
  auto parsed = ParseApiKeyFile("# header\n" + good + GetParam().line + "\n", "/etc/unmask/api-keys");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("/etc/unmask/api-keys: line 3: "));
  EXPECT_THAT(parsed.status().message(), HasSubstr(GetParam().says));
}

const std::string kHash = "sha256:" + std::string(kAbc);

INSTANTIATE_TEST_SUITE_P(
    Lines, ApiKeyFileBadLineTest,
    ::testing::Values(BadLine{"KeyInTheClear", "my-secret-key", "not a key in the clear"},
                      BadLine{"ShortHash", "sha256:abcdef", "64 hex digits"},
                      BadLine{"NonHexHash", "sha256:" + std::string(63, 'a') + "g", "64 hex digits"},
                      BadLine{"OtherAlgorithm", "md5:" + std::string(32, 'a'), "expected 'sha256:"},
                      BadLine{"BadNameCharacter", kHash + " al/ice", "name 'al/ice'"},
                      BadLine{"NameTooLong", kHash + " " + std::string(65, 'n'), "1 to 64 characters"},
                      BadLine{"NameAfterLimit", kHash + " max_queued_jobs=2 alice", "the name comes right after the hash"},
                      BadLine{"TwoNames", kHash + " alice bob", "the name comes right after the hash"},
                      BadLine{"UnknownLimit", kHash + " alice tokens_per_minute=5", "unknown limit 'tokens_per_minute'"},
                      BadLine{"ZeroJobs", kHash + " alice max_queued_jobs=0", "max_queued_jobs: '0' is not an integer >= 1"},
                      BadLine{"FractionalJobs", kHash + " alice max_queued_jobs=1.5", "max_queued_jobs: '1.5'"},
                      BadLine{"EmptyJobs", kHash + " alice max_queued_jobs=", "max_queued_jobs: ''"},
                      BadLine{"HugeJobs", kHash + " alice max_queued_jobs=99999999999999999999", "max_queued_jobs: '9999"},
                      BadLine{"NegativeRate", kHash + " alice requests_per_second=-1", "requests_per_second: '-1' is not a number > 0"},
                      BadLine{"ZeroRate", kHash + " alice requests_per_second=0", "requests_per_second: '0'"},
                      BadLine{"NanRate", kHash + " alice requests_per_second=nan", "requests_per_second: 'nan'"},
                      BadLine{"InfRate", kHash + " alice requests_per_second=inf", "requests_per_second: 'inf'"},
                      BadLine{"RateWithUnit", kHash + " alice requests_per_second=5/s", "requests_per_second: '5/s'"},
                      BadLine{"LimitTwice", kHash + " alice max_queued_jobs=1 max_queued_jobs=2", "max_queued_jobs: given twice"},
                      BadLine{"DuplicateHash", "sha256:" + Sha256Hex("good") + " other", "the same key hash is already on an earlier line"},
                      BadLine{"DuplicateName", "sha256:" + Sha256Hex("other") + " good", "name 'good' is already used"}),
    [](const ::testing::TestParamInfo<BadLine>& info) { return std::string(info.param.name); });

TEST(ApiKeyFileTest, AFileWithoutKeysIsRefused) {
  auto parsed = ParseApiKeyFile("# nothing yet\n\n", "keys");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("no API key"));
}

TEST(ApiKeyFileTest, LoadNamesAMissingFile) {
  auto loaded = LoadApiKeyFile("/nonexistent/unmask-keys");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("/nonexistent/unmask-keys: cannot open"));
}

TEST(ApiKeyFileTest, FormatWritesALineTheParserReadsBack) {
  auto line = FormatApiKeyLine("abc", "alice", KeyLimits{3, 2.5});
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(*line, kHash + " alice max_queued_jobs=3 requests_per_second=2.5");
  auto parsed = ParseApiKeyFile(*line, "keys");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ((*parsed)[0].limits.max_queued_jobs, 3);
  EXPECT_EQ(*FormatApiKeyLine("abc", "", {}), kHash);
}

TEST(ApiKeyFileTest, FormatRefusesKeysThatCannotTravelInAHeader) {
  EXPECT_FALSE(FormatApiKeyLine("", "", {}).ok());
  EXPECT_THAT(FormatApiKeyLine("two words", "", {}).status().message(), HasSubstr("whitespace"));
  EXPECT_FALSE(FormatApiKeyLine("tab\there", "", {}).ok());
  EXPECT_FALSE(FormatApiKeyLine(std::string("nul\0x", 5), "", {}).ok());
  EXPECT_THAT(FormatApiKeyLine("k", "bad name", {}).status().message(), HasSubstr("name 'bad name'"));
  EXPECT_THAT(FormatApiKeyLine("k", "", KeyLimits{-1, 0}).status().message(), HasSubstr("max_queued_jobs"));
}

TEST(ApiKeyFileTest, NewKeysAreDistinctAndFitTheFile) {
  const std::string a = NewApiKey(), b = NewApiKey();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), 7u + 64u);
  EXPECT_EQ(a.rfind("unmask-", 0), 0u);
  EXPECT_TRUE(FormatApiKeyLine(a, "", {}).ok());
}

}  // namespace
}  // namespace unmask::auth
