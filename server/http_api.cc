#include "server/http_api.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/http_page.h"
#include "server/http_peer.h"
#include "server/metrics_endpoint.h"

namespace longqa {
namespace {

using SteadyClock = std::chrono::steady_clock;

void SendError(httplib::Response& res, const grpc::Status& status, QaService::Stage stage) {
  res.status = HttpStatusFor(status.error_code(), stage);
  const nlohmann::json body = {{"code", StatusCodeName(status.error_code())},
                               {"grpc_code", static_cast<int>(status.error_code())},
                               {"message", status.error_message()}};
  res.set_content(body.dump(), "application/json");
}

void SendMessage(httplib::Response& res, const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  // Zero values too (answerType NO_ANSWER, a score of 0): clients read every field.
  options.always_print_primitive_fields = true;
  std::string json;
  const auto printed = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!printed.ok()) {
    return SendError(res, grpc::Status(grpc::StatusCode::INTERNAL, printed.ToString()),
                     QaService::Stage::kRun);
  }
  res.status = 200;
  res.set_content(json, "application/json");
}

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

}  // namespace

int HttpStatusFor(grpc::StatusCode code, QaService::Stage stage) {
  switch (code) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      // The request itself is too large; the queue is full; the batch ran out of memory.
      return stage == QaService::Stage::kAdmission ? 413
             : stage == QaService::Stage::kQueue   ? 429
                                                   : 503;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    case grpc::StatusCode::CANCELLED:
      return 499;  // the client closed the request (nginx's convention)
    case grpc::StatusCode::UNIMPLEMENTED:
      return 501;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    default:
      return 500;
  }
}

HttpApi::HttpApi(QaService* service, std::function<bool()> ready, int64_t max_body_bytes,
                 std::string model_dir, HttpTls tls)
    : service_(service),
      ready_(std::move(ready)),
      max_body_bytes_(max_body_bytes),
      model_dir_(std::move(model_dir)),
      tls_(std::move(tls)) {}

HttpApi::~HttpApi() { Stop(); }

absl::Status HttpApi::Start(const std::string& address) {
  if (auto host_port = SplitHostPort(address); !host_port.ok()) return host_port.status();
  if (tls_.cert_file.empty()) {
    http_ = std::make_unique<httplib::Server>();
  } else {
    // Debian's cpp-httplib is built with OpenSSL (CPPHTTPLIB_OPENSSL_SUPPORT in its .pc file).
    http_ = std::make_unique<httplib::SSLServer>(
        tls_.cert_file.c_str(), tls_.key_file.c_str(),
        tls_.client_ca_file.empty() ? nullptr : tls_.client_ca_file.c_str());
    if (!http_->is_valid()) {
      http_.reset();
      return absl::InvalidArgumentError(
          absl::StrCat("HTTP API: cannot use the TLS files ", tls_.cert_file, " / ", tls_.key_file,
                       tls_.client_ca_file.empty() ? "" : " / " + tls_.client_ca_file));
    }
  }
  http_->new_task_queue = [] { return new httplib::ThreadPool(kHttpWorkers); };
  http_->set_payload_max_length(static_cast<size_t>(max_body_bytes_));

  http_->Post("/v1/answer", [this](const httplib::Request& req, httplib::Response& res) {
    const auto start = SteadyClock::now();
    const std::string authorization = req.get_header_value("Authorization");
    v1::AnswerRequest request;
    google::protobuf::util::JsonParseOptions parse;
    parse.ignore_unknown_fields = false;
    const auto parsed = google::protobuf::util::JsonStringToMessage(req.body, &request, parse);
    if (!parsed.ok()) {
      grpc::Status status = service_->CheckAuth(authorization);  // strangers learn nothing
      if (status.ok()) {
        status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              absl::StrCat("the body is not a longqa.v1.AnswerRequest in JSON: ",
                                           parsed.message().as_string()));
      }
      service_->metrics()->RecordRequest("Answer", StatusCodeName(status.error_code()),
                                         SecondsSince(start), "http");
      return SendError(res, status, QaService::Stage::kAdmission);
    }
    res.set_header(kRequestIdMetadata, service_->EnsureRequestId(&request));
    CallInfo call;
    call.transport = "http";
    call.authorization = authorization;
    call.caller = req.remote_addr;
    if (req.has_header(kHttpTimeoutHeader)) {
      int64_t ms = 0;
      if (!absl::SimpleAtoi(req.get_header_value(kHttpTimeoutHeader), &ms) || ms < 0) {
        const grpc::Status bad(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat(kHttpTimeoutHeader, " must be a whole number of milliseconds, not '",
                         req.get_header_value(kHttpTimeoutHeader), "'"));
        service_->metrics()->RecordRequest("Answer", StatusCodeName(bad.error_code()),
                                           SecondsSince(start), "http");
        return SendError(res, bad, QaService::Stage::kAdmission);
      }
      // At most a week: a larger count would overflow the clock's arithmetic.
      ms = std::min<int64_t>(ms, int64_t{7} * 24 * 3600 * 1000);
      call.deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
    }
    // A client that closes its connection has left, as a cancelled gRPC call has: the batcher
    // drops its request from the queue, or stops it at the next group of windows. (The socket
    // stays this worker's while it waits below, so the descriptor cannot be another connection's
    // when the batcher asks; it asks no more once it answered.)
    const int fd = FindConnectionSocket(req.remote_addr, req.remote_port, req.local_port);
    if (fd >= 0) call.is_cancelled = [fd] { return PeerClosed(fd); };
    std::promise<void> answered;
    service_->Process(call, request, "Answer",
                      [&res, &answered](grpc::Status status, v1::AnswerResponse response,
                                        QaService::Stage stage) {
                        if (status.ok()) {
                          SendMessage(res, response);
                        } else {
                          SendError(res, status, stage);
                        }
                        answered.set_value();
                      });
    // The worker waits for the batcher's answer, looking at the connection meanwhile: once the
    // client has gone, a sweep answers its request if it is still queued (as gRPC's OnCancel
    // does), instead of when the next batch is formed.
    const std::future<void> done = answered.get_future();
    bool swept = false;
    while (done.wait_for(kHttpPeerPollInterval) != std::future_status::ready) {
      if (!swept && fd >= 0 && PeerClosed(fd)) {
        service_->batcher()->SweepNow();
        swept = true;
      }
    }
  });

  http_->Get("/v1/model", [this](const httplib::Request& req, httplib::Response& res) {
    const auto start = SteadyClock::now();
    const grpc::Status status = service_->CheckAuth(req.get_header_value("Authorization"));
    service_->metrics()->RecordRequest("GetModelInfo", StatusCodeName(status.error_code()),
                                       SecondsSince(start), "http");
    if (!status.ok()) return SendError(res, status, QaService::Stage::kAdmission);
    SendMessage(res, service_->ModelInfo());
  });
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kHttpPage, "text/html; charset=utf-8");
  });
  http_->Get("/v1/sample", [this](const httplib::Request& req, httplib::Response& res) {
    const grpc::Status status = service_->CheckAuth(req.get_header_value("Authorization"));
    if (!status.ok()) return SendError(res, status, QaService::Stage::kAdmission);
    std::ifstream text_file(model_dir_ + "/sample.txt", std::ios::binary);
    if (!text_file) {
      return SendError(res,
                       grpc::Status(grpc::StatusCode::NOT_FOUND, "this model has no sample.txt"),
                       QaService::Stage::kAdmission);
    }
    std::stringstream text;
    text << text_file.rdbuf();
    nlohmann::json sample = {{"text", text.str()}};
    std::ifstream questions(model_dir_ + "/sample_questions.json");
    const nlohmann::json list =
        nlohmann::json::parse(questions, nullptr, /*allow_exceptions=*/false);
    if (list.is_array() && !list.empty() && list[0].contains("question")) {
      sample["question"] = list[0]["question"];
    }
    // Invalid UTF-8 in a sample would make dump() throw: replaced, the page shows U+FFFD.
    res.set_content(sample.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json");
  });
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"live"})", "application/json");
  });
  http_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = ready_();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? R"({"status":"ready"})" : R"({"status":"not ready"})",
                    "application/json");
  });

  auto bound = ServeInBackground(*http_, address, "HTTP API", &thread_);
  if (!bound.ok()) {
    http_.reset();
    return bound.status();
  }
  port_ = *bound;
  return absl::OkStatus();
}

void HttpApi::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

}  // namespace longqa
