// The engine end to end on a random-weight model: batching invariance, byte offsets on random
// Unicode, request validation, loading from a model folder.
#include "model/engine.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "model/compute_info.h"
#include "model/document.h"
#include "model/encoders/int8_linear.h"
#include "model/format/safetensors.h"
#include "model/precision_choice.h"
#include "tests/unit/test_model.h"

namespace longqa {
namespace {

using testing_support::SpreadWeights;
using testing_support::TestTokenizer;
using testing_support::TinyConfig;

std::unique_ptr<Engine> MakeEngine(const ModelConfig& c, TensorMap w) {
  auto engine = Engine::Create(c, w, TestTokenizer(), EngineOptions{2, "cpu"});
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return std::move(*engine);
}

std::string Words(int n, int seed) {
  const char* words[] = {"the",  "river", "Ada",    "was",      "born",   "in",   "Paris",
                         "city", "of",    "France", "mountain", "Zürich", "東京", "café"};
  std::mt19937 rng(seed);
  std::string s;
  for (int i = 0; i < n; ++i) s += std::string(i ? " " : "") + words[rng() % 14];
  return s;
}

std::string Document(int paragraphs, int words, int seed) {
  std::string text;
  for (int p = 0; p < paragraphs; ++p) text += (p ? "\n\n" : "") + Words(words, seed * 100 + p);
  return text;
}

TEST(EngineTest, AFailedAllocationIsResourceExhaustedInOneLine) {
  // A real allocation failure: 2^46 floats (256 TiB) is beyond any address space.
  try {
    const at::Tensor huge = at::empty({int64_t{1} << 46}, at::kFloat);
    FAIL() << "allocated " << huge.numel() << " floats";
  } catch (const std::exception& e) {
    const absl::Status status = ModelFailure(e, 3);
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status.message();
    EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos);
  }
  // Any other failure: INTERNAL, its first line only (LibTorch's messages carry a backtrace).
  try {
    (void)at::ones({2, 3}).matmul(at::ones({4, 5}));
    FAIL() << "mismatched shapes multiplied";
  } catch (const std::exception& e) {
    const absl::Status status = ModelFailure(e, 1);
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
    EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos) << status.message();
    EXPECT_EQ(std::string(status.message()).rfind("model failed: ", 0), 0u) << status.message();
  }
}

TEST(EngineTest, DocumentOverTheTokenLimitIsRefusedBeforeItIsAllTokenized) {
  const ModelConfig c = TinyConfig("SCS", 24, 16, 4);
  const auto engine = MakeEngine(c, SpreadWeights(c, 3));
  QaRequest r;
  r.question = "where was Ada born";
  r.text = Document(50, 12, 7);
  const auto whole = engine->Prepare(r);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  const int64_t total = static_cast<int64_t>(whole->document.ids.size());
  EXPECT_TRUE(engine->Prepare(r, total).ok());  // exactly at the limit
  // The first three paragraphs' tokens (the fourth paragraph token starts right after them).
  const int64_t three = whole->document.paragraph_token[3];
  const auto refused = engine->Prepare(r, three);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  const std::string message(refused.status().message());
  // Tokenizing stopped after the fourth of 50 paragraphs.
  EXPECT_NE(message.find("more than " + std::to_string(three) + " tokens"), std::string::npos)
      << message;
  EXPECT_NE(message.find("first 4 of 50 paragraphs"), std::string::npos) << message;
}

TEST(EngineTest, AnswerIsTheSameAloneAndInsideAMixedBatch) {
  const ModelConfig c = TinyConfig("SCS", 24, 16, 4);
  const auto engine = MakeEngine(c, SpreadWeights(c, 3));
  std::vector<PreparedRequest> prepared;
  const std::vector<std::pair<int, int>> shapes = {{3, 20}, {1, 4}, {9, 25}, {2, 60}, {5, 7}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    QaRequest r;
    r.question = Words(3 + static_cast<int>(i) * 2, static_cast<int>(i));
    r.text = Document(shapes[i].first, shapes[i].second, static_cast<int>(i));
    r.options.n_best = 3;
    auto p = engine->Prepare(r);
    ASSERT_TRUE(p.ok()) << p.status().message();
    prepared.push_back(std::move(*p));
  }
  std::vector<const PreparedRequest*> batch;
  for (const auto& p : prepared) batch.push_back(&p);
  const auto together = engine->Run(batch);
  ASSERT_EQ(together.size(), prepared.size());
  for (size_t i = 0; i < prepared.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const auto alone = engine->Run({&prepared[i]});
    ASSERT_TRUE(alone[0].ok() && together[i].ok());
    const QaAnswer& a = *alone[0];
    const QaAnswer& b = *together[i];
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.long_answer.paragraph_index, b.long_answer.paragraph_index);
    EXPECT_NEAR(a.long_answer.score, b.long_answer.score, 1e-4);
    EXPECT_NEAR(a.no_answer_score, b.no_answer_score, 1e-4);
    for (int t = 0; t < 5; ++t) {
      EXPECT_NEAR(a.type_probabilities[t], b.type_probabilities[t], 1e-5);
    }
    ASSERT_EQ(a.short_answers.size(), b.short_answers.size());
    for (size_t k = 0; k < a.short_answers.size(); ++k) {
      EXPECT_EQ(a.short_answers[k].byte_begin, b.short_answers[k].byte_begin);
      EXPECT_EQ(a.short_answers[k].byte_end, b.short_answers[k].byte_end);
      EXPECT_NEAR(a.short_answers[k].score, b.short_answers[k].score, 1e-4);
    }
    EXPECT_GT(a.windows, 0);
  }
}

TEST(EngineTest, AnswerScoreTypePlusLongAddsTheLongAnswersScoreToTheRule) {
  // config.json answer_score "type+long": the same logits, best_answer_score grows by the long
  // answer's score, and qa.proto's rule decides with it (a threshold between the two margins
  // splits them).
  ModelConfig c = TinyConfig("SCS", 24, 16, 4);
  const TensorMap w = SpreadWeights(c, 5);
  const auto type_only = MakeEngine(c, w);
  c.answer_score = "type+long";
  const auto type_long = MakeEngine(c, w);
  int split = 0;
  for (int seed = 0; seed < 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    QaRequest r;
    r.question = Words(4, seed);
    r.text = Document(3 + seed, 15, seed);
    r.options.null_threshold = -1e30f;  // every answer forced: the long answer is there to read
    const auto a = type_only->Answer(r);
    const auto b = type_long->Answer(r);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(a->has_long_answer && b->has_long_answer);
    EXPECT_EQ(a->long_answer.byte_begin, b->long_answer.byte_begin);
    EXPECT_FLOAT_EQ(a->no_answer_score, b->no_answer_score);
    EXPECT_NEAR(b->best_answer_score, a->best_answer_score + a->long_answer.score, 1e-5);
    // A threshold between the two margins: NO_ANSWER on one side only.
    const float margin_a = a->best_answer_score - a->no_answer_score;
    const float margin_b = b->best_answer_score - b->no_answer_score;
    if (std::abs(margin_a - margin_b) < 1e-3f) continue;
    r.options.null_threshold = (margin_a + margin_b) / 2;
    const auto a2 = type_only->Answer(r);
    const auto b2 = type_long->Answer(r);
    ASSERT_TRUE(a2.ok() && b2.ok());
    EXPECT_EQ(a2->type == AnswerType::kNoAnswer, margin_a < margin_b);
    EXPECT_EQ(b2->type == AnswerType::kNoAnswer, margin_b < margin_a);
    ++split;
  }
  EXPECT_GT(split, 0);
}

// Random text of multi-byte characters, combining marks, emoji, CRLF and control characters.
std::string RandomUnicode(std::mt19937& rng, int units) {
  const std::vector<std::string> pool = {
      "a",           "Ada",  " ",  " ",    "river", "é",      "e\xCC\x81", "東京",         "😀",
      "👩‍🔬", "\r\n", "\t", "\x01", "\x1F",  "Zürich", "ß",         "\xE2\x80\x8B", "،",
      "ไทย",         "\n",   "  ", "-",    "42"};
  std::string s;
  for (int i = 0; i < units; ++i) s += pool[rng() % pool.size()];
  if (rng() % 2) s += "\n\n";
  return s;
}

bool IsCharStart(const std::string& s, int64_t i) {
  return i == static_cast<int64_t>(s.size()) || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}

TEST(EngineTest, SpansAreBytesOfTheirTokensOnRandomUnicode) {
  const ModelConfig c = TinyConfig("SS", 24, 16);
  TensorMap w = SpreadWeights(c, 5);
  w["answer_type.bias"] = at::tensor({0.f, 0.f, 0.f, 100.f, 0.f});  // always answer SHORT
  const auto engine = MakeEngine(c, w);
  std::mt19937 rng(99);
  int short_spans_checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    QaRequest r;
    r.question = "where was Ada born?";
    for (int p = 0; p < 1 + trial % 4; ++p)
      r.text += (p ? "\r\n\r\n" : "") + RandomUnicode(rng, 5 + trial);
    r.options.n_best = 5;
    r.options.max_answer_tokens = 6;
    auto prepared = engine->Prepare(r);
    if (SplitParagraphs(r.text).empty()) {
      EXPECT_FALSE(prepared.ok());
      continue;
    }
    ASSERT_TRUE(prepared.ok()) << prepared.status().message();
    const TokenizedDocument& doc = prepared->document;
    const std::string& text = prepared->request.text;
    // Token spans: in order, inside their paragraph, on character boundaries, and covering every
    // non-whitespace byte of the paragraph.
    for (size_t p = 0; p < doc.paragraph_bytes.size(); ++p) {
      const auto [pb, pe] = doc.paragraph_bytes[p];
      std::vector<bool> covered(pe - pb, false);
      int64_t previous_end = pb;
      for (size_t t = 0; t < doc.ids.size(); ++t) {
        if (doc.token_paragraph[t] != static_cast<int64_t>(p)) continue;
        const auto [b, e] = doc.spans[t];
        ASSERT_LE(pb, b);
        ASSERT_LE(b, e);
        ASSERT_LE(e, pe);
        ASSERT_LE(previous_end, b) << "tokens out of order";
        ASSERT_TRUE(IsCharStart(text, b) && IsCharStart(text, e)) << "token splits a character";
        for (int64_t i = b; i < e; ++i) covered[i - pb] = true;
        previous_end = e;
      }
      for (int64_t i = pb; i < pe; ++i) {
        const char ch = text[i];
        if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n') {
          ASSERT_TRUE(covered[i - pb]) << "byte " << i << " of paragraph " << p << " not covered";
        }
      }
    }
    const auto answer = engine->Run({&*prepared})[0];
    ASSERT_TRUE(answer.ok());
    ASSERT_TRUE(answer->has_long_answer);
    EXPECT_EQ(answer->long_answer.byte_begin,
              doc.paragraph_bytes[answer->long_answer.paragraph_index].first);
    for (const AnswerSpan& s : answer->short_answers) {
      ASSERT_LT(s.byte_begin, s.byte_end);
      ASSERT_TRUE(IsCharStart(text, s.byte_begin) && IsCharStart(text, s.byte_end));
      // The span is exactly the bytes from its first token's start to its last token's end.
      int64_t first = -1, last = -1;
      for (size_t t = 0; t < doc.ids.size(); ++t) {
        const auto [b, e] = doc.spans[t];
        if (b == e || e <= s.byte_begin || b >= s.byte_end) continue;
        if (first < 0) first = b;
        last = e;
      }
      ASSERT_GE(first, 0);
      auto trim = [&](int64_t b, int64_t e) {
        while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
        while (e > b && (std::isspace(static_cast<unsigned char>(text[e - 1])) ||
                         std::strchr(".,;:!?", text[e - 1]) != nullptr)) {
          --e;
        }
        return std::make_pair(b, e);
      };
      EXPECT_EQ(trim(first, last), std::make_pair(s.byte_begin, s.byte_end));
      // Never inside a word: not between two ASCII letters/digits.
      auto alnum = [&](int64_t i) {
        return std::isalnum(static_cast<unsigned char>(text[i])) != 0;
      };
      EXPECT_FALSE(s.byte_begin > 0 && alnum(s.byte_begin - 1) && alnum(s.byte_begin));
      EXPECT_FALSE(s.byte_end < static_cast<int64_t>(text.size()) && alnum(s.byte_end - 1) &&
                   alnum(s.byte_end));
      ++short_spans_checked;
    }
  }
  EXPECT_GT(short_spans_checked, 40);
}

TEST(EngineTest, RejectsBadRequestsAndReportsTruncation) {
  const ModelConfig c = TinyConfig("SS", 24, 16);
  const auto engine = MakeEngine(c, SpreadWeights(c, 1));
  auto answer = [&](const std::string& q, const std::string& text) {
    QaRequest r;
    r.question = q;
    r.text = text;
    return engine->Answer(r);
  };
  EXPECT_EQ(answer("", "text").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(answer("q\xC3", "text").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(answer("q", "bad \xFF").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(answer("q", " \n\n \n").status().code(), absl::StatusCode::kInvalidArgument);
  const auto truncated = answer(Words(200, 3), Document(2, 10, 1));
  ASSERT_TRUE(truncated.ok());
  EXPECT_TRUE(truncated->question_truncated);
  EXPECT_EQ(truncated->question_tokens, c.max_question_tokens);
  const auto fine = answer("where was Ada born", Document(2, 10, 1));
  ASSERT_TRUE(fine.ok());
  EXPECT_FALSE(fine->question_truncated);
}

TEST(EngineTest, AFailureInsideTheModelFailsTheBatchWithInternalAndNeverThrows) {
  const ModelConfig c = TinyConfig("SS", 24, 16);
  TensorMap w = SpreadWeights(c, 1);
  w["qa_outputs.weight"] = at::zeros({2, 7});  // the linear layer will throw on the shape
  auto engine = Engine::Create(c, w, TestTokenizer(), EngineOptions{2, "cpu"});
  ASSERT_TRUE(engine.ok());
  QaRequest r;
  r.question = "where was Ada born";
  r.text = Document(2, 10, 1);
  auto a = (*engine)->Prepare(r), b = (*engine)->Prepare(r);
  ASSERT_TRUE(a.ok() && b.ok());
  const auto answers = (*engine)->Run({&*a, &*b});
  ASSERT_EQ(answers.size(), 2u);
  for (const auto& answer : answers) {
    EXPECT_EQ(answer.status().code(), absl::StatusCode::kInternal);
    EXPECT_NE(answer.status().message().find("model failed"), std::string::npos);
  }
}

TEST(EngineTest, UnsetPrecisionServesTheModelsDefaultWhereTheCpuRunsItNatively) {
  ModelConfig c = TinyConfig("SCS", 24, 16, 3);
  c.default_precision = "bf16";
  const TensorMap w = SpreadWeights(c, 8);
  auto automatic = Engine::Create(c, w, TestTokenizer(), EngineOptions{2, "cpu", std::nullopt});
  ASSERT_TRUE(automatic.ok()) << automatic.status().message();
  // bf16 on a CPU with AVX512_BF16 or AMX, fp32 elsewhere: what ChoosePrecision says for this one.
  const PrecisionChoice expected = ChoosePrecision("bf16", false, CpuIsa(), Int8LinearAvailable());
  EXPECT_EQ((*automatic)->precision(), expected.precision);
  EXPECT_EQ((*automatic)->precision_reason(), expected.reason);
  auto named = Engine::Create(c, w, TestTokenizer(), EngineOptions{2, "cpu", expected.precision});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ((*named)->precision(), expected.precision);
  EXPECT_EQ((*named)->precision_reason(), "");  // named by the caller: nothing to explain
  QaRequest r;
  r.question = "where was Ada born";
  r.text = Document(4, 30, 3);
  const auto a = (*automatic)->Answer(r), b = (*named)->Answer(r);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->long_answer.byte_begin, b->long_answer.byte_begin);
  EXPECT_FLOAT_EQ(a->long_answer.score, b->long_answer.score);
  // An explicit precision wins over the model's default.
  auto fp32 = Engine::Create(c, w, TestTokenizer(), EngineOptions{2, "cpu", Precision::kFp32});
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ((*fp32)->precision(), Precision::kFp32);
}

// int8 layers calibrated on text (model/encoders/int8_calibration.h): every dense layer finds the
// statistics its fp32 twin recorded under its name and keeps the widest input columns in fp32;
// without text, or in another precision, nothing is calibrated; text without a paragraph is
// refused.
TEST(EngineTest, Int8LayersAreCalibratedOnTheTextGiven) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no int8 GEMM in this build";
  const ModelConfig c = TinyConfig("SCS", 24, 16, 3);
  const TensorMap w = SpreadWeights(c, 8);
  const EngineOptions int8{2, "cpu", Precision::kInt8};
  const std::string text = Document(6, 40, 5);
  auto calibrated = Engine::Create(c, w, TestTokenizer(), int8, text);
  ASSERT_TRUE(calibrated.ok()) << calibrated.status().message();
  const std::string& said = (*calibrated)->int8_calibration();
  // Three layers of four dense layers each (q/k/v stacked, attention output, the two FFN layers).
  EXPECT_NE(said.find("tokens of text: 12 of 12 dense layers"), std::string::npos) << said;
  // ETC's layers project q, k and v apart: six each.
  const ModelConfig etc = testing_support::TinyEtcConfig();
  auto etc_engine = Engine::Create(etc, SpreadWeights(etc, 9), TestTokenizer(), int8, text);
  ASSERT_TRUE(etc_engine.ok()) << etc_engine.status().message();
  EXPECT_NE((*etc_engine)->int8_calibration().find("tokens of text: 12 of 12 dense layers"),
            std::string::npos)
      << (*etc_engine)->int8_calibration();
  auto plain = Engine::Create(c, w, TestTokenizer(), int8);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->int8_calibration().rfind("not calibrated", 0), 0u)
      << (*plain)->int8_calibration();
  auto fp32 = Engine::Create(c, w, TestTokenizer(), EngineOptions{2, "cpu"}, text);
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ((*fp32)->int8_calibration(), "");
  // Both int8 engines answer; the calibrated one is a different model (its rounding moved).
  QaRequest r;
  r.question = "where was Ada born";
  r.text = Document(4, 30, 6);
  const auto a = (*calibrated)->Answer(r), b = (*plain)->Answer(r), f = (*fp32)->Answer(r);
  ASSERT_TRUE(a.ok() && b.ok() && f.ok());
  EXPECT_NE(a->no_answer_score, b->no_answer_score);
  EXPECT_NEAR(a->no_answer_score, f->no_answer_score, 0.05 * std::abs(f->no_answer_score) + 0.01);
  auto empty = Engine::Create(c, w, TestTokenizer(), int8, "\n\n  \n");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("int8 calibration text"), std::string::npos)
      << empty.status().message();
}

// Checked int8 (EngineOptions::int8_recheck_margin): answers whose closest call is within the
// margin are computed again in fp32 and given as fp32 gives them; the others stay int8's.
TEST(EngineTest, CheckedInt8ComputesCloseCallsAgainInFp32) {
  if (!Int8LinearAvailable()) GTEST_FAIL() << "no int8 GEMM in this build";
  const ModelConfig c = TinyConfig("SCS", 24, 16, 3);
  const TensorMap w = SpreadWeights(c, 8);
  auto engine = [&](Precision precision, std::optional<float> margin, const ModelConfig& config) {
    EngineOptions options{2, "cpu", precision};
    options.int8_recheck_margin = margin;
    auto e = Engine::Create(config, w, TestTokenizer(), options);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return std::move(*e);
  };
  // The model's config.json value where the options leave it unset; the options' where set.
  ModelConfig checked_model = c;
  checked_model.int8_recheck_margin = 1e6;
  const auto fp32 = engine(Precision::kFp32, 0, c), int8 = engine(Precision::kInt8, {}, c);
  const auto all = engine(Precision::kInt8, {}, checked_model);
  EXPECT_EQ(int8->int8_recheck_margin(), 0.0f);
  EXPECT_EQ(all->int8_recheck_margin(), 1e6f);
  EXPECT_EQ(engine(Precision::kInt8, 0, checked_model)->int8_recheck_margin(), 0.0f);
  EXPECT_EQ(engine(Precision::kFp32, 1, c)->int8_recheck_margin(), 0.0f);  // not int8: no check
  EngineOptions negative{2, "cpu", Precision::kInt8};
  negative.int8_recheck_margin = -1.0f;
  EXPECT_EQ(Engine::Create(c, w, TestTokenizer(), negative).status().code(),
            absl::StatusCode::kInvalidArgument);

  std::vector<PreparedRequest> prepared;
  for (int i = 0; i < 8; ++i) {
    QaRequest r;
    r.question = Words(4, 40 + i);
    r.text = Document(2 + i % 4, 20 + 5 * i, 40 + i);
    r.options.n_best = 2;
    prepared.push_back(*fp32->Prepare(r));
  }
  std::vector<const PreparedRequest*> batch;
  for (const auto& p : prepared) batch.push_back(&p);
  auto same = [](const QaAnswer& a, const QaAnswer& b, float tolerance) {
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.long_answer.paragraph_index, b.long_answer.paragraph_index);
    EXPECT_NEAR(a.no_answer_score, b.no_answer_score, tolerance);
    EXPECT_NEAR(a.decision_margin, b.decision_margin, tolerance);
    ASSERT_EQ(a.short_answers.size(), b.short_answers.size());
    for (size_t k = 0; k < a.short_answers.size(); ++k) {
      EXPECT_EQ(a.short_answers[k].byte_begin, b.short_answers[k].byte_begin);
      EXPECT_NEAR(a.short_answers[k].score, b.short_answers[k].score, tolerance);
    }
  };
  Engine::BatchTiming timing;
  const auto reference = fp32->Run(batch), plain = int8->Run(batch, &timing);
  EXPECT_EQ(timing.rechecked, 0);
  // Every answer within the margin: the batch is fp32's, to the bit.
  const auto checked_all = all->Run(batch, &timing);
  EXPECT_EQ(timing.rechecked, 8);
  for (size_t i = 0; i < batch.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ASSERT_TRUE(reference[i].ok() && plain[i].ok() && checked_all[i].ok());
    same(*checked_all[i], *reference[i], 0.0f);
  }
  // A margin between int8's: those below it are fp32's answers (computed in a smaller batch:
  // equal within float rounding), the others int8's to the bit.
  std::vector<float> margins;
  for (const auto& a : plain) margins.push_back(a->decision_margin);
  std::vector<float> sorted = margins;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_LT(sorted[3], sorted[4]);
  ASSERT_TRUE(std::isfinite(sorted[4]));
  const auto some = engine(Precision::kInt8, (sorted[3] + sorted[4]) / 2, c);
  const auto checked_some = some->Run(batch, &timing);
  EXPECT_EQ(timing.rechecked, 4);
  int rechecked = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ASSERT_TRUE(checked_some[i].ok());
    if (margins[i] <= sorted[3]) {
      ++rechecked;
      same(*checked_some[i], *reference[i], 1e-4f);
    } else {
      same(*checked_some[i], *plain[i], 0.0f);
    }
  }
  EXPECT_EQ(rechecked, 4);
  // int8's rounding moved the answers at all (else the test above could not tell them apart).
  bool moved = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    moved |= plain[i]->no_answer_score != reference[i]->no_answer_score;
  }
  EXPECT_TRUE(moved);
}

TEST(EngineTest, LoadsAModelFolderAndAnswersLikeTheInMemoryModel) {
  const ModelConfig c = TinyConfig("SCS", 24, 16, 3);
  const TensorMap w = SpreadWeights(c, 8);
  const auto dir =
      std::filesystem::temp_directory_path() / ("longqa_engine_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << ModelConfigToJson(c);
  ASSERT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), w).ok());
  // The folder gets the test tokenizer's model file.
  const auto source = std::filesystem::temp_directory_path() /
                      ("longqa_test_spm_" + std::to_string(::getpid())) / "spm.model";
  TestTokenizer();  // makes sure the file exists
  std::filesystem::copy_file(source, dir / "spm.model",
                             std::filesystem::copy_options::overwrite_existing);
  auto loaded = Engine::LoadFromDir(dir.string(), EngineOptions{2, "cpu"});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const auto in_memory = MakeEngine(c, w);
  QaRequest r;
  r.question = "where was Ada born";
  r.text = Document(4, 30, 2);
  const auto a = (*loaded)->Answer(r);
  const auto b = in_memory->Answer(r);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->type, b->type);
  EXPECT_EQ(a->long_answer.byte_begin, b->long_answer.byte_begin);
  EXPECT_FLOAT_EQ(a->long_answer.score, b->long_answer.score);
  // The folder's calibration text, where it has one, calibrates int8.
  std::ofstream(dir / "calibration.txt") << Document(5, 40, 4);
  auto int8 = Engine::LoadFromDir(dir.string(), EngineOptions{2, "cpu", Precision::kInt8});
  ASSERT_TRUE(int8.ok()) << int8.status().message();
  EXPECT_EQ((*int8)->int8_calibration().rfind("calibrated on ", 0), 0u)
      << (*int8)->int8_calibration();
  std::filesystem::remove(dir / "model.safetensors");
  EXPECT_FALSE(Engine::LoadFromDir(dir.string(), EngineOptions{}).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace longqa
