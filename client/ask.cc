// longqa ask: one question about one document; a readable answer, or --json.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "client/commands.h"
#include "client/connection.h"
#include "client/requests.h"

namespace longqa::cli {
namespace {

// The sentence of `text` around [begin, end): from the previous sentence end (or paragraph start)
// to the next one, with the span marked.
std::string Highlight(const std::string& text, int64_t para_begin, int64_t para_end, int64_t begin,
                      int64_t end, bool color) {
  auto is_stop = [](char c) { return c == '.' || c == '!' || c == '?' || c == '\n'; };
  int64_t s = begin;
  while (s > para_begin && !is_stop(text[s - 1])) --s;
  int64_t e = end;
  while (e < para_end && !is_stop(text[e])) ++e;
  if (e < para_end) ++e;
  const std::string open = color ? "\033[1;32m" : "[[", close = color ? "\033[0m" : "]]";
  std::string out = text.substr(s, begin - s) + open + text.substr(begin, end - begin) + close +
                    text.substr(end, e - end);
  const auto first = out.find_first_not_of(" \t\r\n");
  return first == std::string::npos ? out : out.substr(first);
}

std::string Trimmed(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole chars
  return s.substr(0, cut) + " …";
}

}  // namespace

int RunAsk(int argc, char** argv) {
  std::set<std::string> known = ConnectionFlags();
  known.insert({"question", "file", "n_best", "max_short_answer_tokens", "null_threshold"});
  const Args args(argc, argv, 2, known, {"json", "no_color"});
  if (!args.Has("question")) throw UsageError("ask needs --question");
  std::string text;
  if (args.Has("file") && args.Get("file") != "-") {
    text = ReadTextFileOrThrow(args.Get("file"), "--file");
  } else {
    std::stringstream s;
    s << std::cin.rdbuf();
    text = s.str();
  }
  v1::AnswerRequest request;
  request.set_question(args.Get("question"));
  request.mutable_document()->set_text(text);
  request.mutable_options()->set_n_best(static_cast<uint32_t>(args.GetInt("n_best", 1, 1)));
  request.mutable_options()->set_max_short_answer_tokens(
      static_cast<uint32_t>(args.GetInt("max_short_answer_tokens", 0, 0)));
  if (args.Has("null_threshold")) {  // otherwise the model's calibrated default
    request.mutable_options()->set_null_threshold(
        static_cast<float>(args.GetDouble("null_threshold", 0)));
  }
  request.mutable_options()->set_include_timing(true);

  const Connection connection(args);
  auto stub = v1::QuestionAnswering::NewStub(connection.channel());
  grpc::ClientContext context;
  connection.Prepare(&context);
  v1::AnswerResponse r;
  const grpc::Status status = stub->Answer(&context, request, &r);
  if (!status.ok()) {
    std::cerr << "longqa ask: " << connection.target() << ": " << status.error_message() << "\n";
    return ExitCodeFor(status);
  }
  if (args.GetBool("json")) {
    std::cout << ResponseToJson(r).dump(2) << "\n";
    return kExitOk;
  }
  const bool color = !args.GetBool("no_color") && isatty(STDOUT_FILENO);
  const float p = r.answer_type_probabilities_size() > r.answer_type()
                      ? r.answer_type_probabilities(r.answer_type())
                      : 0;
  std::printf("answer: %s (p=%.2f, no-answer score %.2f)\n",
              AnswerTypeName(r.answer_type()).c_str(), p, r.no_answer_score());
  if (r.has_long_answer()) {
    const auto& l = r.long_answer();
    std::printf("long answer: paragraph %u, bytes %llu-%llu, score %.2f\n  %s\n",
                l.paragraph_index(), static_cast<unsigned long long>(l.byte_begin()),
                static_cast<unsigned long long>(l.byte_end()), l.score(),
                Trimmed(l.text(), 400).c_str());
    // Under YES, NO or LONG_ONLY the spans are diagnostics (qa.proto), not the answer.
    const bool short_answer = r.answer_type() == v1::ANSWER_TYPE_SHORT;
    for (int i = 0; i < r.short_answers_size(); ++i) {
      const auto& s = r.short_answers(i);
      std::printf(
          "%s: \"%s\" (bytes %llu-%llu, score %.2f)\n  %s\n",
          i > 0 ? "  candidate" : (short_answer ? "short answer" : "best span (not the answer)"),
          s.text().c_str(), static_cast<unsigned long long>(s.byte_begin()),
          static_cast<unsigned long long>(s.byte_end()), s.score(),
          Highlight(text, l.byte_begin(), l.byte_end(), s.byte_begin(), s.byte_end(), color)
              .c_str());
    }
  }
  if (r.question_truncated()) std::printf("note: the server truncated the question\n");
  const auto& t = r.timing();
  std::printf(
      "usage: %u document tokens, %u windows; timing: queue %.1f ms, tokenize %.1f ms, "
      "inference %.1f ms, decode %.1f ms, total %.1f ms (batch of %u)\n",
      r.usage().document_tokens(), r.usage().windows(), 1e3 * t.queue_seconds(),
      1e3 * t.tokenize_seconds(), 1e3 * t.inference_seconds(), 1e3 * t.decode_seconds(),
      1e3 * t.total_seconds(), t.batch_requests());
  return kExitOk;
}

}  // namespace longqa::cli
