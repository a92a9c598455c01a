// longqa batch: a JSONL file of questions through the server, answers as JSONL.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>

#include "client/commands.h"
#include "client/connection.h"
#include "client/requests.h"

namespace longqa::cli {

std::vector<v1::AnswerRequest> ReadRequests(const std::string& path) {
  std::vector<v1::AnswerRequest> requests;
  for (const auto& [n, j] : ReadJsonLines(path, "--input")) {
    requests.push_back(RequestFromJson(j, n));
    if (requests.back().request_id().empty()) requests.back().set_request_id(std::to_string(n));
  }
  return requests;
}

int RunBatch(int argc, char** argv) {
  std::set<std::string> known = ConnectionFlags();
  known.insert({"input", "output", "concurrency", "max_attempts"});
  const Args args(argc, argv, 2, known, {"no_progress"});
  if (!args.Has("input") || !args.Has("output"))
    throw UsageError("batch needs --input and --output");
  const std::vector<v1::AnswerRequest> requests = ReadRequests(args.Get("input"));
  const Connection connection(args);
  RunnerOptions options;
  options.concurrency = static_cast<int>(args.GetInt("concurrency", 4));
  options.max_attempts = static_cast<int>(args.GetInt("max_attempts", 5));
  options.progress = !args.GetBool("no_progress") && isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<RunResult> results = RunAll(connection, requests, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::ofstream out(args.Get("output"));
  if (!out) throw UsageError("cannot write --output " + args.Get("output"));
  std::map<std::string, int> errors;
  int64_t ok = 0, retried = 0;
  bool connection_failed = false;
  for (size_t i = 0; i < results.size(); ++i) {
    const RunResult& r = results[i];
    retried += r.attempts > 1;
    if (r.status.ok()) {
      ++ok;
      out << ResponseToJson(r.response).dump() << "\n";
    } else {
      ++errors[std::to_string(r.status.error_code())];
      connection_failed |= r.status.error_code() == grpc::StatusCode::UNAVAILABLE;
      out << nlohmann::json{{"id", requests[i].request_id()},
                            {"error",
                             {{"code", r.status.error_code()},
                              {"message", r.status.error_message()}}}}
                 .dump()
          << "\n";
    }
  }
  std::fprintf(stderr, "batch: %lld answered, %zu failed, %lld retried, in %.1f s (%.1f req/s)\n",
               static_cast<long long>(ok), results.size() - ok, static_cast<long long>(retried),
               seconds, seconds > 0 ? results.size() / seconds : 0.0);
  for (const auto& [code, count] : errors)
    std::fprintf(stderr, "  code %s: %d\n", code.c_str(), count);
  if (ok == static_cast<int64_t>(results.size())) return kExitOk;
  return connection_failed && ok == 0 ? kExitConnection : kExitServer;
}

}  // namespace longqa::cli
