// Starts the real stack (redis-server, loader, executor serving models/unmask-kjv, and two
// schedulers with --http-port 0) and runs node's test runner on the given test files with the
// HTTP addresses in the environment; exits with node's exit code.
//
//   UNMASK_HTTP_URL             the main scheduler's HTTP API (body limit 64 KiB)
//   UNMASK_HTTP_URL_FULL_QUEUE  a scheduler with --max-queue 0 (every request: queue full)
//   UNMASK_HTTP_URL_KEYS        a scheduler with --api-keys-file holding UNMASK_HTTP_KEY (no
//                               limit) and UNMASK_HTTP_SLOW_KEY (requests_per_second=1)
//   UNMASK_HTTPS_URL            a scheduler serving the HTTP API over HTTPS (a certificate of a
//                               test CA made here, which node trusts through NODE_EXTRA_CA_CERTS)
//   UNMASK_SCHEDULER            the main scheduler's gRPC address, UNMASK_CLI the unmask CLI
//   UNMASK_README               the README whose curl examples are run
// The scheduler's model root also holds "unserved-kjv" (config and tokenizer only), a model
// that it knows but that no executor serves.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/auth/api_key_file.h"
#include "tests/e2e/stack.h"
#include "tests/tls/test_pki.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using unmask::testing::HttpPort;
  using unmask::testing::Stack;
  if (argc < 3) {
    std::cerr << "usage: openai_sdk_driver NODE TEST_FILE...\n";
    return 2;
  }
  try {
    Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
    const std::string unserved = stack.model_root() + "/unserved-kjv";
    fs::create_directories(unserved);
    for (const char* f : {"config.json", "tokenizer.json"})
      fs::copy_file(std::string(UNMASK_MODELS_DIR) + "/unmask-kjv/" + f, unserved + "/" + f);

    stack.StartRedis();
    stack.StartLoader();
    stack.StartExecutor();
    const int main_scheduler = stack.StartScheduler({"--http-port", "0", "--http-max-body-bytes", "65536"});
    const int full_scheduler = stack.StartScheduler({"--http-port", "0", "--max-queue", "0"});
    const std::string key = unmask::auth::NewApiKey(), slow_key = unmask::auth::NewApiKey();
    const std::string keys_file = stack.model_root() + "/api-keys";
    std::ofstream(keys_file) << *unmask::auth::FormatApiKeyLine(key, "sdk", {}) << "\n"
                             << *unmask::auth::FormatApiKeyLine(slow_key, "slow", unmask::auth::KeyLimits{0, 1}) << "\n";
    const int keys_scheduler = stack.StartScheduler({"--http-port", "0", "--api-keys-file", keys_file});
    const unmask::testing::TestPki pki;
    const int https_scheduler = stack.StartScheduler(
        {"--http-port", "0", "--http-tls-cert", pki.server_cert(), "--http-tls-key", pki.server_key()});
    const int https_port = HttpPort(stack.scheduler(https_scheduler));
    const int port = HttpPort(stack.scheduler(main_scheduler));
    const int full_port = HttpPort(stack.scheduler(full_scheduler));
    const int keys_port = HttpPort(stack.scheduler(keys_scheduler));
    if (port <= 0 || full_port <= 0 || keys_port <= 0 || https_port <= 0) {
      std::cerr << "a scheduler did not report its HTTP port:\n" << stack.scheduler(main_scheduler).output() << "\n";
      return 1;
    }
    ::setenv("UNMASK_HTTP_URL", ("http://127.0.0.1:" + std::to_string(port)).c_str(), 1);
    ::setenv("UNMASK_HTTP_URL_FULL_QUEUE", ("http://127.0.0.1:" + std::to_string(full_port)).c_str(), 1);
    ::setenv("UNMASK_HTTP_URL_KEYS", ("http://127.0.0.1:" + std::to_string(keys_port)).c_str(), 1);
    ::setenv("UNMASK_HTTPS_URL", ("https://localhost:" + std::to_string(https_port)).c_str(), 1);
    ::setenv("NODE_EXTRA_CA_CERTS", pki.ca().c_str(), 1);
    ::setenv("UNMASK_HTTP_KEY", key.c_str(), 1);
    ::setenv("UNMASK_HTTP_SLOW_KEY", slow_key.c_str(), 1);
    ::setenv("UNMASK_SCHEDULER", stack.scheduler_address(main_scheduler).c_str(), 1);
    ::setenv("UNMASK_CLI", CLI_BIN, 1);
    ::setenv("UNMASK_README", UNMASK_README, 1);

    std::string cmd = std::string(argv[1]) + " --test";
    for (int i = 2; i < argc; ++i) cmd += std::string(" '") + argv[i] + "'";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0) std::cerr << "--- main scheduler output ---\n" << stack.scheduler(main_scheduler).output() << "\n";
    return code;
  } catch (const std::exception& e) {
    std::cerr << "openai_sdk_driver: " << e.what() << "\n";
    return 1;
  }
}
