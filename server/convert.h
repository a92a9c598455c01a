// Conversions between the public API's protobuf messages and the engine's plain C++ types.
// Protobuf stays in server/ and client/; model/ never sees it.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "longqa/v1/qa.pb.h"
#include "model/engine.h"
#include "server/batcher.h"

namespace longqa {

// Limits on AnswerOptions (documented in qa.proto).
inline constexpr uint32_t kMaxShortAnswerTokens = 512;
inline constexpr uint32_t kMaxNBest = 20;
inline constexpr uint32_t kDefaultShortAnswerTokens = 30;

// Validates the request's shape and options and builds the engine request (paragraph lists are
// joined with "\n\n"). INVALID_ARGUMENT names the field; documents over max_document_bytes are
// RESOURCE_EXHAUSTED. A request without options.null_threshold leaves it unset: the engine then
// applies the model's calibrated default.
absl::StatusOr<QaRequest> ToQaRequest(const v1::AnswerRequest& request, int64_t max_document_bytes);

// Fills a response from an answer (span texts are copied from the request's text).
void FillResponse(const QaAnswer& answer, const PreparedRequest& prepared, bool include_timing,
                  double tokenize_seconds, const WorkTiming& timing, double total_seconds,
                  v1::AnswerResponse* response);

// "no_answer", "yes", "no", "short", "long_only": the metrics label of an answer type.
std::string AnswerTypeLabel(AnswerType type);

}  // namespace longqa
