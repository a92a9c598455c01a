// longqa eval: a gold set through the server, predictions in the official Natural Questions
// format, and NQ long/short precision, recall and F1 (client/nq_eval.h). The gold format is in
// docs/cli.md.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/commands.h"
#include "client/connection.h"
#include "client/nq_eval.h"
#include "client/requests.h"
#include "longqa/v1/qa.grpc.pb.h"

namespace longqa::cli {
namespace {

ByteSpan SpanFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return {};
  return {j.at("start_byte").get<int64_t>(), j.at("end_byte").get<int64_t>()};
}

nlohmann::json SpanJson(const ByteSpan& s) {
  return {{"start_byte", s.begin}, {"end_byte", s.end}, {"start_token", -1}, {"end_token", -1}};
}

void PrintScores(const char* name, const PrecisionRecall& all, const PrecisionRecall& best) {
  std::printf("%-6s all predictions:  P %.4f  R %.4f  F1 %.4f\n", name, all.precision, all.recall,
              all.f1);
  if (std::isinf(best.threshold)) {
    std::printf("%-6s best threshold:   P %.4f  R %.4f  F1 %.4f  (no cut beats all predictions)\n",
                name, best.precision, best.recall, best.f1);
  } else {
    std::printf("%-6s best threshold:   P %.4f  R %.4f  F1 %.4f  (score >= %.4f)\n", name,
                best.precision, best.recall, best.f1, best.threshold);
  }
}

// --null_bands=4096[,16384...]: the first document-token count of each band after the first.
std::vector<int64_t> ParseNullBands(const std::string& text) {
  std::vector<int64_t> bounds;
  if (text.empty()) return bounds;
  const UsageError bad(
      "--null_bands must be increasing positive token counts (\"4096\" or "
      "\"4096,16384\"), not \"" +
      text + "\"");
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    try {
      bounds.push_back(std::stoll(item, &used));
    } catch (const std::exception&) {
      throw bad;
    }
    if (used != item.size()) throw bad;
    start = comma + 1;
  }
  try {
    CheckNullBandBounds(bounds);
  } catch (const std::invalid_argument&) {
    throw bad;
  }
  return bounds;
}

// The served model's answer_score (ModelInfo), or "" where it has none to choose: a qa_format
// "squad" model (no long-answer head), or a server that does not say.
std::string ServedAnswerScore(const Connection& connection) {
  auto stub = v1::QuestionAnswering::NewStub(connection.channel());
  grpc::ClientContext context;
  connection.Prepare(&context);
  v1::ModelInfo info;
  if (!stub->GetModelInfo(&context, {}, &info).ok() || info.qa_format() != "nq") return "";
  return info.answer_score();
}

}  // namespace

int RunEval(int argc, char** argv) {
  std::set<std::string> known = ConnectionFlags();
  known.insert({"gold", "output", "concurrency", "max_attempts", "group_by", "null_bands"});
  const Args args(argc, argv, 2, known, {"no_progress", "calibrate_null"});
  // --calibrate_null: every request must answer (a threshold far below any logit margin), and the
  // null threshold is then chosen on this set (CalibrateNullThreshold); with --null_bands, one a
  // document-length band (config.json null_threshold_bands).
  const bool calibrate = args.GetBool("calibrate_null");
  if (!args.Has("gold")) throw UsageError("eval needs --gold");
  const std::vector<int64_t> bounds = ParseNullBands(args.Get("null_bands"));
  if (!bounds.empty() && !calibrate) throw UsageError("--null_bands needs --calibrate_null");
  std::vector<NqGold> gold;
  std::vector<v1::AnswerRequest> requests;
  std::vector<std::string> groups;  // the --group_by field of every example
  const std::string group_by = args.Get("group_by");
  for (const auto& [n, j] : ReadJsonLines(args.Get("gold"), "--gold")) {
    if (!group_by.empty()) {
      groups.push_back(
          j.contains(group_by)
              ? (j[group_by].is_string() ? j[group_by].get<std::string>() : j[group_by].dump())
              : "(none)");
    }
    try {
      NqGold g;
      g.example_id = j.at("example_id").is_string() ? j["example_id"].get<std::string>()
                                                    : j["example_id"].dump();
      if (j.contains("long_answer")) g.long_answer = SpanFromJson(j["long_answer"]);
      for (const auto& s : j.value("short_answers", nlohmann::json::array())) {
        g.short_answers.push_back(SpanFromJson(s));
      }
      g.yes_no = j.value("yes_no_answer", std::string("NONE"));
      gold.push_back(g);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("--gold line " + std::to_string(n) + ": " + e.what());
    }
    requests.push_back(RequestFromJson(j, n));
    requests.back().set_request_id(gold.back().example_id);
    if (calibrate) requests.back().mutable_options()->set_null_threshold(-1e30f);
  }
  const Connection connection(args);
  RunnerOptions options;
  options.concurrency = static_cast<int>(args.GetInt("concurrency", 4, 1));
  options.max_attempts = static_cast<int>(args.GetInt("max_attempts", 5, 1));
  options.progress = !args.GetBool("no_progress") && isatty(STDERR_FILENO);
  const std::vector<RunResult> results = RunAll(connection, requests, options);

  std::vector<NqPrediction> predictions;
  std::vector<double> margins;           // best_answer_score - no_answer_score, per prediction
  std::vector<double> long_scores;       // the long answer's score, per prediction (0: none)
  std::vector<int64_t> document_tokens;  // per prediction (0 for a failed request)
  int64_t failed = 0;
  bool unreachable = false;
  for (size_t i = 0; i < results.size(); ++i) {
    NqPrediction p;
    p.example_id = gold[i].example_id;
    const RunResult& r = results[i];
    double margin = -std::numeric_limits<double>::infinity();  // a failed request stays null
    int64_t tokens = 0;
    if (!r.status.ok()) {
      ++failed;
      unreachable |= r.status.error_code() == grpc::StatusCode::UNAVAILABLE;
      std::fprintf(stderr, "eval: %s: %s\n", p.example_id.c_str(),
                   r.status.error_message().c_str());
    } else {
      const v1::AnswerResponse& a = r.response;
      margin = static_cast<double>(a.best_answer_score()) - a.no_answer_score();
      tokens = a.usage().document_tokens();
      // A probability, comparable across examples (logits are not): 1 - P(no answer).
      const double confidence =
          a.answer_type_probabilities_size() > 0 ? 1.0 - a.answer_type_probabilities(0) : 0.0;
      const int type = a.answer_type();
      if (type != v1::ANSWER_TYPE_NO_ANSWER && a.has_long_answer()) {
        p.long_answer = {static_cast<int64_t>(a.long_answer().byte_begin()),
                         static_cast<int64_t>(a.long_answer().byte_end())};
      }
      if (type == v1::ANSWER_TYPE_SHORT && a.short_answers_size() > 0) {
        p.short_answers.push_back({static_cast<int64_t>(a.short_answers(0).byte_begin()),
                                   static_cast<int64_t>(a.short_answers(0).byte_end())});
      }
      if (type == v1::ANSWER_TYPE_YES) p.yes_no = "YES";
      if (type == v1::ANSWER_TYPE_NO) p.yes_no = "NO";
      p.long_answer_score = p.short_answers_score = confidence;
    }
    long_scores.push_back(
        r.status.ok() && r.response.has_long_answer() ? r.response.long_answer().score() : 0.0);
    predictions.push_back(std::move(p));
    margins.push_back(margin);
    document_tokens.push_back(tokens);
  }
  if (calibrate && !bounds.empty()) {
    BandedNullCalibration c;
    try {
      c = CalibrateNullThresholdBands(gold, predictions, margins, document_tokens, bounds);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--null_bands: ") + e.what() + " in --gold");
    }
    // The first line keeps --calibrate_null's form (scripts read the threshold after "null
    // threshold "); the bands' lines are what config.json's null_threshold_bands take.
    for (size_t b = 0; b < c.bands.size(); ++b) {
      const NullCalibration& band = c.bands[b];
      const std::string examples = std::to_string(c.band_examples[b]) + " examples with " +
                                   (b == 0 ? "fewer than " + std::to_string(bounds[0])
                                           : std::to_string(bounds[b - 1]) + " or more") +
                                   " document tokens";
      const std::string label =
          b == 0 ? "null threshold" : "null_threshold_band " + std::to_string(bounds[b - 1]);
      std::printf("%s %.6g (chosen on %s: long F1 %.4f + short F1 %.4f)\n", label.c_str(),
                  band.threshold, examples.c_str(), band.scores.long_all.f1,
                  band.scores.short_all.f1);
    }
    predictions = std::move(c.predictions);  // everything below is at the bands' thresholds
  } else if (calibrate) {
    const NqScores forced = ScoreNq(gold, predictions);
    NullCalibration c = CalibrateNullThreshold(gold, predictions, margins);
    std::printf(
        "null threshold %.6g (chosen on this set: long F1 %.4f + short F1 %.4f; %.4f + "
        "%.4f when every question is answered)\n",
        c.threshold, c.scores.long_all.f1, c.scores.short_all.f1, forced.long_all.f1,
        forced.short_all.f1);
    // The other answer_score (config.json) on the same forced answers, so that a model's choice
    // of it is made on dev too: "type+long" adds each answer's long score to its margin.
    const std::string served = ServedAnswerScore(connection);
    if (served == "type" || served == "type+long") {
      const double sign = served == "type" ? 1.0 : -1.0;
      std::vector<double> other = margins;
      for (size_t i = 0; i < other.size(); ++i) other[i] += sign * long_scores[i];
      const NullCalibration o = CalibrateNullThreshold(gold, predictions, other);
      std::printf("with answer_score %s: null threshold %.6g (long F1 %.4f + short F1 %.4f)\n",
                  served == "type" ? "type+long" : "type", o.threshold, o.scores.long_all.f1,
                  o.scores.short_all.f1);
    }
    predictions = std::move(c.predictions);  // everything below is at the chosen threshold
  }
  nlohmann::json official = {{"predictions", nlohmann::json::array()}};
  for (const NqPrediction& p : predictions) {
    nlohmann::json shorts = nlohmann::json::array();
    for (const ByteSpan& s : p.short_answers) shorts.push_back(SpanJson(s));
    official["predictions"].push_back(
        {{"example_id", p.example_id},
         {"long_answer", p.long_answer.null() ? SpanJson({-1, -1}) : SpanJson(p.long_answer)},
         {"long_answer_score", p.long_answer_score},
         {"short_answers", shorts},
         {"short_answers_score", p.short_answers_score},
         {"yes_no_answer", p.yes_no}});
  }
  if (args.Has("output")) {
    std::ofstream out(args.Get("output"));
    if (!out) throw UsageError("cannot write --output " + args.Get("output"));
    out << official.dump(1) << "\n";
  }
  const NqScores s = ScoreNq(gold, predictions);
  std::printf("examples %lld (gold long %lld, gold short %lld), failed requests %lld\n",
              static_cast<long long>(s.examples), static_cast<long long>(s.gold_long),
              static_cast<long long>(s.gold_short), static_cast<long long>(failed));
  PrintScores("long", s.long_all, s.long_best);
  PrintScores("short", s.short_all, s.short_best);
  if (!group_by.empty()) {
    std::map<std::string, std::pair<std::vector<NqGold>, std::vector<NqPrediction>>> by_group;
    for (size_t i = 0; i < gold.size(); ++i) {
      by_group[groups[i]].first.push_back(gold[i]);
      by_group[groups[i]].second.push_back(predictions[i]);
    }
    for (const auto& [group, pair] : by_group) {
      const NqScores g = ScoreNq(pair.first, pair.second);
      std::printf("\n%s=%s: %lld examples (gold long %lld, gold short %lld)\n", group_by.c_str(),
                  group.c_str(), static_cast<long long>(g.examples),
                  static_cast<long long>(g.gold_long), static_cast<long long>(g.gold_short));
      PrintScores("long", g.long_all, g.long_best);
      PrintScores("short", g.short_all, g.short_best);
    }
  }
  if (failed == 0) return kExitOk;
  return unreachable && failed == static_cast<int64_t>(results.size()) ? kExitConnection
                                                                       : kExitServer;
}

}  // namespace longqa::cli
