// `unmask keys hash` and `unmask keys new`: the lines of the scheduler's --api-keys-file. Local
// only; no service is called.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "common/auth/api_key_file.h"
#include "tools/unmask_cli/commands.h"

namespace unmask::cli {
namespace {

struct KeyFlags {
  std::string name;
  auth::KeyLimits limits;
};

void AddLineFlags(CLI::App* cmd, KeyFlags* f) {
  cmd->add_option("--name", f->name, "Name of the key (logs, traces, limit errors)");
  cmd->add_option("--max-queued-jobs", f->limits.max_queued_jobs, "Jobs of this key queued or running at once (0 = no limit)");
  cmd->add_option("--requests-per-second", f->limits.requests_per_second, "Calls of this key per second (0 = no limit)");
}

// Prints the file line for `key`; throws the exit code.
void PrintLine(const std::string& key, const KeyFlags& f) {
  auto line = auth::FormatApiKeyLine(key, f.name, f.limits);
  if (!line.ok()) {
    std::cerr << "unmask keys: " << line.status().message() << "\n";
    throw CLI::RuntimeError(2);
  }
  std::cout << *line << std::endl;
}

}  // namespace

void AddKeysCommand(CLI::App& app) {
  CLI::App* keys = app.add_subcommand("keys", "API key lines for the scheduler's --api-keys-file");
  keys->require_subcommand(1);
  auto f = std::make_shared<KeyFlags>();

  CLI::App* hash = keys->add_subcommand("hash", "Read a key from stdin, print its line for the key file");
  AddLineFlags(hash, f.get());
  hash->callback([f] {
    if (::isatty(STDIN_FILENO)) std::cerr << "API key: " << std::flush;
    std::string key;
    std::getline(std::cin, key);
    while (!key.empty() && (key.back() == '\r' || key.back() == '\n')) key.pop_back();
    PrintLine(key, *f);
    throw CLI::RuntimeError(0);
  });

  CLI::App* fresh = keys->add_subcommand("new", "Make a random key: prints the key, then its line for the key file");
  AddLineFlags(fresh, f.get());
  fresh->callback([f] {
    const std::string key = auth::NewApiKey();
    std::cout << key << std::endl;
    PrintLine(key, *f);
    throw CLI::RuntimeError(0);
  });
}

}  // namespace unmask::cli
