// JSONL files of requests, as the centroid builder's corpus and the trainer's gold examples hold
// them: one JSON object a line, with "question" and either "paragraphs" (joined with "\n\n", the
// API's layout) or "document".
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "model/engine.h"

namespace longqa {

// The request of one line. Throws nlohmann::json::exception naming a missing or mistyped field.
QaRequest QaRequestFromJson(const nlohmann::json& line);

// Calls `visit` on every non-blank line of `path`, the first `limit` of them when limit > 0.
// Errors: NotFound when the file cannot be read; an error of `visit` becomes InvalidArgument
// "<path> line <n>: <message>"; a file without a line is InvalidArgument "<path> holds no
// example".
absl::Status ForEachJsonLine(const std::string& path, int64_t limit,
                             const std::function<absl::Status(const std::string& line)>& visit);

}  // namespace longqa
