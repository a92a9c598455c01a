// The foundation's proof that the dependencies live together in one process: sentencepiece
// (trained here, then loaded and used), LibTorch, a gRPC server with health and reflection, and
// the Prometheus text page over HTTP, all started, used and stopped in one test binary.
// (Debian's prebuilt sentencepiece crashed such a process at start-up; docs/environment.md.)
#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "model/tokenizers/sentencepiece_tokenizer.h"
#include "model/tokenizers/sentencepiece_trainer.h"
#include "server/metrics_endpoint.h"

namespace longqa {
namespace {

std::filesystem::path MakeTempDir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("longqa_smoke_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ProcessSmokeTest, SentencePieceTorchGrpcAndMetricsInOneProcess) {
  // sentencepiece: train a tiny model on generated text, load it, encode with byte offsets.
  const auto dir = MakeTempDir();
  {
    std::ofstream corpus(dir / "corpus.txt");
    const char* words[] = {"river",   "mountain",  "city",     "born",    "capital", "question",
                           "answer",  "paragraph", "document", "long",    "where",   "which",
                           "country", "Ada",       "Lovelace", "München", "café",    "naïve"};
    for (int i = 0; i < 400; ++i) {
      for (int j = 0; j < 12; ++j) corpus << words[(i * 7 + j * 3) % 18] << ' ';
      corpus << "\n";
    }
  }
  std::string error;
  ASSERT_TRUE(
      TrainSentencePiece((dir / "corpus.txt").string(), (dir / "spm").string(), 48, {}, &error))
      << error;
  auto tokenizer = SentencePieceTokenizer::Load((dir / "spm.model").string(), &error);
  ASSERT_NE(tokenizer, nullptr) << error;
  EXPECT_EQ(tokenizer->vocab_size(), 48);
  const std::string text = "Where was Ada born? In München, by the river.";
  std::vector<Piece> pieces;
  ASSERT_TRUE(tokenizer->Encode(text, &pieces, &error)) << error;
  ASSERT_GT(pieces.size(), 5u);
  std::string rebuilt;
  for (const Piece& p : pieces) {
    ASSERT_LE(p.byte_begin, p.byte_end);
    ASSERT_LE(p.byte_end, static_cast<int64_t>(text.size()));
    rebuilt += text.substr(p.byte_begin, p.byte_end - p.byte_begin);
  }
  EXPECT_EQ(rebuilt, text);  // pieces tile the input

  // LibTorch: a tensor op with a known result.
  const at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3});
  const at::Tensor b = at::ones({3, 2});
  const at::Tensor c = at::matmul(a, b);
  EXPECT_FLOAT_EQ(c[0][0].item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(c[1][1].item<float>(), 12.0f);

  // gRPC: a server with the health service and reflection on 127.0.0.1, checked by a client.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &grpc_port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(grpc_port, 0);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port),
                                     grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health->Check(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  // Metrics: a counter served as Prometheus text over HTTP and read back.
  auto registry = std::make_shared<prometheus::Registry>();
  auto& family = prometheus::BuildCounter()
                     .Name("longqa_smoke_events_total")
                     .Help("Events counted by the smoke test")
                     .Register(*registry);
  family.Add({{"kind", "test"}}).Increment(3);
  MetricsEndpoint metrics(registry);
  ASSERT_TRUE(metrics.Start("127.0.0.1:0").ok());
  httplib::Client http("127.0.0.1", metrics.port());
  const auto page = http.Get("/metrics");
  ASSERT_TRUE(page) << "no HTTP response from the metrics endpoint";
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("longqa_smoke_events_total{kind=\"test\"} 3"), std::string::npos)
      << page->body;

  metrics.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server->Wait();
  std::filesystem::remove_all(dir);
}

TEST(MetricsEndpointTest, IdleConnectionsDoNotHoldUpAScrape) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter().Name("longqa_test_total").Help("t").Register(*registry).Add({});
  MetricsEndpoint metrics(registry);
  ASSERT_TRUE(metrics.Start("127.0.0.1:0").ok());
  // 24 connections that never send a byte (before: 8 workers, each held 5 s by one of them).
  std::vector<int> idle;
  for (int i = 0; i < 24; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(metrics.port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all accepted by now
  httplib::Client http("127.0.0.1", metrics.port());
  // Shorter than the old 5 s hold, longer than any scrape of an unloaded endpoint.
  http.set_read_timeout(3, 0);
  http.set_connection_timeout(3, 0);
  const auto start = std::chrono::steady_clock::now();
  const auto page = http.Get("/metrics");
  std::printf(
      "scrape beside 24 idle connections: %.1f ms\n",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  ASSERT_TRUE(page) << "scrape failed: " << httplib::to_string(page.error());
  EXPECT_NE(page->body.find("longqa_test_total"), std::string::npos);
  for (int fd : idle) ::close(fd);
  metrics.Stop();
}

TEST(MetricsEndpointTest, RejectsBadAddresses) {
  EXPECT_FALSE(SplitHostPort("no-port").ok());
  EXPECT_FALSE(SplitHostPort("host:99999").ok());
  const auto v6 = SplitHostPort("[::1]:9464");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  EXPECT_EQ(v6->second, 9464);
}

}  // namespace
}  // namespace longqa
