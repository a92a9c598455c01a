#include "client/nq_eval.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace longqa::cli {
namespace {

struct Judged {
  double score;
  bool non_null;  // the prediction answers
  bool correct;
};

PrecisionRecall At(const std::vector<Judged>& judged, int64_t gold_non_null, double threshold) {
  int64_t predicted = 0, correct = 0;
  for (const Judged& j : judged) {
    if (!j.non_null || j.score < threshold) continue;
    ++predicted;
    correct += j.correct;
  }
  PrecisionRecall pr;
  pr.threshold = threshold;
  pr.precision = predicted ? static_cast<double>(correct) / predicted : 0;
  pr.recall = gold_non_null ? static_cast<double>(correct) / gold_non_null : 0;
  pr.f1 =
      pr.precision + pr.recall > 0 ? 2 * pr.precision * pr.recall / (pr.precision + pr.recall) : 0;
  return pr;
}

void Summarise(const std::vector<Judged>& judged, int64_t gold_non_null, PrecisionRecall* all,
               PrecisionRecall* best) {
  *all = At(judged, gold_non_null, -std::numeric_limits<double>::infinity());
  *best = *all;
  for (const Judged& j : judged) {
    if (!j.non_null) continue;
    const PrecisionRecall pr = At(judged, gold_non_null, j.score);
    if (pr.f1 > best->f1) *best = pr;
  }
}

}  // namespace

NqScores ScoreNq(const std::vector<NqGold>& gold, const std::vector<NqPrediction>& predictions) {
  std::map<std::string, const NqPrediction*> by_id;
  for (const NqPrediction& p : predictions) by_id[p.example_id] = &p;
  const NqPrediction none;
  NqScores scores;
  std::vector<Judged> long_judged, short_judged;
  for (const NqGold& g : gold) {
    const auto it = by_id.find(g.example_id);
    const NqPrediction& p = it == by_id.end() ? none : *it->second;
    ++scores.examples;
    const bool gold_long = !g.long_answer.null();
    const bool gold_short = !g.short_answers.empty() || g.yes_no != "NONE";
    scores.gold_long += gold_long;
    scores.gold_short += gold_short;
    long_judged.push_back(
        {p.long_answer_score, !p.long_answer.null(), gold_long && p.long_answer == g.long_answer});
    const bool pred_short = !p.short_answers.empty() || p.yes_no != "NONE";
    bool short_correct = false;
    if (gold_short && pred_short) {
      if (p.yes_no != "NONE" || g.yes_no != "NONE") {
        short_correct = p.yes_no == g.yes_no;
      } else {
        short_correct = std::set<ByteSpan>(p.short_answers.begin(), p.short_answers.end()) ==
                        std::set<ByteSpan>(g.short_answers.begin(), g.short_answers.end());
      }
    }
    short_judged.push_back({p.short_answers_score, pred_short, short_correct});
  }
  Summarise(long_judged, scores.gold_long, &scores.long_all, &scores.long_best);
  Summarise(short_judged, scores.gold_short, &scores.short_all, &scores.short_best);
  return scores;
}

}  // namespace longqa::cli
