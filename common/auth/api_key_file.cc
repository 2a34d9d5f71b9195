#include "common/auth/api_key_file.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "common/auth/sha256.h"

#include <openssl/rand.h>
#include <stdexcept>

namespace unmask::auth {
namespace {

constexpr char kPrefix[] = "sha256:";
constexpr std::size_t kMaxName = 64;

bool IsHex(std::string_view s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > kMaxName)
    return InvalidArgumentError("name '" + name + "': must be 1 to " + std::to_string(kMaxName) + " characters");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' && c != '@')
      return InvalidArgumentError("name '" + name + "': only letters, digits and . _ - @ are allowed");
  }
  return OkStatus();
}

Status CheckLimits(const KeyLimits& limits) {
  if (limits.max_queued_jobs < 0) return InvalidArgumentError("max_queued_jobs: must be an integer >= 1");
  if (!(limits.requests_per_second >= 0) || !std::isfinite(limits.requests_per_second))
    return InvalidArgumentError("requests_per_second: must be a number > 0");
  return OkStatus();
}

// "max_queued_jobs=N" or "requests_per_second=R" into `limits`.
Status ParseLimit(const std::string& token, KeyLimits* limits) {
  const auto eq = token.find('=');
  const std::string field = token.substr(0, eq), value = token.substr(eq + 1);
  const char* begin = value.c_str();
  char* end = nullptr;
  if (field == "max_queued_jobs") {
    if (limits->max_queued_jobs != 0) return InvalidArgumentError("max_queued_jobs: given twice");
    errno = 0;
    const long long n = std::strtoll(begin, &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || n < 1)
      return InvalidArgumentError("max_queued_jobs: '" + value + "' is not an integer >= 1");
    limits->max_queued_jobs = n;
    return OkStatus();
  }
  if (field == "requests_per_second") {
    if (limits->requests_per_second != 0) return InvalidArgumentError("requests_per_second: given twice");
    const double r = std::strtod(begin, &end);
    if (value.empty() || *end != '\0' || !std::isfinite(r) || !(r > 0))
      return InvalidArgumentError("requests_per_second: '" + value + "' is not a number > 0");
    limits->requests_per_second = r;
    return OkStatus();
  }
  return InvalidArgumentError("unknown limit '" + field + "' (max_queued_jobs, requests_per_second)");
}

StatusOr<ApiKeyEntry> ParseLine(const std::string& line, int number) {
  std::istringstream words(line);
  std::string hash;
  words >> hash;
  if (hash.rfind(kPrefix, 0) != 0)
    return InvalidArgumentError("expected 'sha256:<64 hex digits>' first, not a key in the clear (hash a key with `unmask keys hash`)");
  std::string hex = hash.substr(sizeof(kPrefix) - 1);
  if (hex.size() != 64 || !IsHex(hex))
    return InvalidArgumentError("'" + hash.substr(0, 80) + "' is not sha256: followed by 64 hex digits");
  for (char& c : hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  ApiKeyEntry entry;
  entry.sha256_hex = hex;
  entry.line = number;
  std::string token;
  bool first = true;
  while (words >> token) {
    if (token.find('=') == std::string::npos) {
      if (!first) return InvalidArgumentError("'" + token + "': the name comes right after the hash, limits are field=value");
      UNMASK_RETURN_IF_ERROR(CheckName(token));
      entry.name = token;
    } else {
      UNMASK_RETURN_IF_ERROR(ParseLimit(token, &entry.limits));
    }
    first = false;
  }
  if (entry.name.empty()) entry.name = kPrefix + hex.substr(0, 12);
  return entry;
}

}  // namespace

StatusOr<std::vector<ApiKeyEntry>> ParseApiKeyFile(std::string_view text, const std::string& source) {
  std::vector<ApiKeyEntry> entries;
  std::set<std::string> hashes, names;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    std::size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    if (start == line.size() || line[start] == '#') continue;
    const std::string where = source + ": line " + std::to_string(number) + ": ";
    auto entry = ParseLine(line.substr(start), number);
    if (!entry.ok()) return InvalidArgumentError(where + entry.status().message());
    if (!hashes.insert(entry->sha256_hex).second) return InvalidArgumentError(where + "the same key hash is already on an earlier line");
    if (!names.insert(entry->name).second) return InvalidArgumentError(where + "name '" + entry->name + "' is already used by an earlier line");
    entries.push_back(std::move(*entry));
  }
  if (entries.empty()) return InvalidArgumentError(source + ": no API key in the file (every request would be refused)");
  return entries;
}

StatusOr<std::vector<ApiKeyEntry>> LoadApiKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseApiKeyFile(text.str(), path);
}

StatusOr<std::string> FormatApiKeyLine(std::string_view key, const std::string& name, const KeyLimits& limits) {
  if (key.empty()) return InvalidArgumentError("key: must not be empty");
  for (char c : key) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return InvalidArgumentError("key: must not hold whitespace or control characters (it travels in an HTTP header)");
  }
  if (!name.empty()) UNMASK_RETURN_IF_ERROR(CheckName(name));
  UNMASK_RETURN_IF_ERROR(CheckLimits(limits));
  std::ostringstream line;
  line << kPrefix << Sha256Hex(key);
  if (!name.empty()) line << ' ' << name;
  if (limits.max_queued_jobs > 0) line << " max_queued_jobs=" << limits.max_queued_jobs;
  if (limits.requests_per_second > 0) line << " requests_per_second=" << limits.requests_per_second;
  return line.str();
}

std::string NewApiKey() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed: no entropy");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key = "unmask-";
  for (unsigned char b : bytes) {
    key.push_back(kHex[b >> 4]);
    key.push_back(kHex[b & 15]);
  }
  return key;
}

}  // namespace unmask::auth
