// The shipped models answer: fixed examples (<model>/checks.jsonl, the gold format; for
// models/demo generated dev examples and questions about man pages, README prose and tables it
// never trained on, one a row of a long table below the window that holds its header) get
// exactly their gold long answer and short span / yes-no / no answer, and the sample questions on
// <model>/sample.txt get the answers recorded beside them (for models/demo: the README's). Run
// for models/demo (the sliding-window model fine-tuned from MiniLM, then on man pages, README
// prose and tables), models/scratch_etc (the from-scratch ETC model that the memory tests use)
// and models/checkpoints/etc_minilm (the MiniLM ETC model with pooled entity tokens that answers
// two-hop questions: its checks are generated dev examples, two-hop among them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "model/engine.h"
#include "train/training_example.h"

namespace longqa {
namespace {

// (model folder, precision): fp32, and "auto" (what longqa-server serves in by default: the
// folder's default_precision where this CPU runs it natively, model/precision_choice.h).
class DemoModelTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  std::string DemoDir() const {
    const char* source = std::getenv("LONGQA_SOURCE_DIR");  // set by CTest
    return std::string(source != nullptr ? source : ".") + "/models/" + std::get<0>(GetParam());
  }
  std::unique_ptr<Engine> LoadDemo() const {
    const bool automatic = std::get<1>(GetParam());
    EngineOptions options{2, "cpu", automatic ? std::nullopt : std::optional(Precision::kFp32)};
    auto engine = Engine::LoadFromDir(DemoDir(), options);
    if (!engine.ok()) throw std::runtime_error(std::string(engine.status().message()));
    if (automatic) std::printf("precision %s\n", PrecisionName((*engine)->precision()));
    return std::move(*engine);
  }
};

TEST_P(DemoModelTest, AnswersTheFixedDevExamples) {
  const auto engine = LoadDemo();
  std::ifstream in(DemoDir() + "/checks.jsonl");
  ASSERT_TRUE(in) << DemoDir() << "/checks.jsonl missing";
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    const auto ex = MakeTrainingExample(line, *engine);
    ASSERT_TRUE(ex.ok()) << ex.status().message();
    SCOPED_TRACE(ex->example_id + " (" + ex->kind + "): " + ex->prepared.request.question);
    const QaAnswer a = engine->Run({&ex->prepared})[0].value();
    EXPECT_EQ(static_cast<int64_t>(a.type), ex->answer_type);
    if (ex->answer_type == static_cast<int64_t>(AnswerType::kNoAnswer)) {
      EXPECT_FALSE(a.has_long_answer);
    } else {
      EXPECT_EQ(a.long_answer.byte_begin, ex->long_bytes.first);
      EXPECT_EQ(a.long_answer.byte_end, ex->long_bytes.second);
    }
    if (ex->answer_type == static_cast<int64_t>(AnswerType::kShort)) {
      ASSERT_FALSE(a.short_answers.empty());
      EXPECT_EQ(a.short_answers[0].byte_begin, ex->short_bytes.first);
      EXPECT_EQ(a.short_answers[0].byte_end, ex->short_bytes.second);
    }
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

TEST_P(DemoModelTest, AnswersTheSampleQuestions) {
  const auto engine = LoadDemo();
  std::ifstream doc(DemoDir() + "/sample.txt");
  std::stringstream text;
  text << doc.rdbuf();
  std::ifstream questions(DemoDir() + "/sample_questions.json");
  const auto j = nlohmann::json::parse(questions);
  ASSERT_FALSE(j.empty());
  for (const auto& q : j) {
    const std::string question = q.at("question");
    const std::string expected = q.at("answer");  // short answer text, "YES", "NO" or "NONE"
    SCOPED_TRACE(question);
    QaRequest request;
    request.question = question;
    request.text = text.str();
    const QaAnswer a = engine->Answer(request).value();
    if (expected == "YES" || expected == "NO") {
      EXPECT_EQ(a.type, expected == "YES" ? AnswerType::kYes : AnswerType::kNo);
    } else if (expected == "NONE") {
      EXPECT_EQ(a.type, AnswerType::kNoAnswer);
    } else {
      ASSERT_EQ(a.type, AnswerType::kShort);
      ASSERT_FALSE(a.short_answers.empty());
      const AnswerSpan& s = a.short_answers[0];
      EXPECT_EQ(text.str().substr(s.byte_begin, s.byte_end - s.byte_begin), expected);
    }
  }
}

// A shipped model is trained: a config that still lists the importer's untrained heads would make
// every server start warn that its answers mean nothing.
TEST_P(DemoModelTest, ListsNoUntrainedHeads) {
  EXPECT_TRUE(LoadDemo()->config().untrained_heads.empty());
}

// scratch_etc's folder names no default_precision, so its "auto" is fp32: checked once.
// etc_minilm's names "bf16,int8" (inherited from the Cluster-Former chain) but has no int8
// calibration text: checked in fp32, which every CPU runs.
INSTANTIATE_TEST_SUITE_P(Shipped, DemoModelTest,
                         ::testing::Values(std::tuple("demo", false), std::tuple("demo", true),
                                           std::tuple("scratch_etc", false),
                                           std::tuple("checkpoints/etc_minilm", false)),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param);
                           std::replace(name.begin(), name.end(), '/', '_');  // a test name
                           return name + (std::get<1>(info.param) ? "_auto" : "_fp32");
                         });

}  // namespace
}  // namespace longqa
