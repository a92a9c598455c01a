#include "client/requests.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

namespace longqa::cli {

std::vector<std::pair<int64_t, nlohmann::json>> ReadJsonLines(
    const std::string& path, const std::string& flag,
    std::vector<std::pair<int64_t, std::string>>* bad_lines) {
  std::istringstream in(ReadFileOrThrow(path, flag));
  std::vector<std::pair<int64_t, nlohmann::json>> lines;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      lines.emplace_back(n, nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      const std::string why = flag + " line " + std::to_string(n) + ": not JSON: " + e.what();
      if (bad_lines == nullptr) throw UsageError(why);
      bad_lines->emplace_back(n, why);
    }
  }
  return lines;
}

v1::AnswerRequest RequestFromJson(const nlohmann::json& line, int64_t line_number) {
  auto bad = [line_number](const std::string& why) {
    return UsageError("input line " + std::to_string(line_number) + ": " + why);
  };
  if (!line.is_object()) throw bad("not a JSON object");
  v1::AnswerRequest r;
  if (line.contains("id")) {
    r.set_request_id(line["id"].is_string() ? line["id"].get<std::string>() : line["id"].dump());
  } else if (line.contains("example_id")) {
    const auto& id = line["example_id"];
    r.set_request_id(id.is_string() ? id.get<std::string>() : id.dump());
  }
  if (!line.contains("question") || !line["question"].is_string()) throw bad("needs \"question\"");
  r.set_question(line["question"].get<std::string>());
  if (line.contains("document") && line["document"].is_string()) {
    r.mutable_document()->set_text(line["document"].get<std::string>());
  } else if (line.contains("paragraphs") && line["paragraphs"].is_array()) {
    for (const auto& p : line["paragraphs"]) {
      if (!p.is_string()) throw bad("\"paragraphs\" must hold strings");
      r.mutable_document()->mutable_paragraphs()->add_items(p.get<std::string>());
    }
  } else {
    throw bad("needs \"document\" (text) or \"paragraphs\" (list of strings)");
  }
  return r;
}

std::string AnswerTypeName(int type) {
  static const char* kNames[] = {"NO_ANSWER", "YES", "NO", "SHORT", "LONG_ONLY"};
  return type >= 0 && type < 5 ? kNames[type] : "UNKNOWN";
}

namespace {
nlohmann::json SpanToJson(const v1::Span& s) {
  return {{"paragraph_index", s.paragraph_index()},
          {"byte_begin", s.byte_begin()},
          {"byte_end", s.byte_end()},
          {"text", s.text()},
          {"score", s.score()}};
}
}  // namespace

nlohmann::json ResponseToJson(const v1::AnswerResponse& r) {
  nlohmann::json j = {{"id", r.request_id()},
                      {"answer_type", AnswerTypeName(r.answer_type())},
                      {"no_answer_score", r.no_answer_score()},
                      {"best_answer_score", r.best_answer_score()},
                      {"question_truncated", r.question_truncated()}};
  if (r.has_long_answer()) j["long_answer"] = SpanToJson(r.long_answer());
  j["short_answers"] = nlohmann::json::array();
  for (const auto& s : r.short_answers()) j["short_answers"].push_back(SpanToJson(s));
  j["answer_type_probabilities"] = std::vector<float>(r.answer_type_probabilities().begin(),
                                                      r.answer_type_probabilities().end());
  j["usage"] = {{"question_tokens", r.usage().question_tokens()},
                {"document_tokens", r.usage().document_tokens()},
                {"windows", r.usage().windows()}};
  if (r.has_timing()) {
    j["timing"] = {{"queue_seconds", r.timing().queue_seconds()},
                   {"tokenize_seconds", r.timing().tokenize_seconds()},
                   {"inference_seconds", r.timing().inference_seconds()},
                   {"decode_seconds", r.timing().decode_seconds()},
                   {"total_seconds", r.timing().total_seconds()},
                   {"batch_requests", r.timing().batch_requests()}};
  }
  return j;
}

std::vector<RunResult> RunAll(const Connection& connection,
                              const std::vector<v1::AnswerRequest>& requests,
                              const RunnerOptions& options) {
  std::vector<RunResult> results(requests.size());
  std::atomic<size_t> next{0}, finished{0};
  std::mutex print_mu;
  auto stub = v1::QuestionAnswering::NewStub(connection.channel());
  auto progress = [&] {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(print_mu);
    const size_t done = finished.load(), total = requests.size();
    const int width = 30;
    const int filled = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\r[%s%s] %zu/%zu", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
  };
  auto worker = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      RunResult& result = results[i];
      for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
        grpc::ClientContext context;
        connection.Prepare(&context);
        result.response.Clear();
        const auto start = std::chrono::steady_clock::now();
        result.status = stub->Answer(&context, requests[i], &result.response);
        result.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        result.attempts = attempt;
        const auto code = result.status.error_code();
        if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::RESOURCE_EXHAUSTED) {
          break;
        }
        if (attempt < options.max_attempts) {  // 100 ms, 200 ms, 400 ms, ...
          std::this_thread::sleep_for(std::chrono::milliseconds(100 << (attempt - 1)));
        }
      }
      ++finished;
      progress();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, options.concurrency); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace longqa::cli
