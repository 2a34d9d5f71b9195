// Starts the real stack (redis-server, loader, executor serving models/unmask-kjv, a scheduler
// with --api-keys-file) and runs the Python client's unittest suite against it; exits with its
// exit code. The key file holds two keys, hashed:
//
//   UNMASK_SCHEDULER    the scheduler's gRPC address
//   UNMASK_API_KEY      a key without limits
//   UNMASK_LIMITED_KEY  a key with max_queued_jobs=1
//   UNMASK_MODEL        the served model (unmask-kjv)
//   PYTHONPATH          the generated client (build/clients/python)
//
// and a second scheduler over mutual TLS (the same executor behind it), with certificates the
// openssl command makes for the run (tests/tls/test_pki.h):
//
//   UNMASK_TLS_SCHEDULER   its gRPC address
//   UNMASK_TLS_CA          the CA its certificate chains to and client certificates must chain to
//   UNMASK_TLS_CERT, UNMASK_TLS_KEY              a client certificate of that CA
//   UNMASK_TLS_OTHER_CERT, UNMASK_TLS_OTHER_KEY  a client certificate of an unrelated CA
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "common/auth/api_key_file.h"
#include "tests/e2e/stack.h"
#include "tests/tls/test_pki.h"

int main(int argc, char** argv) {
  using unmask::testing::Stack;
  if (argc != 4) {
    std::cerr << "usage: python_client_driver PYTHON PYTHONPATH TEST_DIR\n";
    return 2;
  }
  try {
    const unmask::testing::TestPki pki;
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
    const int tls = stack.StartScheduler({"--tls-cert", pki.server_cert(), "--tls-key", pki.server_key(), "--tls-ca",
                                          pki.ca(), "--tls-require-client-cert"});
    ::setenv("UNMASK_TLS_SCHEDULER", stack.scheduler_address(tls).c_str(), 1);
    ::setenv("UNMASK_TLS_CA", pki.ca().c_str(), 1);
    ::setenv("UNMASK_TLS_CERT", pki.client_cert().c_str(), 1);
    ::setenv("UNMASK_TLS_KEY", pki.client_key().c_str(), 1);
    ::setenv("UNMASK_TLS_OTHER_CERT", pki.other_client_cert().c_str(), 1);
    ::setenv("UNMASK_TLS_OTHER_KEY", pki.other_client_key().c_str(), 1);
    ::setenv("UNMASK_SCHEDULER", stack.scheduler_address(s).c_str(), 1);
    ::setenv("UNMASK_API_KEY", key.c_str(), 1);
    ::setenv("UNMASK_LIMITED_KEY", limited.c_str(), 1);
    ::setenv("UNMASK_MODEL", "unmask-kjv", 1);
    ::setenv("PYTHONPATH", argv[2], 1);
    const std::string cmd = std::string("'") + argv[1] + "' -m unittest discover -v -s '" + argv[3] + "' -t '" + argv[3] + "'";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0) {
      std::cerr << "--- scheduler output ---\n" << stack.scheduler(s).output() << "\n";
      std::cerr << "--- TLS scheduler output ---\n" << stack.scheduler(tls).output() << "\n";
    }
    return code;
  } catch (const std::exception& e) {
    std::cerr << "python_client_driver: " << e.what() << "\n";
    return 1;
  }
}
