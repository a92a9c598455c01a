#include "server/convert.h"

#include "absl/strings/str_cat.h"

namespace longqa {

absl::StatusOr<QaRequest> ToQaRequest(const v1::AnswerRequest& request,
                                      int64_t max_document_bytes) {
  if (request.request_id().size() > 256) {
    return absl::InvalidArgumentError("request_id is longer than 256 bytes");
  }
  if (request.question().empty()) return absl::InvalidArgumentError("question is empty");
  const v1::AnswerOptions& o = request.options();
  if (o.max_short_answer_tokens() > kMaxShortAnswerTokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.max_short_answer_tokens must be ≤ ", kMaxShortAnswerTokens));
  }
  if (o.n_best() > kMaxNBest) {
    return absl::InvalidArgumentError(absl::StrCat("options.n_best must be ≤ ", kMaxNBest));
  }
  if (!std::isfinite(o.null_threshold())) {
    return absl::InvalidArgumentError("options.null_threshold must be finite");
  }
  QaRequest r;
  r.question = request.question();
  switch (request.document().content_case()) {
    case v1::Document::kText:
      r.text = request.document().text();
      break;
    case v1::Document::kParagraphs: {
      const auto& items = request.document().paragraphs().items();
      r.text = JoinParagraphs(std::vector<std::string>(items.begin(), items.end()), &r.paragraphs);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "document is empty: set document.text or document.paragraphs");
  }
  if (static_cast<int64_t>(r.text.size()) > max_document_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("document has ", r.text.size(),
                                                     " bytes; this server accepts at most ",
                                                     max_document_bytes));
  }
  r.options.max_answer_tokens =
      o.max_short_answer_tokens() == 0 ? kDefaultShortAnswerTokens : o.max_short_answer_tokens();
  r.options.n_best = o.n_best() == 0 ? 1 : o.n_best();
  if (o.has_null_threshold()) r.options.null_threshold = o.null_threshold();
  return r;
}

std::string AnswerTypeLabel(AnswerType type) {
  switch (type) {
    case AnswerType::kNoAnswer:
      return "no_answer";
    case AnswerType::kYes:
      return "yes";
    case AnswerType::kNo:
      return "no";
    case AnswerType::kShort:
      return "short";
    case AnswerType::kLongOnly:
      return "long_only";
  }
  return "unknown";
}

namespace {

void FillSpan(const AnswerSpan& s, const std::string& text, v1::Span* out) {
  out->set_paragraph_index(static_cast<uint32_t>(s.paragraph_index));
  out->set_byte_begin(static_cast<uint64_t>(s.byte_begin));
  out->set_byte_end(static_cast<uint64_t>(s.byte_end));
  out->set_text(text.substr(s.byte_begin, s.byte_end - s.byte_begin));
  out->set_score(s.score);
}

}  // namespace

void FillResponse(const QaAnswer& answer, const PreparedRequest& prepared, bool include_timing,
                  double tokenize_seconds, const WorkTiming& timing, double total_seconds,
                  v1::AnswerResponse* response) {
  const std::string& text = prepared.request.text;
  response->set_answer_type(static_cast<v1::AnswerType>(answer.type));
  if (answer.has_long_answer) FillSpan(answer.long_answer, text, response->mutable_long_answer());
  for (const AnswerSpan& s : answer.short_answers) FillSpan(s, text, response->add_short_answers());
  response->set_no_answer_score(answer.no_answer_score);
  response->set_best_answer_score(answer.best_answer_score);
  for (float p : answer.type_probabilities) response->add_answer_type_probabilities(p);
  response->set_question_truncated(answer.question_truncated);
  v1::Usage* usage = response->mutable_usage();
  usage->set_question_tokens(static_cast<uint32_t>(answer.question_tokens));
  usage->set_document_tokens(static_cast<uint32_t>(answer.document_tokens));
  usage->set_windows(static_cast<uint32_t>(answer.windows));
  if (include_timing) {
    v1::Timing* t = response->mutable_timing();
    t->set_queue_seconds(timing.queue_seconds);
    t->set_tokenize_seconds(tokenize_seconds);
    t->set_inference_seconds(timing.inference_seconds);
    t->set_decode_seconds(timing.decode_seconds);
    t->set_total_seconds(total_seconds);
    t->set_batch_requests(static_cast<uint32_t>(timing.batch_requests));
  }
}

}  // namespace longqa
