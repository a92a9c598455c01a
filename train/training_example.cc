#include "train/training_example.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/request_json.h"

namespace longqa {
namespace {

ByteRange SpanOf(const nlohmann::json& j) {
  return {j.at("start_byte").get<int64_t>(), j.at("end_byte").get<int64_t>()};
}

// The index of the paragraph whose byte span a gold span (`what`: the long answer, a supporting
// fact) is, or an error naming it.
absl::StatusOr<int64_t> ParagraphOf(const TokenizedDocument& doc, const ByteRange& bytes,
                                    const std::string& example_id, const char* what) {
  const auto it = std::find(doc.paragraph_bytes.begin(), doc.paragraph_bytes.end(), bytes);
  if (it == doc.paragraph_bytes.end()) {
    return absl::InvalidArgumentError(absl::StrCat(example_id, ": the ", what, " [", bytes.first,
                                                   ", ", bytes.second,
                                                   ") is not one of the document's paragraphs"));
  }
  return it - doc.paragraph_bytes.begin();
}

}  // namespace

absl::StatusOr<TrainingExample> MakeTrainingExample(const std::string& json_line,
                                                    const Engine& engine) {
  TrainingExample ex;
  QaRequest request;
  std::vector<ByteRange> supporting;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_line);
    ex.example_id = j.at("example_id").is_string() ? j["example_id"].get<std::string>()
                                                   : j["example_id"].dump();
    ex.kind = j.value("kind", std::string());
    request = QaRequestFromJson(j);
    if (j.contains("long_answer") && j["long_answer"].is_object()) {
      ex.long_bytes = SpanOf(j["long_answer"]);
    }
    for (const nlohmann::json& s : j.value("supporting", nlohmann::json::array())) {
      supporting.push_back(SpanOf(s));
    }
    const auto shorts = j.value("short_answers", nlohmann::json::array());
    if (!shorts.empty()) ex.short_bytes = SpanOf(shorts[0]);
    const std::string yes_no = j.value("yes_no_answer", std::string("NONE"));
    ex.answer_type = ex.long_bytes.first < 0     ? static_cast<int64_t>(AnswerType::kNoAnswer)
                     : yes_no == "YES"           ? static_cast<int64_t>(AnswerType::kYes)
                     : yes_no == "NO"            ? static_cast<int64_t>(AnswerType::kNo)
                     : ex.short_bytes.first >= 0 ? static_cast<int64_t>(AnswerType::kShort)
                                                 : static_cast<int64_t>(AnswerType::kLongOnly);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
  LONGQA_ASSIGN_OR_RETURN(ex.prepared, engine.Prepare(std::move(request)));
  const TokenizedDocument& doc = ex.prepared.document;
  if (ex.long_bytes.first >= 0) {
    LONGQA_ASSIGN_OR_RETURN(ex.long_paragraph,
                            ParagraphOf(doc, ex.long_bytes, ex.example_id, "long answer"));
  }
  for (const ByteRange& bytes : supporting) {
    LONGQA_ASSIGN_OR_RETURN(const int64_t p,
                            ParagraphOf(doc, bytes, ex.example_id, "supporting fact"));
    ex.supporting_paragraphs.push_back(p);
  }
  std::sort(ex.supporting_paragraphs.begin(), ex.supporting_paragraphs.end());
  if (ex.short_bytes.first >= 0 && ex.long_paragraph >= 0) {
    // First token ending after the span's start; last token starting before its end (pieces
    // carry their leading space, so a token's span may begin one byte early).
    const int64_t first = doc.paragraph_token[ex.long_paragraph] + 1;
    for (int64_t t = first;
         t < static_cast<int64_t>(doc.ids.size()) && doc.token_paragraph[t] == ex.long_paragraph;
         ++t) {
      if (ex.short_start < 0 && doc.spans[t].second > ex.short_bytes.first) ex.short_start = t;
      if (doc.spans[t].first < ex.short_bytes.second) ex.short_end = t;
    }
    if (ex.short_start < 0 || ex.short_end < ex.short_start) {
      return absl::InvalidArgumentError(
          absl::StrCat(ex.example_id, ": the short answer is not inside the long answer"));
    }
  }
  return ex;
}

absl::StatusOr<std::vector<TrainingExample>> LoadTrainingExamples(const std::string& path,
                                                                  const Engine& engine,
                                                                  int64_t limit) {
  std::vector<TrainingExample> examples;
  LONGQA_RETURN_IF_ERROR(ForEachJsonLine(path, limit, [&](const std::string& line) {
    auto ex = MakeTrainingExample(line, engine);
    if (!ex.ok()) return ex.status();
    examples.push_back(std::move(*ex));
    return absl::OkStatus();
  }));
  return examples;
}

}  // namespace longqa
