#include "train/dev_metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace longqa {
namespace {

void Score(const TrainingExample& ex, const QaAnswer& a, KindScore* s) {
  ++s->examples;
  const auto gold_type = static_cast<AnswerType>(ex.answer_type);
  if (gold_type == AnswerType::kNoAnswer) {
    const bool right = a.type == AnswerType::kNoAnswer;
    s->long_right += right;
    s->answer_right += right;
    return;
  }
  const bool long_right = a.has_long_answer && a.long_answer.byte_begin == ex.long_bytes.first &&
                          a.long_answer.byte_end == ex.long_bytes.second;
  s->long_right += long_right;
  bool right = long_right && a.type == gold_type;
  if (gold_type == AnswerType::kShort) {
    right = right && !a.short_answers.empty() &&
            a.short_answers[0].byte_begin == ex.short_bytes.first &&
            a.short_answers[0].byte_end == ex.short_bytes.second;
  }
  s->answer_right += right;
}

}  // namespace

std::map<std::string, KindScore> ScoreExamples(const Engine& engine,
                                               const std::vector<TrainingExample>& examples,
                                               int64_t batch_size) {
  std::map<std::string, KindScore> scores;
  for (size_t begin = 0; begin < examples.size(); begin += batch_size) {
    std::vector<const PreparedRequest*> batch;
    const size_t end = std::min(examples.size(), begin + static_cast<size_t>(batch_size));
    for (size_t i = begin; i < end; ++i) batch.push_back(&examples[i].prepared);
    const auto answers = engine.Run(batch);
    for (size_t i = begin; i < end; ++i) {
      for (KindScore* s : {&scores["all"], &scores[examples[i].kind]}) {
        if (answers[i - begin].ok()) {
          Score(examples[i], *answers[i - begin], s);
        } else {
          ++s->examples;  // a failed request counts as wrong
        }
      }
    }
  }
  return scores;
}

std::string FormatKindScores(const std::map<std::string, KindScore>& scores) {
  std::string out;
  for (const auto& [kind, s] : scores) {
    const double n = std::max<int64_t>(1, s.examples);
    absl::StrAppend(&out, out.empty() ? "" : "  ",
                    absl::StrFormat("%s %.2f/%.2f (%d)", kind.empty() ? "-" : kind,
                                    s.long_right / n, s.answer_right / n, s.examples));
  }
  return out;
}

}  // namespace longqa
