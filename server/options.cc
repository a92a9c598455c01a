#include "server/options.h"

#include <cmath>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, model_dir, "models/demo",
          "Model folder: config.json, model.safetensors, spm.model");
ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address, host:port (0.0.0.0:50051 for every interface)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics listen address, host:port; empty disables it");
ABSL_FLAG(std::string, http_listen, "",
          "host:port of the HTTP/JSON API (POST /v1/answer, GET /v1/model, /healthz, /readyz: "
          "docs/http-api.md); empty (the default) disables it");
ABSL_FLAG(std::string, device, "cpu", "Inference device: cpu or cuda[:N]");
ABSL_FLAG(std::string, precision, "auto",
          "Encoder arithmetic: auto (the model folder's default_precision where the device runs "
          "it natively, else fp32; it may list several, e.g. bf16,int8; docs/model-format.md); "
          "fp32; bf16 (dense layers and attention GEMMs in bf16, residuals and LayerNorm in fp32: "
          "fast on CPUs with AVX512_BF16 or AMX, and on GPUs); or int8 (CPU: dense layers with "
          "int8 weights and dynamically quantised activations); docs/perf/README.md");
ABSL_FLAG(std::optional<double>, int8_recheck_margin, std::nullopt,
          "With --precision=int8 (or auto choosing it): an answer whose closest call (answer type, "
          "paragraph or short span against its runner-up) is within this many logits is computed "
          "again in fp32, so int8's rounding cannot tip it (docs/perf/README.md); 0: off; unset: "
          "the model folder's int8_recheck_margin (docs/model-format.md)");
ABSL_FLAG(int, threads, 0, "Intra-op CPU threads for the model; 0 = all CPUs");
ABSL_FLAG(int64_t, max_batch_tokens, 16384,
          "A batch closes when its requests hold this many tokens (question + document)");
ABSL_FLAG(int64_t, max_batch_delay_ms, 5,
          "...or this many milliseconds after its oldest request arrived, whichever first");
ABSL_FLAG(int64_t, max_queue_tokens, 1 << 20,
          "Tokens allowed to wait in the queue; more gets RESOURCE_EXHAUSTED at once");
ABSL_FLAG(int64_t, max_caller_queue_tokens, 1 << 18,
          "Tokens one caller (client address) may have waiting; more gets RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, fair_quantum_tokens, 4096,
          "Fair queuing: tokens each waiting caller may add to a forming batch per turn");
ABSL_FLAG(int, workers, 1, "Inference worker threads taking batches from the queue");
ABSL_FLAG(int64_t, max_batch_memory_mb, 0,
          "Estimated activation memory a batch may take, MiB; 0 = half of the memory this "
          "process may use (cgroup limit or MemTotal) divided by --workers");
ABSL_FLAG(int64_t, max_request_memory_mb, 0,
          "Estimated activation memory one request may take, MiB; more gets RESOURCE_EXHAUSTED "
          "before it is queued; 0 = the batch budget");
ABSL_FLAG(int64_t, max_document_bytes, 8 << 20, "Largest document accepted, in bytes");
ABSL_FLAG(int64_t, max_document_tokens, 131072, "Largest document accepted, in tokens");
ABSL_FLAG(std::string, question_overflow, "truncate",
          "Questions over the model's max_question_tokens: truncate (reported in the response) "
          "or reject (INVALID_ARGUMENT)");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate chain; enables TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; clients must present a certificate it signed (mTLS)");
ABSL_FLAG(std::string, auth_token_file, "",
          "File holding a bearer token; requests must send 'authorization: Bearer <token>' "
          "(health and metrics stay open)");
ABSL_FLAG(int64_t, drain_timeout_s, 30,
          "On SIGTERM/SIGINT: seconds to finish queued and in-flight work; what is left then is "
          "answered UNAVAILABLE and the exit code is 3");
ABSL_FLAG(std::string, log_level, "info",
          "error, warning or info: at info the server reports start-up and drain on stderr");

namespace longqa {

std::string ModelName(const std::string& model_dir) {
  std::string name = model_dir;
  while (!name.empty() && name.back() == '/') name.pop_back();
  return name.substr(name.find_last_of('/') + 1);
}

absl::Status ValidateServerOptions(const ServerOptions& o) {
  auto bad = [](const char* flag, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " ", why));
  };
  if (o.model_dir.empty()) return bad("model_dir", "is required");
  if (o.max_batch_tokens <= 0) return bad("max_batch_tokens", "must be positive");
  if (o.max_batch_delay_ms < 0) return bad("max_batch_delay_ms", "must not be negative");
  if (o.max_queue_tokens < o.max_batch_tokens) {
    return bad("max_queue_tokens", "must be at least --max_batch_tokens");
  }
  if (o.workers <= 0) return bad("workers", "must be positive");
  if (o.threads < 0) return bad("threads", "must not be negative");
  if (o.int8_recheck_margin &&
      (!(*o.int8_recheck_margin >= 0.0f) || std::isinf(*o.int8_recheck_margin))) {
    return bad("int8_recheck_margin", "must be a finite number of logits >= 0");
  }
  if (o.max_document_bytes <= 0) return bad("max_document_bytes", "must be positive");
  if (o.max_document_tokens <= 0) return bad("max_document_tokens", "must be positive");
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return bad("tls_cert", "and --tls_key must be given together");
  }
  if (!o.tls_client_ca_file.empty() && o.tls_cert_file.empty()) {
    return bad("tls_client_ca", "needs --tls_cert and --tls_key (mTLS is TLS plus client certs)");
  }
  if (o.max_caller_queue_tokens <= 0) return bad("max_caller_queue_tokens", "must be positive");
  if (o.fair_quantum_tokens <= 0) return bad("fair_quantum_tokens", "must be positive");
  if (o.max_batch_memory_mb < 0) return bad("max_batch_memory_mb", "must not be negative");
  if (o.max_request_memory_mb < 0) return bad("max_request_memory_mb", "must not be negative");
  if (o.drain_timeout_s < 0) return bad("drain_timeout_s", "must not be negative");
  if (o.log_level != "error" && o.log_level != "warning" && o.log_level != "info") {
    return bad("log_level", "must be error, warning or info");
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerOptions> ServerOptionsFromFlags() {
  ServerOptions o;
  o.model_dir = absl::GetFlag(FLAGS_model_dir);
  o.listen = absl::GetFlag(FLAGS_listen);
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  o.http_listen = absl::GetFlag(FLAGS_http_listen);
  o.device = absl::GetFlag(FLAGS_device);
  const std::string precision = absl::GetFlag(FLAGS_precision);
  if (precision != "auto") {
    const auto parsed = ParsePrecision(precision);
    if (!parsed) return absl::InvalidArgumentError("--precision must be auto, fp32, bf16 or int8");
    o.precision = *parsed;
  }
  o.threads = absl::GetFlag(FLAGS_threads);
  if (const std::optional<double> margin = absl::GetFlag(FLAGS_int8_recheck_margin)) {
    o.int8_recheck_margin = static_cast<float>(*margin);
  }
  o.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  o.max_batch_delay_ms = absl::GetFlag(FLAGS_max_batch_delay_ms);
  o.max_queue_tokens = absl::GetFlag(FLAGS_max_queue_tokens);
  o.max_caller_queue_tokens = absl::GetFlag(FLAGS_max_caller_queue_tokens);
  o.fair_quantum_tokens = absl::GetFlag(FLAGS_fair_quantum_tokens);
  o.workers = absl::GetFlag(FLAGS_workers);
  o.max_batch_memory_mb = absl::GetFlag(FLAGS_max_batch_memory_mb);
  o.max_request_memory_mb = absl::GetFlag(FLAGS_max_request_memory_mb);
  o.max_document_bytes = absl::GetFlag(FLAGS_max_document_bytes);
  o.max_document_tokens = absl::GetFlag(FLAGS_max_document_tokens);
  const std::string overflow = absl::GetFlag(FLAGS_question_overflow);
  if (overflow != "truncate" && overflow != "reject") {
    return absl::InvalidArgumentError("--question_overflow must be truncate or reject");
  }
  o.reject_long_questions = overflow == "reject";
  o.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  o.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  o.drain_timeout_s = absl::GetFlag(FLAGS_drain_timeout_s);
  o.log_level = absl::GetFlag(FLAGS_log_level);
  if (absl::Status s = ValidateServerOptions(o); !s.ok()) return s;
  return o;
}

}  // namespace longqa
