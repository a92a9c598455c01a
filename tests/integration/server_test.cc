// longqa-server as a real process on 127.0.0.1, driven by real gRPC clients: answers equal the
// in-process engine's, every error path gets its status code and the server keeps serving,
// streaming, batching under concurrency, graceful drain on SIGTERM, token auth, TLS and mTLS.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "longqa/v1/qa.grpc.pb.h"
#include "model/compute_info.h"
#include "model/cpu_quota.h"
#include "model/engine.h"
#include "model/format/safetensors.h"
#include "server/http_api.h"
#include "server/service.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_models.h"
#include "tests/integration/test_pki.h"
#include "tools/random_model.h"

namespace longqa {
namespace {

using testing_support::ServerProcess;
namespace fs = std::filesystem;

fs::path TempDir() {
  static const fs::path dir = testing_support::ProcessTempDir("longqa_server_test_");
  return dir;
}

// The test model's config.json null_threshold: requests that set none are decided with it.
constexpr float kModelNullThreshold = 0.25f;

const std::string& ModelDir() {
  static const std::string dir = [] {
    const RandomModelSpec spec = testing_support::SmallModelSpec();
    const std::string d = (TempDir() / "model").string();
    const absl::Status s = WriteRandomModel(spec, d);
    if (!s.ok()) throw std::runtime_error(std::string(s.message()));
    const std::string config_path = d + "/config.json";
    nlohmann::json config = nlohmann::json::parse(std::ifstream(config_path));
    config["null_threshold"] = kModelNullThreshold;
    std::ofstream(config_path) << config.dump(1);
    return d;
  }();
  return dir;
}

std::string Document(int paragraphs, int words) {
  static const char* kWords[] = {"kalo", "mine", "ruso", "tize", "vopo", "anel", "isor", "quabri"};
  std::string text;
  for (int p = 0; p < paragraphs; ++p) {
    if (p) text += "\n\n";
    for (int w = 0; w < words; ++w) text += std::string(w ? " " : "") + kWords[(p * 7 + w * 3) % 8];
  }
  return text;
}

v1::AnswerRequest Request(const std::string& question, const std::string& text) {
  v1::AnswerRequest r;
  r.set_question(question);
  r.mutable_document()->set_text(text);
  r.mutable_options()->set_n_best(3);
  return r;
}

std::unique_ptr<v1::QuestionAnswering::Stub> Stub(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials()) {
  return v1::QuestionAnswering::NewStub(grpc::CreateChannel(address, creds));
}

grpc::Status Call(v1::QuestionAnswering::Stub& stub, const v1::AnswerRequest& request,
                  v1::AnswerResponse* response, int timeout_ms = 30000,
                  const std::string& token = "") {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  return stub.Answer(&context, request, response);
}

std::string Scrape(int port) {
  httplib::Client http("127.0.0.1", port);
  auto page = http.Get("/metrics");
  return page ? page->body : "";
}

// The value of one sample line of a Prometheus page ("name{labels} value"), or -1.
double Sample(const std::string& page, const std::string& series) {
  const auto at = page.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + series.size() + 2));
}

// Polls the server's metrics page every 50 ms until `holds(page)`; false after 20 s.
bool UntilMetrics(int metrics_port, const std::function<bool(const std::string&)>& holds) {
  for (int i = 0; i < 400; ++i) {
    if (holds(Scrape(metrics_port))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Flags that let the test model take documents of ~145k tokens, several at once from one caller.
// Limits wide enough for two of OverASecondAlone's largest requests (1,600 paragraphs of 1,920
// words: 2.3M tokens, 15 MB) queued at once from one caller: with 1M-token limits a machine on
// which 480-word paragraphs took just over 1 s refused the second copy (RESOURCE_EXHAUSTED, CI
// of session 66), and one on which they took just under refused the 960-word document.
std::vector<std::string> WithBigDocuments(std::vector<std::string> flags) {
  for (const char* f : {"--max_document_tokens=4000000", "--max_caller_queue_tokens=8000000",
                        "--max_queue_tokens=16000000", "--max_document_bytes=33554432"}) {
    flags.push_back(f);
  }
  return flags;
}

// Seconds one Answer call takes, its status into *status.
double TimedCall(v1::QuestionAnswering::Stub& stub, const v1::AnswerRequest& request,
                 grpc::Status* status) {
  v1::AnswerResponse r;
  const auto start = std::chrono::steady_clock::now();
  *status = Call(stub, request, &r, 120000);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A request that takes over 1 s alone, for comparisons against it to mean something: paragraphs
// twice as long until it does, so a faster machine or model does not void the test. Stops at the
// first call that fails (its status in `status`).
struct SlowRequest {
  v1::AnswerRequest request;
  double seconds = 0;
  grpc::Status status;
};
SlowRequest OverASecondAlone(v1::QuestionAnswering::Stub& stub) {
  SlowRequest big;
  for (int words = 120; words <= 1920 && big.seconds <= 1.0 && big.status.ok(); words *= 2) {
    big.request = Request("kalo", Document(1600, words));
    big.seconds = TimedCall(stub, big.request, &big.status);
  }
  return big;
}

// A long request (1,600 paragraphs of 480 words, 576k tokens: about 3 s on session 67's EPYC)
// running on a server started WithBigDocuments, for tests that queue requests behind it.
// running(): the server counted it accepted and queued nothing else. Long enough to outlast a
// 700 ms deadline with margin: 800 paragraphs of 360 words sometimes ended within it there.
class LongRequestRunning {
 public:
  explicit LongRequestRunning(const ServerProcess& server) : stub_(Stub(server.address())) {
    thread_ = std::thread([this] {
      v1::AnswerResponse r;
      status_ = Call(*stub_, Request("kalo", Document(1600, 480)), &r, 600000);
      done_ = true;
    });
    running_ = UntilMetrics(server.metrics_port(), [](const std::string& page) {
      return Sample(page, "longqa_inflight_requests") == 1 &&
             Sample(page, "longqa_queue_requests") == 0;
    });
  }
  ~LongRequestRunning() { Join(); }
  bool running() const { return running_; }
  bool done() const { return done_; }
  grpc::Status Join() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  std::unique_ptr<v1::QuestionAnswering::Stub> stub_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  bool running_ = false;
  grpc::Status status_;
};

// Whether the queue empties (requests and tokens) within UntilMetrics' 20 s.
bool QueueEmpties(int metrics_port) {
  return UntilMetrics(metrics_port, [](const std::string& page) {
    return Sample(page, "longqa_queue_requests") == 0 && Sample(page, "longqa_queue_tokens") == 0;
  });
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ =
        new ServerProcess({"--model_dir=" + ModelDir(), "--threads=2", "--max_batch_delay_ms=20",
                           "--max_document_bytes=200000", "--max_document_tokens=20000"});
    ASSERT_TRUE(server_->ok()) << server_->log();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess* server_;
};
ServerProcess* ServerTest::server_ = nullptr;

TEST_F(ServerTest, AnswersEqualTheInProcessEngine) {
  auto engine = Engine::LoadFromDir(ModelDir(), {2, "cpu"});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto stub = Stub(server_->address());
  for (int i = 0; i < 3; ++i) {
    const std::string text = Document(2 + i * 3, 20 + i * 17);
    v1::AnswerResponse response;
    const grpc::Status status = Call(*stub, Request("kalo ruso", text), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    QaRequest local;
    local.question = "kalo ruso";
    local.text = text;
    local.options.n_best = 3;
    const auto want = (*engine)->Answer(local);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(response.answer_type(), static_cast<int>(want->type));
    EXPECT_NEAR(response.no_answer_score(), want->no_answer_score, 1e-4);
    EXPECT_EQ(response.usage().document_tokens(), want->document_tokens);
    if (want->has_long_answer) {
      EXPECT_EQ(response.long_answer().byte_begin(), want->long_answer.byte_begin);
      EXPECT_EQ(response.long_answer().byte_end(), want->long_answer.byte_end);
      EXPECT_NEAR(response.long_answer().score(), want->long_answer.score, 1e-4);
    }
    ASSERT_EQ(response.short_answers_size(), static_cast<int>(want->short_answers.size()));
    for (int k = 0; k < response.short_answers_size(); ++k) {
      const auto& s = response.short_answers(k);
      EXPECT_EQ(s.byte_begin(), want->short_answers[k].byte_begin);
      EXPECT_EQ(s.text(), text.substr(s.byte_begin(), s.byte_end() - s.byte_begin()));
    }
  }
}

TEST_F(ServerTest, NoAnswerDecisionCanBeRedoneFromTheResponse) {
  // qa.proto's rule: NO_ANSWER exactly when no_answer_score + null_threshold >= best_answer_score;
  // a request that sets no threshold gets the model's (config.json), an explicit 0 stays 0.
  auto stub = Stub(server_->address());
  const std::string text = Document(3, 25);
  v1::AnswerResponse first;
  ASSERT_TRUE(Call(*stub, Request("kalo", text), &first).ok());
  const float margin = first.best_answer_score() - first.no_answer_score();
  EXPECT_EQ(first.answer_type() == v1::ANSWER_TYPE_NO_ANSWER, margin <= kModelNullThreshold)
      << margin;
  for (const float threshold : {margin - 0.5f, margin + 0.5f, -margin - 1.0f, 0.0f}) {
    v1::AnswerRequest request = Request("kalo", text);
    request.mutable_options()->set_null_threshold(threshold);
    v1::AnswerResponse r;
    ASSERT_TRUE(Call(*stub, request, &r).ok());
    EXPECT_FLOAT_EQ(r.no_answer_score(), first.no_answer_score());
    EXPECT_FLOAT_EQ(r.best_answer_score(), first.best_answer_score());
    EXPECT_EQ(r.answer_type() == v1::ANSWER_TYPE_NO_ANSWER,
              r.no_answer_score() + threshold >= r.best_answer_score())
        << "threshold " << threshold;
    if (r.answer_type() != v1::ANSWER_TYPE_NO_ANSWER) {  // the type of best_answer_score
      const auto& p = r.answer_type_probabilities();
      const auto best = std::max_element(p.begin() + 1, p.end()) - p.begin();
      // (SHORT without any span inside the paragraph becomes LONG_ONLY.)
      EXPECT_TRUE(best == r.answer_type() ||
                  (best == v1::ANSWER_TYPE_SHORT && r.answer_type() == v1::ANSWER_TYPE_LONG_ONLY));
    }
  }
}

TEST_F(ServerTest, BadRequestsGetTheirStatusAndTheServerKeepsServing) {
  auto stub = Stub(server_->address());
  v1::AnswerResponse r;
  EXPECT_EQ(Call(*stub, Request("", "text"), &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(*stub, Request("q", " \n\n "), &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::AnswerRequest no_document;
  no_document.set_question("q");
  EXPECT_EQ(Call(*stub, no_document, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const grpc::Status bad_utf8 = Call(*stub, Request("q", "caf\xC3 au lait"), &r);
  EXPECT_EQ(bad_utf8.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad_utf8.error_message().find("UTF-8"), std::string::npos);
  EXPECT_EQ(Call(*stub, Request("q\xFF", "text"), &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Questions that ask nothing: tabs and newlines, U+3000, NUL bytes.
  for (const std::string& question :
       {std::string("\t\n\t"), std::string("\u3000\u3000"), std::string("\0\0", 2)}) {
    const grpc::Status empty = Call(*stub, Request(question, "text"), &r);
    EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(empty.error_message().find("no letter or digit"), std::string::npos)
        << empty.error_message();
  }
  EXPECT_EQ(Call(*stub, Request("q", std::string(200001, 'a')), &r).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Call(*stub, Request("q", Document(200, 150)), &r).error_code(),  // > 20000 tokens
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  v1::AnswerRequest bad_options = Request("q", "text");
  bad_options.mutable_options()->set_n_best(21);
  EXPECT_EQ(Call(*stub, bad_options, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A deadline that runs out while the request waits behind a long one. The long one must be in
  // flight first: a fixed 100 ms sleep was not always enough on a busy machine, and then the
  // short request ran alone and was answered within its 1 ms.
  std::thread busy([&] {
    v1::AnswerResponse big;
    EXPECT_TRUE(Call(*stub, Request("kalo", Document(100, 120)), &big).ok());
  });
  for (int i = 0;
       i < 2000 && Sample(Scrape(server_->metrics_port()), "longqa_inflight_requests") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(Call(*stub, Request("q", Document(3, 10)), &r, 1).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  busy.join();
  // Still serving.
  const grpc::Status fine = Call(*stub, Request("kalo", Document(2, 10)), &r);
  EXPECT_TRUE(fine.ok()) << fine.error_message();
  const std::string page = Scrape(server_->metrics_port());
  EXPECT_GE(
      Sample(
          page,
          "longqa_requests_total{code=\"INVALID_ARGUMENT\",method=\"Answer\",transport=\"grpc\"}"),
      9);
  EXPECT_GE(Sample(page,
                   "longqa_requests_total{code=\"RESOURCE_EXHAUSTED\",method=\"Answer\",transport="
                   "\"grpc\"}"),
            2);
}

TEST(ServerDropTest, CancelledAndExpiredRequestsAreDroppedBeforeCompute) {
  // An idle engine starts a request at once, so the two requests under test wait in the queue
  // behind a long one (several seconds on the test model) while one expires and one is cancelled.
  ServerProcess server(WithBigDocuments({"--model_dir=" + ModelDir()}));
  ASSERT_TRUE(server.ok()) << server.log();
  auto stub = Stub(server.address());
  std::thread busy([&] {
    v1::AnswerResponse big;
    EXPECT_TRUE(Call(*stub, Request("kalo", Document(1000, 120)), &big, 120000).ok());
  });
  // Wait until the long request's batch has started (the batch histogram counts a batch when it
  // starts): a fixed sleep raced under load, and the short ones, arriving first, ran at once.
  EXPECT_TRUE(UntilMetrics(server.metrics_port(), [](const std::string& page) {
    return Sample(page, "longqa_batch_size_requests_count") >= 1;
  }));
  EXPECT_EQ(Sample(Scrape(server.metrics_port()), "longqa_batch_size_requests_count"), 1);
  v1::AnswerResponse r;
  grpc::ClientContext cancelled;
  v1::AnswerResponse cr;
  const v1::AnswerRequest cancelled_request = Request("q", Document(3, 10));
  std::promise<grpc::Status> cancelled_status;
  stub->async()->Answer(&cancelled, &cancelled_request, &cr,
                        [&](grpc::Status s) { cancelled_status.set_value(s); });
  EXPECT_EQ(Call(*stub, Request("q", Document(3, 10)), &r, 200).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  cancelled.TryCancel();
  EXPECT_EQ(cancelled_status.get_future().get().error_code(), grpc::StatusCode::CANCELLED);
  busy.join();
  // The worker answers the long request, then takes both queued ones and drops them.
  std::string page;
  for (int i = 0; i < 100; ++i) {
    page = Scrape(server.metrics_port());
    if (Sample(page, "longqa_dropped_requests_total{reason=\"cancelled\"}") >= 1 &&
        Sample(page, "longqa_dropped_requests_total{reason=\"deadline\"}") >= 1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Sample(page, "longqa_dropped_requests_total{reason=\"deadline\"}"), 1) << page;
  EXPECT_EQ(Sample(page, "longqa_dropped_requests_total{reason=\"cancelled\"}"), 1);
  EXPECT_EQ(Sample(page, "longqa_batch_size_requests_count"), 1);  // only the long one ran
  EXPECT_TRUE(Call(*stub, Request("kalo", Document(2, 10)), &r, 10000).ok());  // still serving
}

// Answers after multi-byte text (CJK, emoji with ZWJ, combining marks, RTL): every span the server
// returns slices the caller's bytes on code point boundaries, its text field is exactly those
// bytes, and the long answer is exactly one paragraph. The random model puts its spans anywhere,
// so many questions and n_best 20 cover spans all over the document.
TEST_F(ServerTest, SpansAfterMultiByteTextSliceTheCallersBytesOnCodePointBoundaries) {
  auto stub = Stub(server_->address());
  const std::vector<std::string> paragraphs = {
      "北京是中国的首都。 kalo mine 東京 ruso 👨‍👩‍👧‍👦 tize",
      "Cafe\xCC\x81 nai\xCC\x88ve vopo e\xCC\x81lan anel عربي isor עברית quabri 🫠 kalo",
      "ｆｕｌｌ ｗｉｄｔｈ mine 한국어 ruso ﬁ ligature tize 𝔘𝔫𝔦 vopo"};
  std::string text;
  std::vector<std::pair<uint64_t, uint64_t>> paragraph_bytes;
  for (const std::string& paragraph : paragraphs) {
    if (!text.empty()) text += "\n\n";
    paragraph_bytes.push_back({text.size(), text.size() + paragraph.size()});
    text += paragraph;
  }
  auto on_boundary = [&](uint64_t at) {
    return at == text.size() || (static_cast<uint8_t>(text[at]) & 0xC0) != 0x80;
  };
  auto check = [&](const v1::Span& span, const std::string& what) {
    ASSERT_LE(span.byte_begin(), span.byte_end()) << what;
    ASSERT_LE(span.byte_end(), text.size()) << what;
    EXPECT_TRUE(on_boundary(span.byte_begin())) << what << " begins inside a character";
    EXPECT_TRUE(on_boundary(span.byte_end())) << what << " ends inside a character";
    EXPECT_EQ(span.text(), text.substr(span.byte_begin(), span.byte_end() - span.byte_begin()))
        << what;
  };
  int short_spans = 0;
  for (const std::string question :
       {"kalo", "mine ruso", "北京", "emoji 🫠", "e\xCC\x81lan", "tize"}) {
    v1::AnswerRequest request = Request(question, text);
    request.mutable_options()->set_null_threshold(-1e30f);
    request.mutable_options()->set_n_best(20);
    request.mutable_options()->set_max_short_answer_tokens(6);
    v1::AnswerResponse response;
    ASSERT_TRUE(Call(*stub, request, &response).ok()) << question;
    ASSERT_NE(response.answer_type(), v1::ANSWER_TYPE_NO_ANSWER);
    check(response.long_answer(), question + " long answer");
    EXPECT_EQ(
        std::make_pair(response.long_answer().byte_begin(), response.long_answer().byte_end()),
        paragraph_bytes[response.long_answer().paragraph_index()]);
    for (const v1::Span& span : response.short_answers()) {
      check(span, question + " short answer");
      ++short_spans;
    }
  }
  EXPECT_GT(short_spans, 20);
}

TEST_F(ServerTest, StreamAnswersEveryRequestWithItsId) {
  auto stub = Stub(server_->address());
  grpc::ClientContext context;
  auto stream = stub->AnswerStream(&context);
  for (int i = 0; i < 8; ++i) {
    v1::AnswerRequest r = Request("kalo", Document(1 + i % 3, 10 + i));
    r.set_request_id("req-" + std::to_string(i));
    if (i == 5) r.set_question("");  // a bad one: answered with an error, the stream goes on
    // Over --max_document_bytes (200,000) but under the receive limit (ReceiveLimitBytes): its
    // own RESOURCE_EXHAUSTED, the stream goes on.
    if (i == 6) r.mutable_document()->set_text(std::string(300000, 'a'));
    ASSERT_TRUE(stream->Write(r));
  }
  stream->WritesDone();
  std::set<std::string> ids;
  v1::AnswerResponse response;
  while (stream->Read(&response)) {
    ids.insert(response.request_id());
    if (response.request_id() == "req-5") {
      EXPECT_EQ(response.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
    } else if (response.request_id() == "req-6") {
      EXPECT_EQ(response.error().code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
      EXPECT_NE(response.error().message().find("at most 200000"), std::string::npos)
          << response.error().message();
    } else {
      EXPECT_EQ(response.error().code(), 0) << response.error().message();
      EXPECT_GT(response.usage().document_tokens(), 0u);
    }
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(ids.size(), 8u);

  // Beyond the receive limit, gRPC itself ends the stream: RESOURCE_EXHAUSTED (documented).
  grpc::ClientContext too_big_context;
  auto too_big = stub->AnswerStream(&too_big_context);
  v1::AnswerRequest huge = Request("kalo", std::string(ReceiveLimitBytes(200000) + 10, 'a'));
  too_big->Write(huge);
  too_big->WritesDone();
  while (too_big->Read(&response)) {
  }
  EXPECT_EQ(too_big->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// A client that streams requests and never reads the answers (each ~12 KB: the long answer's
// paragraph comes back): the stream stops reading at 64 outstanding requests, HTTP/2 flow control
// then stops the client's writes, so the server does not hold every unread answer; other callers
// are served meanwhile, and cancelling the stream frees it.
TEST(ServerHostileTest, AStreamWhoseReaderNeverReadsIsHeldBackAndHoldsUpNobodyElse) {
  // The stream from [::1], the other caller from 127.0.0.1: two callers, two fair queues.
  ServerProcess server({"--model_dir=" + ModelDir(), "--threads=2", "--listen=[::]:0"});
  ASSERT_TRUE(server.ok()) << server.log();
  auto stub = Stub(server.ipv6_address());
  grpc::ClientContext slow_context;
  slow_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto slow = stub->AnswerStream(&slow_context);
  // 144 MB of answers, far beyond flow-control windows and socket buffers: the writer is held
  // back after about 1,100 requests (3,100 under the sanitizers, which failed the old bound of
  // half of 6,000), whatever kRequests is, so the bound of half of them keeps a wide margin.
  constexpr int kRequests = 12000;
  std::atomic<int> written{0};
  std::thread writer([&] {
    v1::AnswerRequest r = Request("kalo", Document(1, 2000));
    r.mutable_options()->set_null_threshold(-1e30f);  // always a long answer: the paragraph
    for (int i = 0; i < kRequests; ++i) {
      if (!slow->Write(r)) break;
      ++written;
    }
  });
  // Wait until the writer is held back (no progress for a second) or has sent everything.
  int last = -1;
  for (int i = 0; i < 60 && written.load() < kRequests && written.load() != last; ++i) {
    last = written.load();
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const int held_at = written.load();
  auto other = Stub(server.address());
  v1::AnswerResponse r;
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_TRUE(Call(*other, Request("kalo", Document(2, 20)), &r, 10000).ok());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  std::printf(
      "the unread stream was held back after %d of %d requests; another caller was "
      "answered in %.3f s meanwhile\n",
      held_at, kRequests, seconds);
  EXPECT_LT(held_at, kRequests / 2);
  slow_context.TryCancel();
  writer.join();
  slow->Finish();  // CANCELLED
  EXPECT_TRUE(Call(*other, Request("kalo", Document(2, 20)), &r, 10000).ok());
}

TEST_F(ServerTest, BytesThatAreNoAnswerRequestGetAClearStatus) {
  // Answer is a raw method: the service parses the bytes itself and says what is wrong (gRPC
  // alone would answer UNIMPLEMENTED with an empty message); the server keeps serving.
  auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  const std::string garbage = "\xff\xff\xff\xff\x0f not a protobuf";
  grpc::Slice slice(garbage);
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::ClientContext context;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&context, "/longqa.v1.QuestionAnswering/Answer", grpc::StubOptions(), &request,
                    &reply, [&](grpc::Status s) { done.set_value(s); });
  const grpc::Status status = done.get_future().get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "the request's " + std::to_string(garbage.size()) +
                " bytes are not a longqa.v1.AnswerRequest protobuf message");
  auto stub = Stub(server_->address());
  v1::AnswerResponse r;
  EXPECT_TRUE(Call(*stub, Request("kalo", Document(2, 10)), &r).ok());
}

TEST_F(ServerTest, EveryAnswerCallGetsItsRequestIdInTrailingMetadata) {
  auto stub = Stub(server_->address());
  auto id_of = [&](const v1::AnswerRequest& request, grpc::StatusCode want) {
    grpc::ClientContext context;
    v1::AnswerResponse response;
    EXPECT_EQ(stub->Answer(&context, request, &response).error_code(), want);
    const auto& trailing = context.GetServerTrailingMetadata();
    const auto it = trailing.find(kRequestIdMetadata);
    return it == trailing.end() ? std::string("(none)")
                                : std::string(it->second.data(), it->second.size());
  };
  v1::AnswerRequest named = Request("kalo", Document(2, 10));
  named.set_request_id("mine-7");
  EXPECT_EQ(id_of(named, grpc::StatusCode::OK), "mine-7");
  const std::string assigned = id_of(Request("kalo", Document(2, 10)), grpc::StatusCode::OK);
  EXPECT_EQ(assigned.rfind("srv-", 0), 0u) << assigned;
  // Errors carry it too: that is when a caller needs it to report the failure.
  const std::string failed = id_of(Request("", "text"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(failed.rfind("srv-", 0), 0u) << failed;
  EXPECT_NE(failed, assigned);
}

TEST_F(ServerTest, AllocatesThroughTcmallocWhenBuiltWithIt) {
  // CMake links libtcmalloc_minimal into longqa-server when the machine has it (install-deps.sh
  // installs it): 2x faster on long documents than glibc's malloc.
  ASSERT_TRUE(LONGQA_SERVER_TCMALLOC) << "built without libtcmalloc_minimal (CMake warned)";
  EXPECT_TRUE(server_->Maps("libtcmalloc_minimal"));
  // ...and says on /metrics what tcmalloc holds (server/allocator.h).
  const std::string page = Scrape(server_->metrics_port());
  EXPECT_GT(Sample(page, "longqa_allocator_allocated_bytes"), 1e6);
  EXPECT_GE(Sample(page, "longqa_allocator_free_bytes"), 0);  // -1: missing
}

TEST_F(ServerTest, ConcurrentClientsShareBatches) {
  const std::string page_before = Scrape(server_->metrics_port());
  const double batches_before = Sample(page_before, "longqa_batch_size_requests_count");
  const double singles_before = Sample(page_before, "longqa_batch_size_requests_bucket{le=\"1\"}");
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&, c] {
      auto stub = Stub(server_->address());
      for (int i = 0; i < 3; ++i) {
        v1::AnswerResponse r;
        if (Call(*stub, Request("kalo", Document(2, 20 + c)), &r).ok()) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 48);
  const std::string page = Scrape(server_->metrics_port());
  const double batches = Sample(page, "longqa_batch_size_requests_count") - batches_before;
  const double singles =
      Sample(page, "longqa_batch_size_requests_bucket{le=\"1\"}") - singles_before;
  EXPECT_LT(batches, 48);  // fewer batches than requests
  EXPECT_LT(singles, batches) << "no batch held more than one request";
}

TEST_F(ServerTest, HealthModelInfoAndMetricsPage) {
  auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext hc;
  grpc::health::v1::HealthCheckResponse hr;
  ASSERT_TRUE(health->Check(&hc, {}, &hr).ok());
  EXPECT_EQ(hr.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  grpc::ClientContext named_hc;  // by the service's own name too
  grpc::health::v1::HealthCheckRequest named;
  named.set_service("longqa.v1.QuestionAnswering");
  ASSERT_TRUE(health->Check(&named_hc, named, &hr).ok());
  EXPECT_EQ(hr.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  auto stub = v1::QuestionAnswering::NewStub(channel);
  v1::AnswerResponse answered;  // one request, so that every labelled series exists
  ASSERT_TRUE(Call(*stub, Request("kalo", Document(2, 10)), &answered).ok());
  grpc::ClientContext ic;
  v1::ModelInfo info;
  ASSERT_TRUE(stub->GetModelInfo(&ic, {}, &info).ok());
  EXPECT_EQ(info.architecture(), "cluster_former");
  EXPECT_EQ(info.layer_plan(), "SSCS");
  EXPECT_EQ(info.window_tokens(), 32u);
  EXPECT_EQ(info.max_document_tokens(), 20000u);
  EXPECT_FLOAT_EQ(info.default_null_threshold(), kModelNullThreshold);
  EXPECT_EQ(info.answer_score(), "type");
  EXPECT_EQ(info.qa_format(), "nq");
  EXPECT_EQ(info.precision(), "fp32");  // auto, and the test model's default_precision is fp32
  const std::string page = Scrape(server_->metrics_port());
  for (const char* name :
       {"longqa_request_duration_seconds_bucket", "longqa_queue_duration_seconds_bucket",
        "longqa_tokenize_duration_seconds_bucket", "longqa_inference_duration_seconds_bucket",
        "longqa_decode_duration_seconds_bucket", "longqa_batch_tokens_bucket",
        "longqa_document_tokens_bucket", "longqa_document_windows_bucket", "longqa_queue_requests",
        "longqa_inflight_requests", "longqa_tokens_processed_total", "longqa_answers_total",
        "longqa_model_info", "longqa_process_resident_memory_bytes"}) {
    EXPECT_NE(page.find(name), std::string::npos) << name;
  }
  EXPECT_GT(Sample(page, "longqa_process_resident_memory_bytes"), 1e6);
  EXPECT_EQ(Sample(page, "longqa_ready"), 1);
}

TEST(ServerOptionsTest, MetricsEndpointCanBeTurnedOff) {
  // An empty --metrics_listen overrides the helper's default address: no endpoint at all.
  ServerProcess server({"--model_dir=" + ModelDir(), "--metrics_listen="});
  ASSERT_TRUE(server.ok()) << server.log();
  EXPECT_EQ(server.metrics_port(), 0);
  v1::AnswerResponse r;
  EXPECT_TRUE(Call(*Stub(server.address()), Request("kalo", "text"), &r).ok());
}

TEST(ServerOptionsTest, UntrainedHeadsAreNamedInAWarningAtStart) {
  // A converted checkpoint's config lists the heads the importer initialised at random.
  const fs::path dir = TempDir() / "untrained";
  fs::create_directories(dir);
  for (const char* file : {"model.safetensors", "spm.model"}) {
    fs::copy_file(fs::path(ModelDir()) / file, dir / file, fs::copy_options::overwrite_existing);
  }
  ModelConfig config = *LoadModelConfig(ModelDir() + "/config.json");
  config.untrained_heads = {"long_answer", "answer_type"};
  std::ofstream(dir / "config.json") << ModelConfigToJson(config);
  ServerProcess server({"--model_dir=" + dir.string()});
  ASSERT_TRUE(server.ok()) << server.log();
  EXPECT_NE(server.log().find("WARNING: head 'long_answer'"), std::string::npos) << server.log();
  EXPECT_NE(server.log().find("WARNING: head 'answer_type'"), std::string::npos) << server.log();
  EXPECT_EQ(server.log().find("WARNING: head 'qa_outputs'"), std::string::npos) << server.log();
  v1::AnswerResponse r;
  EXPECT_TRUE(Call(*Stub(server.address()), Request("kalo", "text"), &r).ok());  // still serves
  ServerProcess plain({"--model_dir=" + ModelDir()});
  ASSERT_TRUE(plain.ok()) << plain.log();
  EXPECT_EQ(plain.log().find("WARNING: head"), std::string::npos) << plain.log();
  // Every start says what the math runs on (model/compute_info.h).
  EXPECT_NE(plain.log().find("longqa-server: BLAS core "), std::string::npos) << plain.log();
}

TEST(ServerOptionsTest, RunsOpenBlasKernelsForThisCpuAndKeepsTheUsersCoretype) {
  // OpenBLAS 0.3.21 falls back to Prescott's SSE3 kernels on CPUs it does not know (an AVX-512
  // Xeon in a VM: a quarter of the GEMM speed); the server then runs itself again with kernels for
  // the CPU's ISA (model/compute_info.h). A user's OPENBLAS_CORETYPE stays, with a warning.
  const char* saved = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved_value = saved != nullptr ? saved : "";
  const std::string isa = CpuIsa();
  const auto core_of = [](const std::string& log) {
    std::smatch m;
    return std::regex_search(log, m, std::regex("BLAS core (\\w+)")) ? m[1].str() : "";
  };
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("LONGQA_OPENBLAS_DETECTED");
  {
    ServerProcess server({"--model_dir=" + ModelDir()});
    ASSERT_TRUE(server.ok()) << server.log();
    const std::string core = core_of(server.log());
    ASSERT_FALSE(core.empty()) << server.log();
    EXPECT_TRUE(core == "unknown" || BlasCoreUsesIsa(core, isa)) << isa << "\n" << server.log();
    EXPECT_EQ(server.log().find("WARNING: OpenBLAS"), std::string::npos) << server.log();
    v1::AnswerResponse r;
    EXPECT_TRUE(Call(*Stub(server.address()), Request("kalo", "text"), &r).ok());
  }
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  {
    ServerProcess server({"--model_dir=" + ModelDir()});
    ASSERT_TRUE(server.ok()) << server.log();
    const std::string core = core_of(server.log());
    EXPECT_TRUE(core == "Prescott" || core == "unknown") << server.log();
    if (core == "Prescott" && !BetterBlasCore(core, isa).empty()) {
      EXPECT_NE(server.log().find("WARNING: OPENBLAS_CORETYPE=Prescott"), std::string::npos)
          << server.log();
    }
  }
  if (saved != nullptr) {
    setenv("OPENBLAS_CORETYPE", saved_value.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
}

TEST(ServerOptionsTest, WorkersShareTheUsableCpusAndOversubscriptionIsWarned) {
  // --threads left at 0: each of the --workers gets its share of the CPUs this process may use
  // (model/cpu_quota.h; the cgroup reading is tested in tests/unit/cpu_quota_test.cc), and the
  // workers answer side by side.
  const int usable = ThisProcessCpuQuota().usable_cpus;
  const int share = std::max(1, usable / 2);
  ServerProcess shared({"--model_dir=" + ModelDir(), "--workers=2"});
  ASSERT_TRUE(shared.ok()) << shared.log();
  EXPECT_NE(shared.log().find("2 worker(s) x " + std::to_string(share) + " thread(s) on " +
                              std::to_string(usable) + " CPU"),
            std::string::npos)
      << shared.log();
  EXPECT_NE(shared.log().find(", " + std::to_string(share) + " threads, oneDNN"), std::string::npos)
      << shared.log();
  EXPECT_EQ(shared.log().find("WARNING: 2 worker(s)"), std::string::npos) << shared.log();
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 4; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      v1::AnswerResponse r;
      return Call(*Stub(shared.address()), Request("kalo ruso", Document(3 + i, 30)), &r);
    }));
  }
  for (auto& call : calls) EXPECT_TRUE(call.get().ok());
  // Every worker given all the CPUs: said at start, still serves.
  ServerProcess over(
      {"--model_dir=" + ModelDir(), "--workers=2", "--threads=" + std::to_string(usable)});
  ASSERT_TRUE(over.ok()) << over.log();
  const std::string warning = "WARNING: 2 worker(s) x " + std::to_string(usable) +
                              " thread(s) on " + std::to_string(usable) + " usable CPU(s)";
  EXPECT_NE(over.log().find(warning), std::string::npos) << over.log();
  v1::AnswerResponse r;
  EXPECT_TRUE(Call(*Stub(over.address()), Request("kalo", "text"), &r).ok());
}

TEST(ServerOptionsTest, Int8AndBf16PrecisionsServeThroughTheirLayers) {
  // The same question at fp32, int8 and bf16: all answer; the scores differ (each did run its
  // own layers) but only by what the precision costs (the answers' agreement on the shipped
  // model's dev set: docs/perf/README.md).
  ServerProcess fp32({"--model_dir=" + ModelDir()});
  ASSERT_TRUE(fp32.ok()) << fp32.log();
  v1::AnswerResponse a;
  const auto request = Request("kalo ruso", Document(4, 30));
  ASSERT_TRUE(Call(*Stub(fp32.address()), request, &a).ok());
  for (const char* precision : {"int8", "bf16"}) {
    SCOPED_TRACE(precision);
    ServerProcess other({"--model_dir=" + ModelDir(), std::string("--precision=") + precision});
    ASSERT_TRUE(other.ok()) << other.log();
    v1::AnswerResponse b;
    ASSERT_TRUE(Call(*Stub(other.address()), request, &b).ok());
    EXPECT_NE(a.no_answer_score(), b.no_answer_score());
    EXPECT_NEAR(a.no_answer_score(), b.no_answer_score(),
                0.1 * std::abs(a.no_answer_score()) + 0.1);
    EXPECT_NEAR(a.best_answer_score(), b.best_answer_score(),
                0.1 * std::abs(a.best_answer_score()) + 0.1);
  }
}

TEST(ServerOptionsTest, CheckedInt8AnswersCloseCallsAsFp32DoesAndCountsThem) {
  // --int8_recheck_margin far above any margin: every answer is a close call, computed again in
  // fp32, so the response is fp32's to the bit and the counter has one per request.
  ServerProcess fp32({"--model_dir=" + ModelDir()});
  ServerProcess checked(
      {"--model_dir=" + ModelDir(), "--precision=int8", "--int8_recheck_margin=1000"});
  ASSERT_TRUE(fp32.ok()) << fp32.log();
  ASSERT_TRUE(checked.ok()) << checked.log();
  EXPECT_NE(checked.log().find("within 1000 logits of another are computed again in fp32"),
            std::string::npos)
      << checked.log();
  const std::string counter = "longqa_int8_rechecked_requests_total";
  const double before = Sample(Scrape(checked.metrics_port()), counter);  // the warm-up's
  for (int i = 0; i < 3; ++i) {
    const auto request = Request("kalo ruso", Document(3 + i, 30));
    v1::AnswerResponse a, b;
    ASSERT_TRUE(Call(*Stub(fp32.address()), request, &a).ok());
    ASSERT_TRUE(Call(*Stub(checked.address()), request, &b).ok());
    EXPECT_EQ(a.no_answer_score(), b.no_answer_score());
    EXPECT_EQ(a.best_answer_score(), b.best_answer_score());
    EXPECT_EQ(a.answer_type(), b.answer_type());
  }
  EXPECT_EQ(Sample(Scrape(checked.metrics_port()), counter) - before, 3);
  EXPECT_EQ(Sample(Scrape(fp32.metrics_port()), counter), 0);
}

// The other attention families of the papers (neural clustering, clustered and improved clustered
// attention: model/encoders/) served end to end, one model per layer type: each answers a
// multi-window document through the whole server. (What the layers compute is checked against
// the papers' formulas in tests/unit/clustering_attention_test.cc.)
TEST(ServerLayerTypesTest, EveryClusteringAttentionLayerTypeServes) {
  for (const char* layers : {"SNS", "SKS", "SIS"}) {
    SCOPED_TRACE(layers);
    RandomModelSpec spec = testing_support::SmallModelSpec();
    spec.layers = layers;
    const std::string dir = (TempDir() / (std::string("layers-") + layers)).string();
    ASSERT_TRUE(WriteRandomModel(spec, dir).ok());
    ServerProcess server({"--model_dir=" + dir});
    ASSERT_TRUE(server.ok()) << server.log();
    auto stub = Stub(server.address());
    grpc::ClientContext ic;
    v1::ModelInfo info;
    ASSERT_TRUE(stub->GetModelInfo(&ic, {}, &info).ok());
    EXPECT_EQ(info.layer_plan(), layers);
    v1::AnswerResponse r;
    const grpc::Status status = Call(*stub, Request("kalo ruso", Document(12, 40)), &r);
    ASSERT_TRUE(status.ok()) << status.error_message() << "\n" << server.log();
    EXPECT_GT(r.usage().windows(), 5u);  // many windows, so the clustering layers had rows to sort
    EXPECT_EQ(r.answer_type_probabilities_size(), 5);
    EXPECT_TRUE(std::isfinite(r.best_answer_score()));
    EXPECT_TRUE(std::isfinite(r.no_answer_score()));
  }
}

TEST(ServerOptionsTest, BadFlagsAreRefusedAtStart) {
  ServerProcess bad_batch({"--model_dir=" + ModelDir(), "--max_batch_tokens=0"});
  EXPECT_FALSE(bad_batch.ok());
  EXPECT_NE(bad_batch.log().find("--max_batch_tokens must be positive"), std::string::npos)
      << bad_batch.log();
  ServerProcess bad_precision({"--model_dir=" + ModelDir(), "--precision=fp8"});
  EXPECT_FALSE(bad_precision.ok());
  EXPECT_NE(bad_precision.log().find("--precision must be auto, fp32, bf16 or int8"),
            std::string::npos)
      << bad_precision.log();
  ServerProcess bad_margin({"--model_dir=" + ModelDir(), "--int8_recheck_margin=-0.5"});
  EXPECT_FALSE(bad_margin.ok());
  EXPECT_NE(bad_margin.log().find("--int8_recheck_margin must be a finite number of logits >= 0"),
            std::string::npos)
      << bad_margin.log();
  ServerProcess no_model({"--model_dir=/nonexistent"});
  EXPECT_FALSE(no_model.ok());
  EXPECT_NE(no_model.log().find("/nonexistent"), std::string::npos) << no_model.log();
}

// A model folder that is broken at start: the server exits non-zero with one message naming the
// file or the tensor at fault (an operator fixes the folder from the log alone).
TEST(ServerStartTest, BrokenModelFoldersAreRefusedNamingTheFileOrTensor) {
  namespace fs = std::filesystem;
  auto broken_copy = [](const std::string& name) {
    const fs::path dir = TempDir() / ("broken-" + name);
    fs::remove_all(dir);
    fs::copy(ModelDir(), dir);
    return dir;
  };
  auto expect_refused = [](const fs::path& dir, const std::string& named) {
    ServerProcess server({"--model_dir=" + dir.string()});
    EXPECT_FALSE(server.ok()) << dir;
    EXPECT_NE(server.WaitExit(), 0) << dir;
    EXPECT_NE(server.log().find(named), std::string::npos) << named << " not in: " << server.log();
  };
  {  // model.safetensors cut short: the data section ends before the last tensor's bytes.
    const fs::path dir = broken_copy("truncated");
    fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") - 100);
    expect_refused(dir, "model.safetensors");
  }
  {  // one tensor of the wrong shape: named with both shapes.
    const fs::path dir = broken_copy("shape");
    auto file = SafetensorsFile::Open((dir / "model.safetensors").string());
    ASSERT_TRUE(file.ok()) << file.status();
    std::map<std::string, at::Tensor> tensors;
    for (const auto& [name, entry] : (*file)->entries()) tensors[name] = *(*file)->Read(name);
    file->reset();
    const std::string victim = "encoder.layer.0.intermediate.dense.weight";
    ASSERT_EQ(tensors.count(victim), 1u);
    tensors[victim] = tensors[victim].narrow(0, 0, 3).contiguous();
    ASSERT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), tensors).ok());
    expect_refused(dir, victim);
  }
  {  // config.json missing, then not JSON.
    const fs::path dir = broken_copy("config");
    fs::remove(dir / "config.json");
    expect_refused(dir, "config.json");
    std::ofstream(dir / "config.json") << "{\"architecture\": ";
    expect_refused(dir, "config.json");
  }
}

TEST(ServerLimitsTest, FullQueueIsRefusedAtOnce) {
  ServerProcess server({"--model_dir=" + ModelDir(), "--threads=1", "--max_batch_tokens=400",
                        "--max_queue_tokens=800", "--max_batch_delay_ms=0"});
  ASSERT_TRUE(server.ok()) << server.log();
  std::atomic<int> exhausted{0}, ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 12; ++c) {
    clients.emplace_back([&] {
      auto stub = Stub(server.address());
      v1::AnswerResponse r;
      const grpc::Status s = Call(*stub, Request("kalo", Document(4, 70)), &r);
      if (s.ok()) ++ok;
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++exhausted;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_GT(exhausted.load(), 0);
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(ok.load() + exhausted.load(), 12);
}

TEST(ServerDrainTest, SigtermAnswersEveryAcceptedRequestThenExitsZero) {
  ServerProcess server({"--model_dir=" + ModelDir(), "--threads=2", "--drain_timeout_s=60"});
  ASSERT_TRUE(server.ok()) << server.log();
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      auto stub = Stub(server.address());
      v1::AnswerResponse r;
      return Call(*stub, Request("kalo", Document(100 + 10 * i, 150)), &r, 60000);
    }));
  }
  // SIGTERM only once the server counts all six as accepted (a fixed sleep raced under load: a
  // call not yet submitted was refused as draining).
  auto accepted = [&] {
    const std::string page = Scrape(server.metrics_port());
    return Sample(page, "longqa_inflight_requests") +
           Sample(page, "longqa_requests_total{code=\"OK\",method=\"Answer\",transport=\"grpc\"}");
  };
  for (int i = 0; i < 600 && accepted() < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(accepted(), 6);
  server.Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Draining: health says NOT_SERVING and new work is refused, while accepted work goes on.
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  grpc::ClientContext hc;
  hc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckResponse hr;
  ASSERT_TRUE(grpc::health::v1::Health::NewStub(channel)->Check(&hc, {}, &hr).ok());
  EXPECT_EQ(hr.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  grpc::ClientContext named_hc;
  named_hc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest named;
  named.set_service("longqa.v1.QuestionAnswering");
  ASSERT_TRUE(grpc::health::v1::Health::NewStub(channel)->Check(&named_hc, named, &hr).ok());
  EXPECT_EQ(hr.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Sample(Scrape(server.metrics_port()), "longqa_ready"), 0);
  v1::AnswerResponse late;
  EXPECT_EQ(Call(*Stub(server.address()), Request("kalo", "text"), &late, 5000).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(server.WaitExit(), 0) << server.log();
  for (auto& c : calls) {
    const grpc::Status s = c.get();
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_NE(server.log().find("drained"), std::string::npos) << server.log();
}

TEST(ServerDrainTest, AtTheDrainDeadlineWhatIsLeftIsAnsweredUnavailableAndTheExitCodeSaysSo) {
  // Hostile-clients item 4: work that outlasts --drain_timeout_s is cut short and said to be.
  // Six documents of ~2.5 s each here (2 threads, nothing else running). How many finish within
  // the 1 s of drain depends on the machine (CI once finished 2 of 4), so the test asserts what
  // holds on any: some are cut, every call gets an answer, and the log counts the cut ones.
  constexpr int kCalls = 6;
  ServerProcess server(
      WithBigDocuments({"--model_dir=" + ModelDir(), "--threads=2", "--drain_timeout_s=1"}));
  ASSERT_TRUE(server.ok()) << server.log();
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      v1::AnswerResponse r;
      return Call(*Stub(server.address()), Request("kalo", Document(800, 120)), &r, 120000);
    }));
  }
  // All accepted (tokenized and queued; one running) before the signal: on a slow or busy
  // machine (ASan) tokenizing ~500 KB documents outlasted a fixed 500 ms sleep, the calls
  // arrived after the drain began and were refused, and the drain had nothing left to cut.
  ASSERT_TRUE(UntilMetrics(server.metrics_port(), [](const std::string& page) {
    return Sample(page, "longqa_inflight_requests") >= kCalls;
  })) << server.log();
  const auto signalled = std::chrono::steady_clock::now();
  server.Signal(SIGTERM);
  EXPECT_EQ(server.WaitExit(), 3) << server.log();
  const double exit_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  // 1 s of drain, then the running batch stops within a group of windows (the layer was the unit
  // until session 27: ASan on a loaded CI machine then took 4.5 s; 1.6-2.1 s now).
  EXPECT_LT(exit_seconds, 4.0) << server.log();
  int unavailable = 0;
  for (auto& c : calls) {
    const grpc::Status s = c.get();  // every accepted call has an answer: none hangs or is lost
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) ++unavailable;
    EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  EXPECT_GE(unavailable, 1);
  // The log's count includes the running batch, which may still finish its last group of windows
  // and answer: at least as many as the clients saw refused, never more than were sent.
  std::smatch logged;
  const std::string log = server.log();
  ASSERT_TRUE(std::regex_search(log, logged,
                                std::regex("(\\d+) accepted request\\(s\\) answered UNAVAILABLE")))
      << log;
  EXPECT_GE(std::stoi(logged[1].str()), unavailable) << log;
  EXPECT_LE(std::stoi(logged[1].str()), kCalls) << log;
}

TEST(ServerHostileTest, WorkWhoseCallersLeftStopsAndAControlQuestionIsNotKeptWaiting) {
  // Hostile-clients item 2: requests abandoned (deadline) while the model runs them stop at the
  // next layer instead of holding the engine until they finish.
  ServerProcess server(WithBigDocuments({"--model_dir=" + ModelDir(), "--threads=2"}));
  ASSERT_TRUE(server.ok()) << server.log();
  auto stub = Stub(server.address());
  grpc::Status status;
  const SlowRequest big = OverASecondAlone(*stub);
  ASSERT_TRUE(big.status.ok()) << big.status.error_message();
  ASSERT_GT(big.seconds, 1.0);
  const double big_solo = big.seconds;
  std::vector<std::thread> abandoned;
  for (int i = 0; i < 2; ++i) {
    abandoned.emplace_back([&] {
      grpc::Status s;
      v1::AnswerResponse mine;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
      s = stub->Answer(&context, big.request, &mine);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // both have given up
  const double control = TimedCall(*stub, Request("kalo", Document(2, 10)), &status);
  for (auto& t : abandoned) t.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  // Before: the control question waited for both abandoned requests (about 2 × big_solo).
  EXPECT_LT(control, big_solo / 2) << "big request alone " << big_solo << " s";
  const std::string page = Scrape(server.metrics_port());
  EXPECT_GE(Sample(page, "longqa_dropped_requests_total{reason=\"deadline\"}"), 1) << page;
}

TEST(ServerHostileTest, AQueuedRequestWhoseCallerLeftLeavesTheQueueAtOnce) {
  // A request queued behind a long batch, whose caller cancels or whose deadline passes, leaves
  // the queue when gRPC reports it (OnCancel), not when the long batch ends: its tokens stop
  // counting against the queue and the caller's share at once.
  ServerProcess server(WithBigDocuments({"--model_dir=" + ModelDir(), "--threads=2"}));
  ASSERT_TRUE(server.ok()) << server.log();
  auto stub = Stub(server.address());
  // (running() is checked after the joins: an ASSERT here would leave threads running.)
  LongRequestRunning big(server);
  grpc::ClientContext cancelled_context;
  std::thread cancelled([&] {
    v1::AnswerResponse r;
    const grpc::Status s = stub->Answer(&cancelled_context, Request("kalo", Document(2, 10)), &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  });
  std::thread expiring([&] {
    v1::AnswerResponse r;
    const grpc::Status s = Call(*stub, Request("kalo", Document(2, 10)), &r, 700);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  });
  const bool both_queued = UntilMetrics(server.metrics_port(), [](const std::string& page) {
    return Sample(page, "longqa_queue_requests") == 2;
  });
  cancelled_context.TryCancel();
  const bool left = QueueEmpties(server.metrics_port());
  const bool big_still_running = !big.done();
  const std::string page = Scrape(server.metrics_port());
  cancelled.join();
  expiring.join();
  const grpc::Status big_status = big.Join();
  EXPECT_TRUE(big_status.ok()) << big_status.error_message();
  ASSERT_TRUE(big.running() && both_queued) << page;
  EXPECT_TRUE(left) << page;
  ASSERT_TRUE(big_still_running) << "the long request ended first: the test proved nothing";
  EXPECT_EQ(Sample(page, "longqa_dropped_requests_total{reason=\"cancelled\"}"), 1) << page;
  EXPECT_EQ(Sample(page, "longqa_dropped_requests_total{reason=\"deadline\"}"), 1) << page;
}

TEST(ServerHostileTest, ARequestOverTheMemoryBudgetIsRefusedBeforeItIsQueued) {
  // Admission by cost: the estimated activation memory of a request is checked before it is
  // queued; the refusal names the estimate and the flag, and the server goes on serving.
  ServerProcess server({"--model_dir=" + ModelDir(), "--threads=2", "--max_request_memory_mb=100",
                        "--max_document_tokens=1000000"});
  ASSERT_TRUE(server.ok()) << server.log();
  EXPECT_NE(server.log().find("activation memory budget"), std::string::npos) << server.log();
  auto stub = Stub(server.address());
  v1::AnswerResponse r;
  const auto start = std::chrono::steady_clock::now();
  // 1,600 paragraphs: since the layers write over their input (session 25) 400 of them are
  // estimated under 100 MiB.
  const grpc::Status refused = Call(*stub, Request("kalo", Document(1600, 120)), &r);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("MiB of activation memory"), std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("allows 100 MiB per request (--max_request_memory_mb)"),
            std::string::npos)
      << refused.error_message();
  std::cerr << "refused after " << seconds << " s: " << refused.error_message() << "\n";
  EXPECT_TRUE(Call(*stub, Request("kalo", Document(3, 20)), &r).ok());
  const std::string page = Scrape(server.metrics_port());
  EXPECT_EQ(Sample(page, "longqa_inference_duration_seconds_count"), 1) << page;
}

TEST(ServerHostileTest, AnotherCallersBacklogDelaysASmallQuestionByOneBatchAtMost) {
  // Fair queuing end to end: the backlog comes from [::1], the small question from 127.0.0.1
  // (two caller addresses). The question must not wait behind the backlog, nor share a batch
  // with one of its big documents: it is answered before the backlog's second request.
  ServerProcess server(
      WithBigDocuments({"--model_dir=" + ModelDir(), "--threads=2", "--listen=[::]:0"}));
  ASSERT_TRUE(server.ok()) << server.log();
  auto backlog_stub = Stub(server.ipv6_address());
  auto control_stub = Stub(server.address());
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  std::mutex mu;
  std::vector<double> backlog_done;
  std::vector<std::thread> backlog;
  for (int i = 0; i < 3; ++i) {
    backlog.emplace_back([&] {
      v1::AnswerResponse r;
      const grpc::Status s = Call(*backlog_stub, Request("kalo", Document(400, 120)), &r, 600000);
      EXPECT_TRUE(s.ok()) << s.error_message();
      std::lock_guard<std::mutex> lock(mu);
      backlog_done.push_back(since());
    });
  }
  // One big request runs, two wait (checked after the joins).
  const bool backlog_queued = UntilMetrics(server.metrics_port(), [](const std::string& page) {
    return Sample(page, "longqa_inflight_requests") == 3 &&
           Sample(page, "longqa_queue_requests") == 2;
  });
  v1::AnswerResponse r;
  const grpc::Status control = Call(*control_stub, Request("kalo", Document(2, 10)), &r, 600000);
  const double control_done = since();
  for (auto& t : backlog) t.join();
  ASSERT_TRUE(backlog_queued);
  ASSERT_TRUE(control.ok()) << control.error_message();
  std::sort(backlog_done.begin(), backlog_done.end());
  ASSERT_EQ(backlog_done.size(), 3u);
  const double one_big = backlog_done[1] - backlog_done[0];
  std::cerr << "backlog answered at " << backlog_done[0] << ", " << backlog_done[1] << ", "
            << backlog_done[2] << " s; the small question at " << control_done << " s\n";
  EXPECT_LT(control_done, backlog_done[1] - one_big / 2);
  const std::string page = Scrape(server.metrics_port());
  // Four batches: the first big document, the small question alone, then the other two.
  EXPECT_EQ(Sample(page, "longqa_batch_size_requests_count"), 4) << page;
}

TEST(ServerHostileTest, CallersAreTheirAddressWithoutThePort) {
  EXPECT_EQ(CallerOf("ipv4:10.0.0.7:53122"), "ipv4:10.0.0.7");
  EXPECT_EQ(CallerOf("ipv6:[::1]:53122"), "ipv6:[::1]");
  EXPECT_EQ(CallerOf("unix:/run/longqa.sock"), "unix:/run/longqa.sock");
  EXPECT_EQ(CallerOf(""), "");
}

TEST(ServerHostileTest, ManyOneLineParagraphsDoNotBlowMemory) {
  // Hostile-clients item 1: 4,000 one-line paragraphs (84 KB) drove the ETC demo model (now
  // models/scratch_etc) to 13 GiB; segments are now merged (etc.max_segments) and attention runs
  // in bounded chunks.
  const char* source = std::getenv("LONGQA_SOURCE_DIR");
  ServerProcess server(
      {"--model_dir=" + std::string(source ? source : ".") + "/models/scratch_etc", "--threads=2"});
  ASSERT_TRUE(server.ok()) << server.log();
  std::string text;
  for (int p = 0; p < 4000; ++p) {
    text += "Line " + std::to_string(p) + " of the river list.\n\n";
  }
  v1::AnswerResponse r;
  const grpc::Status status =
      Call(*Stub(server.address()), Request("Which line names the river?", text), &r, 300000);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const int64_t peak = server.PeakResidentBytes();
  ASSERT_GT(peak, 0);
  EXPECT_LT(peak, int64_t{2} << 30) << "peak resident " << (peak >> 20) << " MiB";
  std::cerr << "peak resident with 4,000 paragraphs: " << (peak >> 20) << " MiB\n";
}

// ---- the HTTP/JSON API (server/http_api.h) ----

std::string ToJson(const google::protobuf::Message& m) {
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &json).ok());
  return json;
}

TEST(HttpApiTest, AnswersAsGrpcDoesAndReportsModelAndReadiness) {
  ServerProcess server({"--model_dir=" + ModelDir(), "--http_listen=127.0.0.1:0"});
  ASSERT_TRUE(server.ok()) << server.log();
  ASSERT_GT(server.http_port(), 0) << server.log();
  httplib::Client http("127.0.0.1", server.http_port());
  http.set_read_timeout(60, 0);
  const v1::AnswerRequest request = Request("kalo ruso", Document(6, 30));
  const auto page = http.Post("/v1/answer", ToJson(request), "application/json");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200) << page->body;
  EXPECT_FALSE(page->get_header_value(kRequestIdMetadata).empty());
  v1::AnswerResponse over_http;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(page->body, &over_http).ok());
  // The canonical mapping's camelCase names, zero values included.
  EXPECT_NE(page->body.find("\"answerType\""), std::string::npos) << page->body;
  v1::AnswerResponse over_grpc;
  ASSERT_TRUE(Call(*Stub(server.address()), request, &over_grpc).ok());
  EXPECT_EQ(over_http.answer_type(), over_grpc.answer_type());
  EXPECT_EQ(ToJson(over_http.long_answer()), ToJson(over_grpc.long_answer()));
  ASSERT_EQ(over_http.short_answers_size(), over_grpc.short_answers_size());
  for (int i = 0; i < over_http.short_answers_size(); ++i) {
    EXPECT_EQ(ToJson(over_http.short_answers(i)), ToJson(over_grpc.short_answers(i)));
  }
  EXPECT_FLOAT_EQ(over_http.best_answer_score(), over_grpc.best_answer_score());
  EXPECT_FLOAT_EQ(over_http.no_answer_score(), over_grpc.no_answer_score());

  const auto model = http.Get("/v1/model");
  ASSERT_TRUE(model);
  ASSERT_EQ(model->status, 200);
  v1::ModelInfo info;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(model->body, &info).ok());
  EXPECT_EQ(info.layer_plan(), testing_support::SmallModelSpec().layers);
  EXPECT_EQ(http.Get("/healthz")->status, 200);
  EXPECT_EQ(http.Get("/readyz")->status, 200);
  EXPECT_TRUE(UntilMetrics(server.metrics_port(), [](const std::string& metrics) {
    return Sample(metrics,
                  "longqa_requests_total{code=\"OK\",method=\"Answer\",transport=\"http\"}") >= 1 &&
           Sample(
               metrics,
               "longqa_requests_total{code=\"OK\",method=\"GetModelInfo\",transport=\"http\"}") >=
               1;
  }));
}

TEST(HttpApiTest, ErrorsAreHttpCodesWithTheGrpcCodeAndMessageInJson) {
  ServerProcess server(
      {"--model_dir=" + ModelDir(), "--http_listen=127.0.0.1:0", "--max_document_bytes=1000"});
  ASSERT_TRUE(server.ok()) << server.log();
  httplib::Client http("127.0.0.1", server.http_port());
  http.set_read_timeout(60, 0);
  auto expect_error = [&](const std::string& body, int http_status, const std::string& code,
                          const std::string& words) {
    SCOPED_TRACE(body.substr(0, 80));
    const auto page = http.Post("/v1/answer", body, "application/json");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, http_status) << page->body;
    const nlohmann::json error = nlohmann::json::parse(page->body);
    EXPECT_EQ(error["code"], code);
    EXPECT_EQ(error["grpc_code"].get<int>() > 0, true);
    EXPECT_NE(error["message"].get<std::string>().find(words), std::string::npos) << page->body;
  };
  expect_error("not json", 400, "INVALID_ARGUMENT", "not a longqa.v1.AnswerRequest");
  expect_error(R"({"question": "kalo", "colour": "red"})", 400, "INVALID_ARGUMENT", "colour");
  expect_error(ToJson(Request("", "kalo mine")), 400, "INVALID_ARGUMENT", "question");
  expect_error(ToJson(Request("kalo", Document(20, 40))), 413, "RESOURCE_EXHAUSTED", "1000");
  // A deadline already spent: 504.
  httplib::Headers late = {{kHttpTimeoutHeader, "0"}};
  const auto page =
      http.Post("/v1/answer", late, ToJson(Request("kalo", "kalo mine")), "application/json");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 504) << page->body;
  // A deadline that is no number of milliseconds: 400, naming the header.
  for (const char* bad : {"soon", "-5", "1e3"}) {
    const auto refused = http.Post("/v1/answer", {{kHttpTimeoutHeader, bad}},
                                   ToJson(Request("kalo", "kalo mine")), "application/json");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400) << bad;
    EXPECT_NE(refused->body.find(kHttpTimeoutHeader), std::string::npos) << refused->body;
  }
  // A huge one is no deadline to speak of, not an overflow.
  const auto patient = http.Post("/v1/answer", {{kHttpTimeoutHeader, "9223372036854775807"}},
                                 ToJson(Request("kalo", "kalo mine")), "application/json");
  ASSERT_TRUE(patient);
  EXPECT_EQ(patient->status, 200) << patient->body;
  // Still serving.
  EXPECT_EQ(
      http.Post("/v1/answer", ToJson(Request("kalo", "kalo mine")), "application/json")->status,
      200);
}

TEST(HttpApiTest, ARequestWhoseClientClosedItsConnectionStopsAsACancelledGrpcCallDoes) {
  // cpp-httplib cannot say that a client left; server/http_peer asks the kernel. Two HTTP clients
  // give up on a long request (they close their connections): the running one stops at its next
  // group of windows, the queued one leaves the queue, and a control question does not wait for
  // either (before: about twice the long request's time alone).
  ServerProcess server(
      WithBigDocuments({"--model_dir=" + ModelDir(), "--threads=2", "--http_listen=127.0.0.1:0"}));
  ASSERT_TRUE(server.ok()) << server.log();
  ASSERT_GT(server.http_port(), 0) << server.log();
  auto stub = Stub(server.address());
  grpc::Status status;
  const SlowRequest big = OverASecondAlone(*stub);
  ASSERT_TRUE(big.status.ok()) << big.status.error_message();
  ASSERT_GT(big.seconds, 1.0);
  const double big_solo = big.seconds;
  const std::string body = ToJson(big.request);
  // Two clients post it; once the server has accepted both (one running, the other queued or in
  // the same batch) both close their connections, as a client that gives up does.
  std::vector<std::unique_ptr<httplib::Client>> clients;
  std::vector<std::thread> abandoned;
  for (int i = 0; i < 2; ++i) {
    clients.push_back(std::make_unique<httplib::Client>("127.0.0.1", server.http_port()));
    clients.back()->set_read_timeout(120, 0);
    abandoned.emplace_back([&body, client = clients.back().get()] {
      EXPECT_FALSE(client->Post("/v1/answer", body, "application/json"));
    });
  }
  const bool accepted = UntilMetrics(server.metrics_port(), [](const std::string& page) {
    return Sample(page, "longqa_inflight_requests") == 2;
  });
  for (auto& client : clients) client->stop();
  for (auto& t : abandoned) t.join();
  ASSERT_TRUE(accepted) << server.log();
  const double control = TimedCall(*stub, Request("kalo", Document(2, 10)), &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_LT(control, big_solo / 2) << "big request alone " << big_solo << " s";
  EXPECT_TRUE(UntilMetrics(server.metrics_port(), [](const std::string& page) {
    return Sample(page, "longqa_dropped_requests_total{reason=\"cancelled\"}") == 2 &&
           Sample(page,
                  "longqa_requests_total{code=\"CANCELLED\",method=\"Answer\","
                  "transport=\"http\"}") == 2;
  })) << Scrape(server.metrics_port());
}

TEST(HttpApiTest, AQueuedRequestWhoseClientClosedItsConnectionLeavesTheQueueAtOnce) {
  // As ServerHostileTest.AQueuedRequestWhoseCallerLeftLeavesTheQueueAtOnce for gRPC: behind a
  // long request, an HTTP request whose client closes its connection leaves the queue within
  // the worker's poll interval, not when the long batch ends.
  ServerProcess server(
      WithBigDocuments({"--model_dir=" + ModelDir(), "--threads=2", "--http_listen=127.0.0.1:0"}));
  ASSERT_TRUE(server.ok()) << server.log();
  LongRequestRunning big(server);
  httplib::Client http("127.0.0.1", server.http_port());
  http.set_read_timeout(600, 0);
  std::thread queued([&] {
    EXPECT_FALSE(
        http.Post("/v1/answer", ToJson(Request("kalo", Document(2, 10))), "application/json"));
  });
  const bool is_queued = UntilMetrics(server.metrics_port(), [](const std::string& page) {
    return Sample(page, "longqa_queue_requests") == 1;
  });
  http.stop();
  const bool left = QueueEmpties(server.metrics_port());
  const bool big_still_running = !big.done();
  const std::string page = Scrape(server.metrics_port());
  queued.join();
  const grpc::Status big_status = big.Join();
  EXPECT_TRUE(big_status.ok()) << big_status.error_message();
  ASSERT_TRUE(big.running() && is_queued) << page;
  EXPECT_TRUE(left) << page;
  ASSERT_TRUE(big_still_running) << "the long request ended first: the test proved nothing";
  EXPECT_EQ(Sample(page, "longqa_dropped_requests_total{reason=\"cancelled\"}"), 1) << page;
}

TEST(HttpApiTest, StatusMapping) {
  using Stage = QaService::Stage;
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::RESOURCE_EXHAUSTED, Stage::kAdmission), 413);
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::RESOURCE_EXHAUSTED, Stage::kQueue), 429);
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::RESOURCE_EXHAUSTED, Stage::kRun), 503);
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::UNAVAILABLE, Stage::kQueue), 503);
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::DEADLINE_EXCEEDED, Stage::kRun), 504);
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::UNAUTHENTICATED, Stage::kAdmission), 401);
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::INTERNAL, Stage::kRun), 500);
}

TEST(ServerAuthTest, BearerTokenIsRequiredButHealthStaysOpen) {
  const std::string token_file = (TempDir() / "token").string();
  std::ofstream(token_file) << "s3cret-token\n";
  ServerProcess server({"--model_dir=" + ModelDir(), "--auth_token_file=" + token_file,
                        "--http_listen=127.0.0.1:0"});
  ASSERT_TRUE(server.ok()) << server.log();
  // Over HTTP: the Authorization header; health and readiness stay open.
  httplib::Client http("127.0.0.1", server.http_port());
  http.set_read_timeout(60, 0);
  const std::string body = ToJson(Request("kalo", "text"));
  const auto refused = http.Post("/v1/answer", body, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401) << refused->body;
  EXPECT_EQ(http.Post("/v1/answer", {{"Authorization", "Bearer wrong"}}, body, "application/json")
                ->status,
            401);
  EXPECT_EQ(
      http.Post("/v1/answer", {{"Authorization", "Bearer s3cret-token"}}, body, "application/json")
          ->status,
      200);
  EXPECT_EQ(http.Get("/v1/model")->status, 401);
  EXPECT_EQ(http.Get("/readyz")->status, 200);
  auto stub = Stub(server.address());
  v1::AnswerResponse r;
  EXPECT_EQ(Call(*stub, Request("kalo", "text"), &r).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Call(*stub, Request("kalo", "text"), &r, 30000, "wrong").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Call(*stub, Request("kalo", "text"), &r, 30000, "s3cret-token").ok());
  auto health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext hc;
  grpc::health::v1::HealthCheckResponse hr;
  EXPECT_TRUE(health->Check(&hc, {}, &hr).ok());
}

TEST(ServerTlsTest, TlsAndMutualTls) {
  // The refused HTTPS handshakes below close sockets OpenSSL may still write to.
  signal(SIGPIPE, SIG_IGN);
  const testing_support::Certificates pki = testing_support::MakeCertificates(TempDir().string());
  ASSERT_FALSE(pki.ca.empty()) << "openssl failed to make test certificates";
  v1::AnswerResponse r;
  {
    ServerProcess server({"--model_dir=" + ModelDir(), "--tls_cert=" + pki.server_cert,
                          "--tls_key=" + pki.server_key, "--http_listen=127.0.0.1:0"});
    ASSERT_TRUE(server.ok()) << server.log();
    // The HTTP API speaks HTTPS with the same certificate, and only that.
    httplib::SSLClient https("127.0.0.1", server.http_port());
    https.set_ca_cert_path(pki.ca.c_str());
    https.enable_server_certificate_verification(true);
    const auto ready = https.Get("/readyz");
    ASSERT_TRUE(ready) << httplib::to_string(ready.error());
    EXPECT_EQ(ready->status, 200);
    httplib::Client plain("127.0.0.1", server.http_port());
    plain.set_read_timeout(3, 0);
    const auto refused_plain = plain.Get("/readyz");
    EXPECT_TRUE(!refused_plain || refused_plain->status != 200);
    grpc::SslCredentialsOptions trusted;
    trusted.pem_root_certs = testing_support::Slurp(pki.ca);
    EXPECT_TRUE(
        Call(*Stub(server.address(), grpc::SslCredentials(trusted)), Request("kalo", "text"), &r)
            .ok());
    EXPECT_FALSE(Call(*Stub(server.address()), Request("kalo", "text"), &r, 3000).ok());
  }
  {
    ServerProcess server({"--model_dir=" + ModelDir(), "--tls_cert=" + pki.server_cert,
                          "--tls_key=" + pki.server_key, "--tls_client_ca=" + pki.ca,
                          "--http_listen=127.0.0.1:0"});
    ASSERT_TRUE(server.ok()) << server.log();
    // Mutual TLS over HTTP too: a client certificate signed by the CA is let in, none is not.
    httplib::SSLClient with_client_cert("127.0.0.1", server.http_port(), pki.client_cert,
                                        pki.client_key);
    with_client_cert.set_ca_cert_path(pki.ca.c_str());
    with_client_cert.enable_server_certificate_verification(true);
    const auto admitted = with_client_cert.Get("/readyz");
    ASSERT_TRUE(admitted) << httplib::to_string(admitted.error());
    EXPECT_EQ(admitted->status, 200);
    httplib::SSLClient no_client_cert("127.0.0.1", server.http_port());
    no_client_cert.set_ca_cert_path(pki.ca.c_str());
    no_client_cert.enable_server_certificate_verification(true);
    EXPECT_FALSE(no_client_cert.Get("/readyz"));
    grpc::SslCredentialsOptions with_cert;
    with_cert.pem_root_certs = testing_support::Slurp(pki.ca);
    with_cert.pem_cert_chain = testing_support::Slurp(pki.client_cert);
    with_cert.pem_private_key = testing_support::Slurp(pki.client_key);
    EXPECT_TRUE(
        Call(*Stub(server.address(), grpc::SslCredentials(with_cert)), Request("kalo", "text"), &r)
            .ok());
    grpc::SslCredentialsOptions without_cert;
    without_cert.pem_root_certs = testing_support::Slurp(pki.ca);
    const grpc::Status refused = Call(*Stub(server.address(), grpc::SslCredentials(without_cert)),
                                      Request("kalo", "text"), &r, 3000);
    EXPECT_FALSE(refused.ok());
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);  // failed handshake
  }
}

}  // namespace
}  // namespace longqa
