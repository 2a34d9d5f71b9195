#include "tests/tls/test_pki.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace unmask::testing {
namespace {

// The extensions each kind of certificate carries; subjects come from -subj.
constexpr char kConfig[] = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unmask-test
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
[client_ext]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
)";

constexpr char kNewKey[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

}  // namespace

void Replace(const std::string& from, const std::string& to) {
  WriteFile(to + ".new", ReadFile(from));
  if (std::rename((to + ".new").c_str(), to.c_str()) != 0) throw std::runtime_error("cannot rename onto " + to);
}

TestPki::TestPki() {
  WriteFile(dir_.File("pki.cnf"), kConfig);
  MakeCa("ca", "/CN=unmask test CA");
  MakeLeaf("server", "ca", "/CN=localhost", "server_ext", 2);
  MakeLeaf("client", "ca", "/CN=unmask test client", "client_ext", 3);
  MakeCa("other-ca", "/CN=unrelated test CA");
  MakeLeaf("other-client", "other-ca", "/CN=unmask test client", "client_ext", 4);
  MakeLeaf("other-server", "other-ca", "/CN=localhost", "server_ext", 5);
}

void TestPki::Run(const std::string& args) const {
  const std::string log = dir_.File("openssl.log");
  const std::string cmd = "cd '" + dir_.path() + "' && '" OPENSSL_BIN "' " + args + " > '" + log + "' 2>&1";
  const int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("openssl " + args + " failed:\n" + ReadFile(log));
}

void TestPki::MakeCa(const std::string& name, const std::string& subject) const {
  Run("req -x509 -new -config pki.cnf -extensions ca_ext " + std::string(kNewKey) + " -keyout " + name +
      ".key -out " + name + ".crt -days 2 -subj '" + subject + "'");
}

void TestPki::MakeLeaf(const std::string& name, const std::string& ca, const std::string& subject,
                       const std::string& ext, int serial) const {
  Run("req -new -config pki.cnf " + std::string(kNewKey) + " -keyout " + name + ".key -out " + name +
      ".csr -subj '" + subject + "'");
  Run("x509 -req -in " + name + ".csr -CA " + ca + ".crt -CAkey " + ca + ".key -set_serial " + std::to_string(serial) +
      " -days 2 -extfile pki.cnf -extensions " + ext + " -out " + name + ".crt");
}

}  // namespace unmask::testing
