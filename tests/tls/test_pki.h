// A throwaway PKI for TLS tests, made at test time in a temp directory with the `openssl`
// command CMake found: a CA, a server certificate for localhost and 127.0.0.1 (usable as a
// client certificate too, like one certificate per pod), a client certificate, and a second,
// unrelated CA with a client and a server certificate of its own. EC P-256 keys, valid for two days.
#pragma once

#include <string>

#include "tests/fixtures/temp_checkpoint.h"

namespace unmask::testing {

// Copies `from` over `to` the way a Kubernetes Secret volume changes: a new file renamed into
// place (throws std::runtime_error when the rename fails).
void Replace(const std::string& from, const std::string& to);

class TestPki {
 public:
  TestPki();  // throws std::runtime_error with openssl's output when a step fails

  std::string ca() const { return dir_.File("ca.crt"); }
  std::string server_cert() const { return dir_.File("server.crt"); }
  std::string server_key() const { return dir_.File("server.key"); }
  std::string client_cert() const { return dir_.File("client.crt"); }
  std::string client_key() const { return dir_.File("client.key"); }
  std::string other_ca() const { return dir_.File("other-ca.crt"); }
  std::string other_client_cert() const { return dir_.File("other-client.crt"); }
  std::string other_client_key() const { return dir_.File("other-client.key"); }
  // A server certificate for localhost from the other CA: what a renewal from a new CA gives.
  std::string other_server_cert() const { return dir_.File("other-server.crt"); }
  std::string other_server_key() const { return dir_.File("other-server.key"); }
  // A file in the PKI's directory, for tests that write broken ones.
  std::string File(const std::string& name) const { return dir_.File(name); }

 private:
  void Run(const std::string& args) const;  // `openssl <args>` in the directory
  void MakeCa(const std::string& name, const std::string& subject) const;
  // A key and a certificate signed by `ca` with the extensions section `ext`.
  void MakeLeaf(const std::string& name, const std::string& ca, const std::string& subject, const std::string& ext,
                int serial) const;

  TempDir dir_;
};

}  // namespace unmask::testing
