#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/version.h"
#include "model/compute_info.h"
#include "model/cpu_quota.h"
#include "server/memory_budget.h"

namespace longqa {
namespace {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(const ServerOptions& o) {
  if (o.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  LONGQA_ASSIGN_OR_RETURN(std::string cert, ReadFile(o.tls_cert_file, "--tls_cert"));
  LONGQA_ASSIGN_OR_RETURN(std::string key, ReadFile(o.tls_key_file, "--tls_key"));
  grpc::SslServerCredentialsOptions ssl(
      o.tls_client_ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                   : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!o.tls_client_ca_file.empty()) {
    LONGQA_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFile(o.tls_client_ca_file, "--tls_client_ca"));
  }
  ssl.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(ssl);
}

// A small request through the whole engine: the model must answer before health says SERVING.
absl::Status WarmUp(const Engine& engine) {
  QaRequest r;
  r.question = "warm up question";
  r.text = "A first paragraph for the warm-up.\n\nA second paragraph.";
  return engine.Answer(r).status();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LongqaServer>> LongqaServer::Start(const ServerOptions& options) {
  LONGQA_RETURN_IF_ERROR(ValidateServerOptions(options));
  std::unique_ptr<LongqaServer> s(new LongqaServer());
  s->options_ = options;
  // Metrics come up first, with longqa_ready 0: a model that loads slowly or never is visible to
  // Prometheus (alert LongqaModelNeverReady), not just absent.
  s->metrics_ = std::make_unique<ServerMetrics>();
  s->metrics_->SetQueueLimit(options.max_queue_tokens);
  if (!options.metrics_listen.empty()) {
    ServerMetrics* metrics = s->metrics_.get();
    s->metrics_endpoint_ = std::make_unique<MetricsEndpoint>(
        metrics->registry(), [metrics] { metrics->RefreshProcessGauges(); });
    LONGQA_RETURN_IF_ERROR(s->metrics_endpoint_->Start(options.metrics_listen));
  }
  // Each worker runs its batches on its share of the CPUs this process may use.
  const CpuQuota cpus = ThisProcessCpuQuota();
  const int threads = ThreadsPerWorker(options.threads, options.workers, cpus.usable_cpus);
  LONGQA_ASSIGN_OR_RETURN(
      s->engine_,
      Engine::LoadFromDir(options.model_dir, {threads, options.device, options.precision,
                                              options.int8_recheck_margin}));
  LONGQA_RETURN_IF_ERROR(WarmUp(*s->engine_));
  // What the math runs on; a BLAS forced below the CPU's speed is said every start.
  const ComputeInfo compute = DescribeCompute();
  if (options.log_level == "info") {
    std::cerr << "longqa-server: " << ComputeInfoLine(compute) << "\n"
              << "longqa-server: " << options.workers << " worker(s) x " << threads
              << " thread(s) on " << DescribeCpuQuota(cpus) << "\n"
              << "longqa-server: precision " << PrecisionName(s->engine_->precision())
              << (options.precision ? " (--precision)"
                                    : " (auto: " + s->engine_->precision_reason() + ")")
              << "\n";
    if (!s->engine_->int8_calibration().empty()) {
      std::cerr << "longqa-server: int8 " << s->engine_->int8_calibration() << "\n";
      if (s->engine_->int8_recheck_margin() > 0.0f) {
        std::cerr << "longqa-server: int8 answers within " << s->engine_->int8_recheck_margin()
                  << " logits of another are computed again in fp32\n";
      }
    }
  }
  if (!compute.warning.empty()) std::cerr << "longqa-server: WARNING: " << compute.warning << "\n";
  if (const std::string w = OversubscriptionWarning(options.workers, threads, cpus.usable_cpus);
      !w.empty()) {
    std::cerr << "longqa-server: WARNING: " << w << "\n";
  }
  if (s->engine_->precision() == Precision::kBf16 && s->engine_->device().is_cpu()) {
    const std::string bf16 = Bf16Warning(compute.isa);
    if (!bf16.empty()) std::cerr << "longqa-server: WARNING: " << bf16 << "\n";
  }
  // A converted checkpoint without some heads serves random ones: say so, every start.
  for (const std::string& head : s->engine_->config().untrained_heads) {
    std::cerr << "longqa-server: WARNING: head '" << head << "' of " << options.model_dir
              << " is untrained (initialised at random by the importer): its scores mean "
                 "nothing until the model is fine-tuned\n";
  }
  std::string token;
  if (!options.auth_token_file.empty()) {
    LONGQA_ASSIGN_OR_RETURN(token, ReadFile(options.auth_token_file, "--auth_token_file"));
    token = std::string(absl::StripAsciiWhitespace(token));
    if (token.empty()) return absl::InvalidArgumentError("--auth_token_file holds no token");
  }
  LONGQA_ASSIGN_OR_RETURN(auto credentials, MakeCredentials(options));

  const ModelConfig& c = s->engine_->config();
  s->metrics_->SetModelInfo(ModelName(options.model_dir), ArchitectureName(c.architecture),
                            s->engine_->device().str(), kVersion);
  BatcherOptions batcher_options;
  batcher_options.max_batch_tokens = options.max_batch_tokens;
  batcher_options.max_batch_delay_ms = options.max_batch_delay_ms;
  batcher_options.max_queue_tokens = options.max_queue_tokens;
  batcher_options.max_caller_queue_tokens = options.max_caller_queue_tokens;
  batcher_options.fair_quantum_tokens = options.fair_quantum_tokens;
  batcher_options.workers = options.workers;
  const int64_t usable = UsableMemoryBytes();
  const MemoryBudget budget = ResolveMemoryBudget(
      options.max_batch_memory_mb, options.max_request_memory_mb, options.workers, usable);
  batcher_options.max_batch_memory_bytes = budget.batch_bytes;
  if (options.log_level == "info") {
    std::cerr << "longqa-server: activation memory budget " << (budget.batch_bytes >> 20)
              << " MiB per batch, " << (budget.request_bytes >> 20) << " MiB per request ("
              << (usable > 0 ? std::to_string(usable >> 20) + " MiB usable" : "usable unknown")
              << ")\n";
  }
  const Engine* engine = s->engine_.get();
  FreeMemoryReleaser* releaser = &s->releaser_;
  s->batcher_ = std::make_unique<Batcher>(
      [engine, releaser](const std::vector<const PreparedRequest*>& batch,
                         Engine::BatchTiming* timing, const StopCheck& stop) {
        auto result = engine->Run(batch, timing, stop);
        releaser->MaybeRelease();
        return result;
      },
      batcher_options, s->metrics_.get());
  s->service_ = std::make_unique<QaService>(*s->engine_, s->batcher_.get(), s->metrics_.get(),
                                            options, token, budget.request_bytes);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &s->grpc_port_);
  builder.RegisterService(s->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(
      ReceiveLimitBytes(options.max_document_bytes), std::numeric_limits<int>::max())));
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->grpc_port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  // Health answers for "" (the whole server) and for the service's own name.
  s->server_->GetHealthCheckService()->SetServingStatus(v1::QuestionAnswering::service_full_name(),
                                                        true);
  s->server_->GetHealthCheckService()->SetServingStatus(true);
  if (!options.http_listen.empty()) {
    s->http_api_ = std::make_unique<HttpApi>(
        s->service_.get(), [ready = &s->ready_] { return ready->load(); },
        ReceiveLimitBytes(options.max_document_bytes), options.model_dir,
        HttpTls{options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file});
    LONGQA_RETURN_IF_ERROR(s->http_api_->Start(options.http_listen));
  }
  s->ready_ = true;
  s->metrics_->SetReady(true);
  return s;
}

DrainResult LongqaServer::Drain() {
  if (drained_) return {};
  drained_ = true;
  server_->GetHealthCheckService()->SetServingStatus(false);
  ready_ = false;
  metrics_->SetReady(false);
  const DrainResult result = batcher_->Drain(std::chrono::seconds(options_.drain_timeout_s));
  // Every accepted call has its answer now; a short deadline lets gRPC flush them.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  server_->Wait();
  if (http_api_) http_api_->Stop();
  if (metrics_endpoint_) metrics_endpoint_->Stop();
  return result;
}

LongqaServer::~LongqaServer() {
  if (server_ && !drained_) Drain();
}

}  // namespace longqa
