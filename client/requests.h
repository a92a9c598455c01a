// JSON <-> API messages for the CLI (batch input/output lines, ask --json), and the runner that
// sends many requests with bounded concurrency, retries with backoff on UNAVAILABLE and
// RESOURCE_EXHAUSTED, and a progress bar on a terminal.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/connection.h"
#include "longqa/v1/qa.grpc.pb.h"

namespace longqa::cli {

// The JSON values of a JSONL file with their line numbers (blank lines skipped). A line that is
// not JSON is a UsageError naming it, or, when `bad_lines` is given, goes there as (line number,
// message) and reading goes on.
std::vector<std::pair<int64_t, nlohmann::json>> ReadJsonLines(
    const std::string& path, const std::string& flag,
    std::vector<std::pair<int64_t, std::string>>* bad_lines = nullptr);

// A batch/eval input line: {"id", "question", "document": text} or {"paragraphs": [...]}.
// Throws UsageError naming the line on a malformed one.
v1::AnswerRequest RequestFromJson(const nlohmann::json& line, int64_t line_number);
nlohmann::json ResponseToJson(const v1::AnswerResponse& response);
std::string AnswerTypeName(int type);

struct RunResult {
  grpc::Status status;
  v1::AnswerResponse response;
  int attempts = 0;
  double seconds = 0;  // of the last attempt
};

struct RunnerOptions {
  int concurrency = 4;
  int max_attempts = 5;   // retries on UNAVAILABLE / RESOURCE_EXHAUSTED, exponential backoff
  bool progress = false;  // a progress bar on stderr
};

// Answers every request; results are in input order.
std::vector<RunResult> RunAll(const Connection& connection,
                              const std::vector<v1::AnswerRequest>& requests,
                              const RunnerOptions& options);

}  // namespace longqa::cli
