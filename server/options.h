// ServerOptions: every knob of longqa-server, read once from the Abseil flags (defined in
// options.cc, documented by `longqa-server --help`) and validated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "model/encoders/precision.h"

namespace longqa {

struct ServerOptions {
  std::string model_dir = "models/demo";
  std::string listen = "0.0.0.0:50051";
  std::string metrics_listen = "0.0.0.0:9464";  // empty: no metrics endpoint
  std::string http_listen;                      // the HTTP/JSON API (http_api.h); empty: off
  std::string device = "cpu";
  std::optional<Precision> precision;  // unset: auto (model/precision_choice.h)
  int threads = 0;                     // intra-op threads; 0 = all CPUs
  // int8 answers closer than this (logits) are computed again in fp32 (EngineOptions); 0: off;
  // unset: the model folder's config.json int8_recheck_margin.
  std::optional<float> int8_recheck_margin = std::nullopt;
  // Batching: a batch closes at max_batch_tokens or max_batch_delay_ms after its oldest request.
  int64_t max_batch_tokens = 16384;
  int64_t max_batch_delay_ms = 5;
  int64_t max_queue_tokens = 1 << 20;  // queued tokens beyond this: RESOURCE_EXHAUSTED at once
  int64_t max_caller_queue_tokens = 1 << 18;  // one caller's (peer address's) share of the queue
  int64_t fair_quantum_tokens = 4096;         // deficit round-robin quantum (batcher.h)
  int workers = 1;                            // inference threads taking batches
  // Activation-memory budgets in MiB (server/memory_budget.h); 0 = derived from the machine.
  int64_t max_batch_memory_mb = 0;
  int64_t max_request_memory_mb = 0;
  // Limits.
  int64_t max_document_bytes = 8 << 20;
  int64_t max_document_tokens = 131072;
  bool reject_long_questions = false;  // else truncate to the model's max_question_tokens
  // Security.
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;  // mTLS when the CA is set
  std::string auth_token_file;  // when set: "authorization: Bearer <token>" required
  int64_t drain_timeout_s = 30;
  std::string log_level = "info";  // error, warning, info
};

// gRPC's receive limit: twice --max_document_bytes plus 1 MiB, so that a document over the byte
// limit sent in an AnswerStream gets its own RESOURCE_EXHAUSTED response and the stream goes on.
// Only a message beyond this ends the stream (gRPC's RESOURCE_EXHAUSTED, before the server sees
// it).
inline int64_t ReceiveLimitBytes(int64_t max_document_bytes) {
  return 2 * max_document_bytes + (1 << 20);
}

// The served model's name: the last component of --model_dir ("models/demo/" → "demo").
std::string ModelName(const std::string& model_dir);

// Reads the flags (after absl::ParseCommandLine) and validates them.
absl::StatusOr<ServerOptions> ServerOptionsFromFlags();
absl::Status ValidateServerOptions(const ServerOptions& options);

}  // namespace longqa
