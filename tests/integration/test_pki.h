// Test certificates made with openssl: a CA, a server certificate for 127.0.0.1/localhost and a
// client certificate, both signed by the CA.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace longqa::testing_support {

// Writes a CA, a server certificate for 127.0.0.1 and a client certificate with openssl.
struct Certificates {
  std::string dir, ca, server_cert, server_key, client_cert, client_key;
};

inline Certificates MakeCertificates(const std::string& parent) {
  Certificates c;
  c.dir = parent + "/pki";
  std::filesystem::create_directories(c.dir);
  const std::string script_path = c.dir + "/make.sh";
  std::ofstream(script_path)
      << "set -e\ncd \"$(dirname \"$0\")\"\n"
         "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
         "-subj /CN=longqa-test-ca 2>/dev/null\n"
         "for who in server client; do\n"
         "  openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who "
         "2>/dev/null\n"
         "  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > $who.ext\n"
         "  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem "
         "-days 2 -extfile $who.ext 2>/dev/null\n"
         "done\n";
  if (std::system(("bash " + script_path).c_str()) != 0) return {};
  c.ca = c.dir + "/ca.pem";
  c.server_cert = c.dir + "/server.pem";
  c.server_key = c.dir + "/server.key";
  c.client_cert = c.dir + "/client.pem";
  c.client_key = c.dir + "/client.key";
  return c;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace longqa::testing_support
