// longqa health and longqa info.
#include <iostream>

#include "client/commands.h"
#include "client/connection.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "longqa/v1/qa.grpc.pb.h"

namespace longqa::cli {

int RunHealth(int argc, char** argv) {
  const Args args(argc, argv, 2, ConnectionFlags(), {});
  const Connection connection(args);
  auto stub = grpc::health::v1::Health::NewStub(connection.channel());
  grpc::ClientContext context;
  connection.Prepare(&context);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, {}, &response);
  if (!status.ok()) {
    std::cerr << "longqa health: " << connection.target() << ": " << status.error_message() << "\n";
    return ExitCodeFor(status);
  }
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()) << "\n";
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk
                                                                             : kExitServer;
}

int RunInfo(int argc, char** argv) {
  const Args args(argc, argv, 2, ConnectionFlags(), {});
  const Connection connection(args);
  auto stub = v1::QuestionAnswering::NewStub(connection.channel());
  grpc::ClientContext context;
  connection.Prepare(&context);
  v1::ModelInfo info;
  const grpc::Status status = stub->GetModelInfo(&context, {}, &info);
  if (!status.ok()) {
    std::cerr << "longqa info: " << connection.target() << ": " << status.error_message() << "\n";
    return ExitCodeFor(status);
  }
  std::cout << "model " << info.name() << ": " << info.architecture() << ", layers "
            << info.layer_plan() << ", d=" << info.hidden_size() << ", vocab " << info.vocab_size()
            << ", device " << info.device() << ", precision " << info.precision() << "\n";
  if (info.window_tokens() > 0) {
    std::cout << "windows: l=" << info.window_tokens() << " m=" << info.stride_tokens() << "\n";
  }
  std::cout << "limits: " << info.max_document_bytes() << " bytes, " << info.max_document_tokens()
            << " document tokens, " << info.max_question_tokens() << " question tokens, batch "
            << info.max_batch_tokens() << " tokens\n"
            << "default null threshold: " << info.default_null_threshold();
  for (const v1::NullThresholdBand& band : info.null_threshold_bands()) {
    std::cout << "; " << band.null_threshold() << " from " << band.min_document_tokens()
              << " document tokens";
  }
  std::cout << "\nanswers: " << info.qa_format() << ", answer score " << info.answer_score()
            << "\nserver " << info.server_version() << "\n";
  return kExitOk;
}

}  // namespace longqa::cli
