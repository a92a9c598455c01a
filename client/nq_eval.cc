#include "client/nq_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace longqa::cli {
namespace {

struct Judged {
  double score;
  bool non_null;  // the prediction answers
  bool correct;
};

// Precision, recall and F1 from counts of non-null predictions, correct ones and non-null gold.
PrecisionRecall FromCounts(int64_t predicted, int64_t correct, int64_t gold_non_null) {
  PrecisionRecall pr;
  pr.precision = predicted ? static_cast<double>(correct) / predicted : 0;
  pr.recall = gold_non_null ? static_cast<double>(correct) / gold_non_null : 0;
  pr.f1 =
      pr.precision + pr.recall > 0 ? 2 * pr.precision * pr.recall / (pr.precision + pr.recall) : 0;
  return pr;
}

PrecisionRecall At(const std::vector<Judged>& judged, int64_t gold_non_null, double threshold) {
  int64_t predicted = 0, correct = 0;
  for (const Judged& j : judged) {
    if (!j.non_null || j.score < threshold) continue;
    ++predicted;
    correct += j.correct;
  }
  PrecisionRecall pr = FromCounts(predicted, correct, gold_non_null);
  pr.threshold = threshold;
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

// One example judged both ways (long, short), by the official rules above.
struct ExampleJudgement {
  bool gold_long = false, gold_short = false;
  Judged long_answer{}, short_answer{};
};

ExampleJudgement Judge(const NqGold& g, const NqPrediction& p) {
  ExampleJudgement e;
  e.gold_long = !g.long_answer.null();
  e.gold_short = !g.short_answers.empty() || g.yes_no != "NONE";
  e.long_answer = {p.long_answer_score, !p.long_answer.null(),
                   e.gold_long && p.long_answer == g.long_answer};
  const bool pred_short = !p.short_answers.empty() || p.yes_no != "NONE";
  bool short_correct = false;
  if (e.gold_short && pred_short) {
    if (p.yes_no != "NONE" || g.yes_no != "NONE") {
      short_correct = p.yes_no == g.yes_no;
    } else {
      short_correct = std::set<ByteSpan>(p.short_answers.begin(), p.short_answers.end()) ==
                      std::set<ByteSpan>(g.short_answers.begin(), g.short_answers.end());
    }
  }
  e.short_answer = {p.short_answers_score, pred_short, short_correct};
  return e;
}

// The judgement of each gold example against its prediction (none: a null prediction).
std::vector<ExampleJudgement> JudgeAll(const std::vector<NqGold>& gold,
                                       const std::vector<NqPrediction>& predictions) {
  std::map<std::string, const NqPrediction*> by_id;
  for (const NqPrediction& p : predictions) by_id[p.example_id] = &p;
  const NqPrediction none;
  std::vector<ExampleJudgement> judged;
  for (const NqGold& g : gold) {
    const auto it = by_id.find(g.example_id);
    judged.push_back(Judge(g, it == by_id.end() ? none : *it->second));
  }
  return judged;
}

}  // namespace

NqScores ScoreNq(const std::vector<NqGold>& gold, const std::vector<NqPrediction>& predictions) {
  NqScores scores;
  std::vector<Judged> long_judged, short_judged;
  for (const ExampleJudgement& e : JudgeAll(gold, predictions)) {
    ++scores.examples;
    scores.gold_long += e.gold_long;
    scores.gold_short += e.gold_short;
    long_judged.push_back(e.long_answer);
    short_judged.push_back(e.short_answer);
  }
  Summarise(long_judged, scores.gold_long, &scores.long_all, &scores.long_best);
  Summarise(short_judged, scores.gold_short, &scores.short_all, &scores.short_best);
  return scores;
}

std::vector<NqPrediction> ApplyNullThreshold(const std::vector<NqPrediction>& forced,
                                             const std::vector<double>& margins, double threshold) {
  std::vector<NqPrediction> out;
  for (size_t i = 0; i < forced.size(); ++i) {
    if (margins[i] > threshold) {
      out.push_back(forced[i]);
    } else {
      NqPrediction null;
      null.example_id = forced[i].example_id;
      out.push_back(null);
    }
  }
  return out;
}

NullCalibration CalibrateNullThreshold(const std::vector<NqGold>& gold,
                                       const std::vector<NqPrediction>& forced,
                                       const std::vector<double>& margins) {
  // Judge every forced prediction once: a threshold only turns some of them null, and a null
  // prediction counts in neither precision nor recall's numerator.
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < forced.size(); ++i) index[forced[i].example_id] = i;
  int64_t gold_long = 0, gold_short = 0;
  std::vector<std::pair<double, ExampleJudgement>> judged;  // margin, judgement of forced
  const std::vector<ExampleJudgement> all = JudgeAll(gold, forced);
  for (size_t g = 0; g < gold.size(); ++g) {
    gold_long += all[g].gold_long;
    gold_short += all[g].gold_short;
    const auto it = index.find(gold[g].example_id);
    const double margin =
        it == index.end() ? -std::numeric_limits<double>::infinity() : margins[it->second];
    judged.push_back({margin, all[g]});
  }
  std::vector<double> sorted = margins;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> candidates;
  if (sorted.empty()) {
    candidates.push_back(0);
  } else {
    candidates.push_back(sorted.front() - 1);
    for (size_t i = 0; i + 1 < sorted.size(); ++i) {
      if (sorted[i] < sorted[i + 1]) candidates.push_back((sorted[i] + sorted[i + 1]) / 2);
    }
    candidates.push_back(sorted.back() + 1);
  }
  double best_threshold = 0, best_sum = -1;
  for (double t : candidates) {
    int64_t long_predicted = 0, long_correct = 0, short_predicted = 0, short_correct = 0;
    for (const auto& [margin, e] : judged) {
      if (margin <= t) continue;
      long_predicted += e.long_answer.non_null;
      long_correct += e.long_answer.non_null && e.long_answer.correct;
      short_predicted += e.short_answer.non_null;
      short_correct += e.short_answer.non_null && e.short_answer.correct;
    }
    const double sum = FromCounts(long_predicted, long_correct, gold_long).f1 +
                       FromCounts(short_predicted, short_correct, gold_short).f1;
    if (sum > best_sum + 1e-12 ||
        (sum > best_sum - 1e-12 && std::abs(t) < std::abs(best_threshold))) {
      best_sum = sum;
      best_threshold = t;
    }
  }
  NullCalibration c;
  c.threshold = best_threshold;
  c.predictions = ApplyNullThreshold(forced, margins, best_threshold);
  c.scores = ScoreNq(gold, c.predictions);
  return c;
}

void CheckNullBandBounds(const std::vector<int64_t>& bounds) {
  for (size_t b = 0; b < bounds.size(); ++b) {
    if (bounds[b] <= (b == 0 ? 0 : bounds[b - 1])) {
      throw std::invalid_argument("band bounds must be positive and increasing");
    }
  }
}

BandedNullCalibration CalibrateNullThresholdBands(const std::vector<NqGold>& gold,
                                                  const std::vector<NqPrediction>& forced,
                                                  const std::vector<double>& margins,
                                                  const std::vector<int64_t>& document_tokens,
                                                  const std::vector<int64_t>& bounds) {
  CheckNullBandBounds(bounds);
  const size_t n = bounds.size() + 1;
  std::vector<std::vector<size_t>> members(n);  // example indices of each band, in order
  for (size_t i = 0; i < gold.size(); ++i) {
    members[std::upper_bound(bounds.begin(), bounds.end(), document_tokens[i]) - bounds.begin()]
        .push_back(i);
  }
  BandedNullCalibration c;
  c.bounds = bounds;
  c.predictions.resize(gold.size());
  for (size_t b = 0; b < n; ++b) {
    if (members[b].empty()) {
      throw std::invalid_argument(
          b == 0 ? "no example has a document under " + std::to_string(bounds[0]) + " tokens"
                 : "no example has a document of " + std::to_string(bounds[b - 1]) +
                       (b < bounds.size() ? " to " + std::to_string(bounds[b] - 1) : " or more") +
                       " tokens");
    }
    std::vector<NqGold> band_gold;
    std::vector<NqPrediction> band_forced;
    std::vector<double> band_margins;
    for (size_t i : members[b]) {
      band_gold.push_back(gold[i]);
      band_forced.push_back(forced[i]);
      band_margins.push_back(margins[i]);
    }
    c.bands.push_back(CalibrateNullThreshold(band_gold, band_forced, band_margins));
    c.band_examples.push_back(static_cast<int64_t>(members[b].size()));
    // The band's predictions at its threshold, back in the examples' order.
    for (size_t k = 0; k < members[b].size(); ++k) {
      c.predictions[members[b][k]] = c.bands.back().predictions[k];
    }
  }
  return c;
}

}  // namespace longqa::cli
