// The API key file (the scheduler's --api-keys-file, or a Kubernetes Secret mounted as that
// file): one key per line, stored as its SHA-256 so that the file never holds a usable key.
//
//   # comment; blank lines are skipped
//   sha256:<64 hex digits> [NAME] [max_queued_jobs=N] [requests_per_second=R]
//
// NAME ([A-Za-z0-9._@-], at most 64 characters) names the key in logs and in limit errors; the
// default is "sha256:" plus the first 12 digits of the hash. max_queued_jobs (an integer >= 1)
// bounds the jobs of the key that are queued or running at once; requests_per_second (a number
// > 0) bounds its calls, with bursts of up to one second's worth. Without them the key has no
// limit of its own. `unmask keys hash` prints a line for a key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/util/status.h"

namespace unmask::auth {

struct KeyLimits {
  std::int64_t max_queued_jobs = 0;  // 0 = no limit
  double requests_per_second = 0;    // 0 = no limit
};

struct ApiKeyEntry {
  std::string sha256_hex;  // 64 lowercase hex digits
  std::string name;
  KeyLimits limits;
  int line = 0;  // 1-based line of the file
};

// Parses the file's text; `source` names it in errors ("<source>: line 3: ..."). A file with
// no key at all is an error too (it would lock every client out).
StatusOr<std::vector<ApiKeyEntry>> ParseApiKeyFile(std::string_view text, const std::string& source);

// Reads and parses the file at `path`.
StatusOr<std::vector<ApiKeyEntry>> LoadApiKeyFile(const std::string& path);

// The file line for `key` (what `unmask keys hash` prints). InvalidArgument for a key that is
// empty, holds whitespace or control characters, or for a bad name or limit.
StatusOr<std::string> FormatApiKeyLine(std::string_view key, const std::string& name, const KeyLimits& limits);

// A new random key: "unmask-" and 64 hex digits (32 bytes from the system's CSPRNG).
std::string NewApiKey();

}  // namespace unmask::auth
