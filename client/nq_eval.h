// Natural Questions evaluation, computed the way the official NQ script does for one annotation
// per example: a long answer is correct when its byte span equals the gold paragraph's; a short
// answer when its set of spans equals the gold set, or its yes/no equals the gold yes/no.
// Precision counts every non-null prediction, recall every non-null gold; F1 is reported with all
// predictions (scores ignored) and at the score threshold that maximises it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace longqa::cli {

struct ByteSpan {
  int64_t begin = -1;
  int64_t end = -1;
  bool null() const { return begin < 0; }
  bool operator==(const ByteSpan& o) const { return begin == o.begin && end == o.end; }
  bool operator<(const ByteSpan& o) const {
    return std::make_pair(begin, end) < std::make_pair(o.begin, o.end);
  }
};

struct NqGold {
  std::string example_id;
  ByteSpan long_answer;  // null: no long answer
  std::vector<ByteSpan> short_answers;
  std::string yes_no = "NONE";  // YES, NO or NONE
};

struct NqPrediction {
  std::string example_id;
  ByteSpan long_answer;
  double long_answer_score = 0;
  std::vector<ByteSpan> short_answers;
  double short_answers_score = 0;
  std::string yes_no = "NONE";
};

struct PrecisionRecall {
  double precision = 0, recall = 0, f1 = 0;
  double threshold = 0;  // the score cut (predictions with score ≥ it count)
};

struct NqScores {
  PrecisionRecall long_all, long_best, short_all, short_best;
  int64_t examples = 0, gold_long = 0, gold_short = 0;
};

// Predictions are matched to gold by example_id; a gold example without a prediction counts as
// a null prediction.
NqScores ScoreNq(const std::vector<NqGold>& gold, const std::vector<NqPrediction>& predictions);

// The null threshold chosen on a dev set, as NQ's evaluation picks its best score cut, but for
// the server's own no-answer rule (qa.proto): prediction i becomes null when margins[i] ≤
// threshold, where margins[i] = best_answer_score - no_answer_score and forced[i] is what the
// model answers when it must answer. The threshold maximises long F1 + short F1 (ties: the one
// closest to 0); candidates lie midway between consecutive margins, and below / above them all.
struct NullCalibration {
  double threshold = 0;
  NqScores scores;                        // at the threshold
  std::vector<NqPrediction> predictions;  // at the threshold
};
NullCalibration CalibrateNullThreshold(const std::vector<NqGold>& gold,
                                       const std::vector<NqPrediction>& forced,
                                       const std::vector<double>& margins);
// The same per document-length band (config.json null_threshold_bands): band 0 holds the examples
// whose document has fewer than bounds[0] tokens, band b those from bounds[b-1] up to bounds[b]
// (the last: from bounds.back() up), and each gets the threshold chosen on its own examples.
// gold[i], forced[i], margins[i] and document_tokens[i] describe one example. Throws
// std::invalid_argument when bounds are not positive and increasing or a band has no example.
struct BandedNullCalibration {
  std::vector<int64_t> bounds;
  std::vector<NullCalibration> bands;  // bounds.size() + 1 of them; scores on the band's examples
  std::vector<int64_t> band_examples;  // how many examples each band had
  std::vector<NqPrediction> predictions;  // all examples, each at its band's threshold
};
// Throws std::invalid_argument unless bounds are positive and strictly increasing.
void CheckNullBandBounds(const std::vector<int64_t>& bounds);
BandedNullCalibration CalibrateNullThresholdBands(const std::vector<NqGold>& gold,
                                                  const std::vector<NqPrediction>& forced,
                                                  const std::vector<double>& margins,
                                                  const std::vector<int64_t>& document_tokens,
                                                  const std::vector<int64_t>& bounds);
// `forced` with every prediction whose margin is ≤ threshold made null.
std::vector<NqPrediction> ApplyNullThreshold(const std::vector<NqPrediction>& forced,
                                             const std::vector<double>& margins, double threshold);

}  // namespace longqa::cli
