// longqa batch: a JSONL file of questions through the server, answers as JSONL.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include "client/commands.h"
#include "client/connection.h"
#include "client/requests.h"

namespace longqa::cli {

namespace {

// An input line: a request to send, or why the line cannot be one.
struct InputLine {
  int64_t number = 0;
  v1::AnswerRequest request;
  std::string error;  // non-empty: malformed, not sent
};

std::vector<InputLine> ReadInput(const std::string& path) {
  std::vector<std::pair<int64_t, std::string>> not_json;
  std::vector<InputLine> lines;
  for (const auto& [n, j] : ReadJsonLines(path, "--input", &not_json)) {
    InputLine line;
    line.number = n;
    try {
      line.request = RequestFromJson(j, n);
      if (line.request.request_id().empty()) line.request.set_request_id(std::to_string(n));
    } catch (const UsageError& e) {
      line.error = e.what();
    }
    lines.push_back(std::move(line));
  }
  for (const auto& [n, why] : not_json) lines.push_back({n, {}, why});
  std::sort(lines.begin(), lines.end(),
            [](const InputLine& a, const InputLine& b) { return a.number < b.number; });
  return lines;
}

nlohmann::json ErrorLine(const std::string& id, int64_t line, int code, const std::string& why) {
  return {{"id", id}, {"line", line}, {"error", {{"code", code}, {"message", why}}}};
}

}  // namespace

int RunBatch(int argc, char** argv) {
  std::set<std::string> known = ConnectionFlags();
  known.insert({"input", "output", "concurrency", "max_attempts"});
  const Args args(argc, argv, 2, known, {"no_progress"});
  if (!args.Has("input") || !args.Has("output"))
    throw UsageError("batch needs --input and --output");
  std::vector<InputLine> input = ReadInput(args.Get("input"));
  std::vector<v1::AnswerRequest> requests;  // moved out: documents may be large
  for (InputLine& line : input) {
    if (line.error.empty()) requests.push_back(std::move(line.request));
  }
  const Connection connection(args);
  RunnerOptions options;
  options.concurrency = static_cast<int>(args.GetInt("concurrency", 4, 1));
  options.max_attempts = static_cast<int>(args.GetInt("max_attempts", 5, 1));
  options.progress = !args.GetBool("no_progress") && isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<RunResult> results = RunAll(connection, requests, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::ofstream out(args.Get("output"));
  if (!out) throw UsageError("cannot write --output " + args.Get("output"));
  // One output line per input line, in input order; a malformed line gets an INVALID_ARGUMENT
  // error naming it, and the others run all the same.
  std::map<std::string, int> errors;
  int64_t ok = 0, retried = 0, malformed = 0;
  bool connection_failed = false;
  size_t next = 0;
  for (const InputLine& line : input) {
    if (!line.error.empty()) {
      ++malformed;
      ++errors[std::to_string(grpc::StatusCode::INVALID_ARGUMENT)];
      out << ErrorLine(std::to_string(line.number), line.number, grpc::StatusCode::INVALID_ARGUMENT,
                       line.error)
                 .dump()
          << "\n";
      continue;
    }
    const RunResult& r = results[next];
    const v1::AnswerRequest& request = requests[next++];
    retried += r.attempts > 1;
    if (r.status.ok()) {
      ++ok;
      out << ResponseToJson(r.response).dump() << "\n";
    } else {
      ++errors[std::to_string(r.status.error_code())];
      connection_failed |= r.status.error_code() == grpc::StatusCode::UNAVAILABLE;
      out << ErrorLine(request.request_id(), line.number, r.status.error_code(),
                       r.status.error_message())
                 .dump()
          << "\n";
    }
  }
  std::fprintf(stderr,
               "batch: %lld answered, %lld failed (%lld malformed input lines), %lld retried, in "
               "%.1f s (%.1f req/s)\n",
               static_cast<long long>(ok), static_cast<long long>(input.size() - ok),
               static_cast<long long>(malformed), static_cast<long long>(retried), seconds,
               seconds > 0 ? results.size() / seconds : 0.0);
  for (const auto& [code, count] : errors)
    std::fprintf(stderr, "  code %s: %d\n", code.c_str(), count);
  if (ok == static_cast<int64_t>(input.size())) return kExitOk;
  return connection_failed && ok == 0 ? kExitConnection : kExitServer;
}

}  // namespace longqa::cli
