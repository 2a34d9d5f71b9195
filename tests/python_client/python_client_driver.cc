// Starts the real stack (redis-server, loader, executor serving models/unmask-kjv, a scheduler
// with --api-keys-file) and runs the Python client's unittest suite against it; exits with its
// exit code. The key file holds two keys, hashed:
//
//   UNMASK_SCHEDULER    the scheduler's gRPC address
//   UNMASK_API_KEY      a key without limits
//   UNMASK_LIMITED_KEY  a key with max_queued_jobs=1
//   UNMASK_MODEL        the served model (unmask-kjv)
//   PYTHONPATH          the generated client (build/clients/python)
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "common/auth/api_key_file.h"
#include "tests/e2e/stack.h"

int main(int argc, char** argv) {
  using unmask::testing::Stack;
  if (argc != 4) {
    std::cerr << "usage: python_client_driver PYTHON PYTHONPATH TEST_DIR\n";
    return 2;
  }
  try {
    Stack stack(UNMASK_MODELS_DIR "/unmask-kjv", "unmask-kjv");
    const std::string key = unmask::auth::NewApiKey(), limited = unmask::auth::NewApiKey();
    const std::string keys_file = stack.model_root() + "/api-keys";
    {
      std::ofstream out(keys_file);
      out << "# written by python_client_driver\n"
          << *unmask::auth::FormatApiKeyLine(key, "python-tests", {}) << "\n"
          << *unmask::auth::FormatApiKeyLine(limited, "limited", unmask::auth::KeyLimits{1, 0}) << "\n";
    }
    stack.StartRedis();
    stack.StartLoader();
    stack.StartExecutor();
    const int s = stack.StartScheduler({"--api-keys-file", keys_file});
    ::setenv("UNMASK_SCHEDULER", stack.scheduler_address(s).c_str(), 1);
    ::setenv("UNMASK_API_KEY", key.c_str(), 1);
    ::setenv("UNMASK_LIMITED_KEY", limited.c_str(), 1);
    ::setenv("UNMASK_MODEL", "unmask-kjv", 1);
    ::setenv("PYTHONPATH", argv[2], 1);
    const std::string cmd = std::string("'") + argv[1] + "' -m unittest discover -v -s '" + argv[3] + "' -t '" + argv[3] + "'";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0) std::cerr << "--- scheduler output ---\n" << stack.scheduler(s).output() << "\n";
    return code;
  } catch (const std::exception& e) {
    std::cerr << "python_client_driver: " << e.what() << "\n";
    return 1;
  }
}
