#include "client/connection.h"

namespace longqa::cli {
namespace {

// A PEM file holding a `kind` block ("CERTIFICATE", "PRIVATE KEY"), or a UsageError saying what
// is wrong: gRPC's own error for a bad one is a dump of channel arguments.
std::string ReadPem(const std::string& path, const std::string& flag, const std::string& kind) {
  std::string pem = ReadFileOrThrow(path, flag);
  const auto begin = pem.find("-----BEGIN ");
  if (begin == std::string::npos || pem.find(kind + "-----", begin) == std::string::npos ||
      pem.find("-----END ", begin) == std::string::npos) {
    throw UsageError(flag + " " + path + " holds no PEM " + kind + " block");
  }
  return pem;
}

}  // namespace

const std::set<std::string>& ConnectionFlags() {
  static const std::set<std::string> flags = {"target",  "tls_ca",     "tls_cert",
                                              "tls_key", "token_file", "timeout_s"};
  return flags;
}

Connection::Connection(const Args& args)
    : target_(args.Get("target", "localhost:50051")), timeout_s_(args.GetDouble("timeout_s", 60)) {
  if (!(timeout_s_ > 0)) throw UsageError("--timeout_s must be positive");
  if (args.Has("token_file")) {
    token_ = ReadFileOrThrow(args.Get("token_file"), "--token_file");
    while (!token_.empty() && std::isspace(static_cast<unsigned char>(token_.back()))) {
      token_.pop_back();
    }
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (args.Has("tls_ca") || args.Has("tls_cert")) {
    grpc::SslCredentialsOptions ssl;
    if (args.Has("tls_ca")) {
      ssl.pem_root_certs = ReadPem(args.Get("tls_ca"), "--tls_ca", "CERTIFICATE");
    }
    if (args.Has("tls_cert") != args.Has("tls_key")) {
      throw UsageError("--tls_cert and --tls_key go together");
    }
    if (args.Has("tls_cert")) {
      ssl.pem_cert_chain = ReadPem(args.Get("tls_cert"), "--tls_cert", "CERTIFICATE");
      ssl.pem_private_key = ReadPem(args.Get("tls_key"), "--tls_key", "PRIVATE KEY");
    }
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetLoadBalancingPolicyName("round_robin");
  channel_args.SetMaxReceiveMessageSize(64 << 20);
  channel_args.SetMaxSendMessageSize(64 << 20);
  channel_ = grpc::CreateCustomChannel(target_, creds, channel_args);
}

void Connection::Prepare(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(timeout_s_)));
  if (!token_.empty()) context->AddMetadata("authorization", "Bearer " + token_);
}

int ExitCodeFor(const grpc::Status& status) {
  if (status.ok()) return kExitOk;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return kExitConnection;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitDeadline;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitAuth;
    default:
      return kExitServer;
  }
}

}  // namespace longqa::cli
