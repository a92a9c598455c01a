// longqa: the command-line client of longqa-server.
#include <grpcpp/grpcpp.h>

#include <cstring>
#include <iostream>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "server/version.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitConnection = 3;
constexpr int kExitServer = 4;

constexpr char kUsage[] =
    "longqa: the longqa question-answering client.\n"
    "\n"
    "Usage: longqa COMMAND [--target=HOST:PORT] [options]\n"
    "\n"
    "Commands:\n"
    "  health    ask the server's grpc.health.v1 service whether it is SERVING\n"
    "  help      print this text\n"
    "  version   print the client's version\n"
    "\n"
    "Options:\n"
    "  --target=HOST:PORT   server address (default localhost:50051)\n"
    "  --timeout_s=N        per-call deadline in seconds (default 5)\n"
    "\n"
    "Exit codes: 0 success, 2 usage error, 3 connection failure, 4 server error.\n";

int Health(const std::string& target, int timeout_s) {
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    std::cerr << "longqa health: " << target << ": " << status.error_message() << "\n";
    return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                   status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
               ? kExitConnection
               : kExitServer;
  }
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()) << "\n";
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk
                                                                             : kExitServer;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string command = argv[1];
  std::string target = "localhost:50051";
  int timeout_s = 5;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--target=", 0) == 0) {
      target = arg.substr(std::strlen("--target="));
    } else if (arg.rfind("--timeout_s=", 0) == 0) {
      timeout_s = std::atoi(arg.c_str() + std::strlen("--timeout_s="));
    } else {
      std::cerr << "longqa: unknown option " << arg << "\n\n" << kUsage;
      return kExitUsage;
    }
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "version" || command == "--version") {
    std::cout << "longqa " << longqa::kVersion << "\n";
    return kExitOk;
  }
  if (command == "health") return Health(target, timeout_s);
  std::cerr << "longqa: unknown command " << command << "\n\n" << kUsage;
  return kExitUsage;
}
