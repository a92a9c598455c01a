// How the CLI reaches a server: target (host:port, or dns:///host:port balanced round-robin over
// the resolved addresses), TLS / mTLS files, bearer token, per-call deadline.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <set>
#include <string>

#include "client/args.h"

namespace longqa::cli {

// Exit codes of every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitConnection = 3;
inline constexpr int kExitServer = 4;
inline constexpr int kExitDeadline = 5;  // the call's --timeout_s ran out
inline constexpr int kExitAuth = 6;      // UNAUTHENTICATED or PERMISSION_DENIED

// The flags every subcommand that talks to a server accepts.
const std::set<std::string>& ConnectionFlags();
inline constexpr char kConnectionHelp[] =
    "  --target=ADDR        server (default localhost:50051); dns:///host:port balances\n"
    "                       round-robin over every address the name resolves to\n"
    "  --tls_ca=FILE        use TLS, trusting this PEM CA (server certificate check)\n"
    "  --tls_cert=FILE --tls_key=FILE   client certificate for mTLS\n"
    "  --token_file=FILE    send 'authorization: Bearer <token>'\n"
    "  --timeout_s=S        per-call deadline in seconds, fractions allowed (default 60)\n";

class Connection {
 public:
  explicit Connection(const Args& args);  // throws UsageError on unreadable files
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Sets the deadline and the token on a call.
  void Prepare(grpc::ClientContext* context) const;
  const std::string& target() const { return target_; }

 private:
  std::string target_;
  std::string token_;
  double timeout_s_;
  std::shared_ptr<grpc::Channel> channel_;
};

// Exit code for a failed RPC: connection failures vs errors the server returned.
int ExitCodeFor(const grpc::Status& status);

}  // namespace longqa::cli
