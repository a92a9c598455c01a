// The `longqa` CLI against a real server on loopback: every subcommand, its exit codes, its
// connection options (token, dns:/// target), eval's figures against hand counts, bench's bounds.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "model/format/safetensors.h"
#include "model/format/weights.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_models.h"
#include "tests/integration/test_pki.h"
#include "tools/random_model.h"

namespace longqa {
namespace {

using testing_support::ServerProcess;
namespace fs = std::filesystem;

fs::path Dir() {
  static const fs::path dir = testing_support::ProcessTempDir("longqa_cli_test_");
  return dir;
}

// A random model whose answer-type head always says SHORT, so every answer has spans.
const std::string& ModelDir() {
  static const std::string dir = [] {
    const RandomModelSpec spec = testing_support::SmallModelSpec();
    const std::string d = (Dir() / "model").string();
    if (!WriteRandomModel(spec, d).ok()) throw std::runtime_error("random model");
    auto config = LoadModelConfig(d + "/config.json");
    auto weights = LoadWeights(d + "/model.safetensors", *config);
    (*weights)["answer_type.bias"] = at::tensor({0.f, 0.f, 0.f, 20.f, 0.f});
    if (!WriteSafetensors(d + "/model.safetensors", *weights).ok()) throw std::runtime_error("w");
    return d;
  }();
  return dir;
}

struct CliRun {
  int code = -1;
  std::string out;
};

// Runs the CLI; `out` is its stdout, or stdout and stderr together when `with_stderr`.
CliRun Cli(const std::string& args, bool with_stderr = false) {
  const std::string command =
      std::string(LONGQA_CLI_BIN) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string Write(const std::string& name, const std::string& content) {
  const std::string path = (Dir() / name).string();
  std::ofstream(path) << content;
  return path;
}

const char kDocument[] =
    "The old bridge was built in 1820 by the river guild.\n\n"
    "The city has a north gate. Many people live near it.\n\n"
    "Winters are cold and the river freezes.";

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--model_dir=" + ModelDir()});
    ASSERT_TRUE(server_->ok()) << server_->log();
  }
  static void TearDownTestSuite() { delete server_; }
  static std::string Target() { return "--target=" + server_->address(); }
  static ServerProcess* server_;
};
ServerProcess* CliTest::server_ = nullptr;

TEST_F(CliTest, AskPrintsTheAnswerAndJson) {
  const std::string doc = Write("doc.txt", kDocument);
  const CliRun text =
      Cli("ask " + Target() + " --question='when was the bridge built' --file=" + doc);
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("answer: SHORT"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[["), std::string::npos) << "short answer highlighted: " << text.out;
  EXPECT_NE(text.out.find("timing:"), std::string::npos);
  const CliRun json = Cli("ask " + Target() + " --json --n_best=3 --question=bridge < " + doc);
  ASSERT_EQ(json.code, 0);
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["answer_type"], "SHORT");
  const auto& s = j["short_answers"][0];
  EXPECT_EQ(
      s["text"].get<std::string>(),
      std::string(kDocument).substr(s["byte_begin"].get<size_t>(),
                                    s["byte_end"].get<size_t>() - s["byte_begin"].get<size_t>()));
  EXPECT_LE(j["short_answers"].size(), 3u);
}

// Under a YES answer the span the CLI lists is a diagnostic, and it says so (the shipped model
// answers this README sample question YES: demo_model_test).
TEST(CliAskTest, LabelsTheSpanUnderAYesAnswerAsNotTheAnswer) {
  const char* source = std::getenv("LONGQA_SOURCE_DIR");  // set by CTest
  const std::string demo = std::string(source != nullptr ? source : ".") + "/models/demo";
  // fp32: the label is what this checks, on every CPU alike (auto would calibrate int8 at load
  // where there is no bf16: minutes under ASan).
  ServerProcess server({"--model_dir=" + demo, "--precision=fp32"});
  ASSERT_TRUE(server.ok()) << server.log();
  const CliRun run =
      Cli("ask --target=" + server.address() +
          " --question='Was Unyar Ulmbri born in Weslim?' --file=" + demo + "/sample.txt");
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("answer: YES"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("best span (not the answer): "), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("short answer:"), std::string::npos) << run.out;
}

TEST_F(CliTest, ExitCodesSayWhatWentWrong) {
  EXPECT_EQ(Cli("ask " + Target()).code, 2);                            // usage: no --question
  EXPECT_EQ(Cli("frobnicate").code, 2);                                 // usage: unknown command
  EXPECT_EQ(Cli("ask --bogus=1 --question=q").code, 2);                 // usage: unknown flag
  EXPECT_EQ(Cli("health --target=127.0.0.1:1 --timeout_s=3").code, 3);  // nobody listens
  const std::string empty = Write("empty.txt", "  \n\n ");
  EXPECT_EQ(Cli("ask " + Target() + " --question=q --file=" + empty).code, 4);  // server error
  EXPECT_EQ(Cli("--help").code, 0);
  EXPECT_EQ(Cli("version").code, 0);
  // A missing file and a binary one: usage errors naming the file, before any call.
  const CliRun missing = Cli("ask " + Target() + " --question=q --file=/nonexistent/doc.txt", true);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("cannot read --file /nonexistent/doc.txt"), std::string::npos)
      << missing.out;
  const std::string binary = Write("binary.bin", "ok text \x89PNG\r\n\x1a\n\xff");
  const CliRun bin = Cli("ask " + Target() + " --question=q --file=" + binary, true);
  EXPECT_EQ(bin.code, 2);
  EXPECT_NE(bin.out.find("is not UTF-8 text (a binary file?): byte 8 breaks it"), std::string::npos)
      << bin.out;
  // A deadline no call can meet: exit 5 (DEADLINE_EXCEEDED), not a connection failure.
  const std::string doc = Write("deadline_doc.txt", kDocument);
  const CliRun late =
      Cli("ask " + Target() + " --question=q --timeout_s=0.0001 --file=" + doc, true);
  EXPECT_EQ(late.code, 5) << late.out;
}

TEST_F(CliTest, HealthInfoAndDnsTarget) {
  EXPECT_EQ(Cli("health " + Target()).out, "SERVING\n");
  const CliRun info = Cli("info " + Target());
  EXPECT_EQ(info.code, 0);
  EXPECT_NE(info.out.find("cluster_former"), std::string::npos) << info.out;
  const std::string port = server_->address().substr(server_->address().rfind(':') + 1);
  // An IP literal: the dns resolver path without depending on /etc/hosts (minimal roots lack it).
  EXPECT_EQ(Cli("health --target=dns:///127.0.0.1:" + port).code, 0);
}

TEST_F(CliTest, BatchWritesOneLinePerInput) {
  const std::string input = Write(
      "in.jsonl",
      "{\"id\": \"p1\", \"question\": \"bridge\", \"document\": \"The bridge is old.\"}\n"
      "{\"id\": \"p2\", \"question\": \"gate\", \"paragraphs\": [\"A gate.\", \"A north gate.\"]}\n"
      "{\"id\": \"p3\", \"question\": \"\", \"document\": \"empty question fails\"}\n");
  const std::string output = (Dir() / "out.jsonl").string();
  const CliRun run =
      Cli("batch " + Target() + " --concurrency=2 --input=" + input + " --output=" + output);
  EXPECT_EQ(run.code, 4);  // one request failed
  std::ifstream in(output);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["id"], "p1");
  EXPECT_EQ(lines[1]["long_answer"]["paragraph_index"].get<int>() < 2, true);
  EXPECT_EQ(lines[2]["error"]["code"], 3);  // INVALID_ARGUMENT
}

TEST_F(CliTest, BatchReportsMalformedLinesAndGoesOn) {
  const std::string input =
      Write("mixed.jsonl",
            "{\"id\": \"a\", \"question\": \"bridge\", \"document\": \"The bridge.\"}\n"
            "{not json\n"
            "\n"
            "{\"id\": \"c\", \"document\": \"no question\"}\n"
            "{\"id\": \"d\", \"question\": \"gate\", \"document\": \"A gate.\"}\n");
  const std::string output = (Dir() / "mixed-out.jsonl").string();
  const CliRun run = Cli("batch " + Target() + " --input=" + input + " --output=" + output);
  EXPECT_EQ(run.code, 4);  // some lines failed
  std::ifstream in(output);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 4u);  // one per non-blank input line, in input order
  EXPECT_EQ(lines[0]["id"], "a");
  EXPECT_FALSE(lines[0].contains("error"));
  EXPECT_EQ(lines[1]["line"], 2);
  EXPECT_EQ(lines[1]["error"]["code"], 3);
  EXPECT_NE(lines[1]["error"]["message"].get<std::string>().find("line 2: not JSON"),
            std::string::npos);
  EXPECT_EQ(lines[2]["line"], 4);
  EXPECT_NE(lines[2]["error"]["message"].get<std::string>().find("needs \"question\""),
            std::string::npos);
  EXPECT_EQ(lines[3]["id"], "d");
  EXPECT_FALSE(lines[3].contains("error"));
}

TEST_F(CliTest, FlagEdgesGetClearAnswers) {
  // A command's --help: its own flags, the connection flags and the exit codes, not the others'.
  for (const std::string command : {"ask", "batch", "eval", "bench", "health", "info"}) {
    for (const std::string flag : {" -h", " --help"}) {
      const CliRun run = Cli(command + flag);
      EXPECT_EQ(run.code, 0) << command << flag;
      EXPECT_NE(run.out.find("Usage: longqa " + command + " [flags]"), std::string::npos)
          << run.out;
      EXPECT_NE(run.out.find("  " + command + " "), std::string::npos) << run.out;
      EXPECT_NE(run.out.find("--timeout_s"), std::string::npos) << run.out;
      EXPECT_NE(run.out.find("5 deadline"), std::string::npos) << run.out;
      const std::string other = command == "ask" ? "--input=in.jsonl" : "--question=Q [--file";
      EXPECT_EQ(run.out.find(other), std::string::npos) << command << ": " << run.out;
    }
  }
  EXPECT_NE(Cli("--help").out.find("Usage: longqa COMMAND"), std::string::npos);
  const CliRun dir = Cli("ask " + Target() + " --question=q --file=" + Dir().string(), true);
  EXPECT_EQ(dir.code, 2);
  EXPECT_NE(dir.out.find("is a directory"), std::string::npos) << dir.out;
  for (const char* bad :
       {"--n_best=-1", "--n_best=0", "--timeout_s=-5", "--timeout_s=0", "--timeout_s=soon"}) {
    const CliRun run = Cli("ask " + Target() + " --question=q " + bad + " < /dev/null", true);
    EXPECT_EQ(run.code, 2) << bad;
    EXPECT_TRUE(run.out.find("must be at least") != std::string::npos ||
                run.out.find("must be positive") != std::string::npos ||
                run.out.find("must be a number") != std::string::npos)
        << bad << ": " << run.out;
  }
  const std::string not_pem = Write("not-a-ca.pem", "hello\n");
  const CliRun tls = Cli("health " + Target() + " --tls_ca=" + not_pem, true);
  EXPECT_EQ(tls.code, 2);
  EXPECT_NE(tls.out.find("holds no PEM CERTIFICATE block"), std::string::npos) << tls.out;
  EXPECT_EQ(tls.out.find("grpc.max_receive_message_length"), std::string::npos)
      << "channel arguments leaked: " << tls.out;
}

TEST_F(CliTest, EvalFiguresMatchHandCounts) {
  // First learn what the server answers, then build gold around it: examples 0-2 have the
  // server's own long answer (correct), 3 a different paragraph (wrong), 4 no answer (null gold).
  // Short gold: the server's span for 0, 1 and 3 (correct; 3's long answer is wrong but short
  // answers are judged on their own), a different span for 2 (wrong); none for 4.
  std::vector<std::string> docs, lines;
  for (int i = 0; i < 5; ++i) {
    docs.push_back("First paragraph " + std::to_string(i) +
                   " about the bridge.\n\n"
                   "Second paragraph about the north gate and the city.\n\n"
                   "Third paragraph on cold winters.");
    lines.push_back(nlohmann::json{
        {"id", "e" + std::to_string(i)}, {"question", "what gate"}, {"document", docs.back()}}
                        .dump());
  }
  std::string input;
  for (const auto& l : lines) input += l + "\n";
  const std::string answers_path = (Dir() / "answers.jsonl").string();
  ASSERT_EQ(Cli("batch " + Target() + " --input=" + Write("eval_in.jsonl", input) +
                " --output=" + answers_path)
                .code,
            0);
  std::ifstream answers_in(answers_path);
  std::string line, gold;
  for (int i = 0; std::getline(answers_in, line); ++i) {
    const auto a = nlohmann::json::parse(line);
    ASSERT_EQ(a["answer_type"], "SHORT");
    nlohmann::json long_answer = {{"start_byte", a["long_answer"]["byte_begin"]},
                                  {"end_byte", a["long_answer"]["byte_end"]}};
    nlohmann::json short_answer = {{"start_byte", a["short_answers"][0]["byte_begin"]},
                                   {"end_byte", a["short_answers"][0]["byte_end"]}};
    nlohmann::json g = {{"example_id", "e" + std::to_string(i)},
                        {"question", "what gate"},
                        {"document", docs[i]},
                        {"yes_no_answer", "NONE"},
                        {"kind", i < 3 ? "easy" : "hard"}};
    g["long_answer"] = long_answer;
    g["short_answers"] = nlohmann::json::array({short_answer});
    if (i == 2) g["short_answers"][0]["end_byte"] = short_answer["end_byte"].get<int>() + 1;
    if (i == 3) g["long_answer"]["start_byte"] = long_answer["start_byte"].get<int>() + 1;
    if (i == 4) {
      g["long_answer"] = nullptr;
      g["short_answers"] = nlohmann::json::array();
    }
    gold += g.dump() + "\n";
  }
  const std::string predictions = (Dir() / "predictions.json").string();
  const CliRun run = Cli("eval " + Target() + " --gold=" + Write("gold.jsonl", gold) +
                         " --group_by=kind --output=" + predictions);
  ASSERT_EQ(run.code, 0) << run.out;
  // By hand. Long: 5 predictions, correct 0,1,2 → P 3/5 = 0.6; 4 gold → R 0.75; F1 0.6667.
  // Short: 5 predictions, correct 0,1,3 → P 0.6; gold 0,1,2,3 → R 0.75; F1 0.6667.
  EXPECT_NE(run.out.find("long   all predictions:  P 0.6000  R 0.7500  F1 0.6667"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("short  all predictions:  P 0.6000  R 0.7500  F1 0.6667"),
            std::string::npos)
      << run.out;
  // Per group: "easy" = examples 0-2: long 3 of 3 correct (short 2 of 3); "hard" = 3 and 4:
  // long 0 correct of 2 predictions, 1 gold → P 0, R 0; short 1 correct (3) of 2, 1 gold → P .5,
  // R 1.
  EXPECT_NE(run.out.find("kind=easy: 3 examples (gold long 3, gold short 3)\n"
                         "long   all predictions:  P 1.0000  R 1.0000  F1 1.0000"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("kind=hard: 2 examples (gold long 1, gold short 1)"), std::string::npos);
  EXPECT_NE(run.out.find("short  all predictions:  P 0.5000  R 1.0000  F1 0.6667"),
            std::string::npos)
      << run.out;
  std::ifstream p(predictions);
  const auto official = nlohmann::json::parse(p);
  ASSERT_EQ(official["predictions"].size(), 5u);
  for (const char* key : {"example_id", "long_answer", "long_answer_score", "short_answers",
                          "short_answers_score", "yes_no_answer"}) {
    EXPECT_TRUE(official["predictions"][0].contains(key)) << key;
  }

  // --calibrate_null: every question answered gives the figures above (0.6667 + 0.6667); the
  // chosen threshold does at least as well, and the file holds the predictions at it.
  const CliRun calibrated = Cli("eval " + Target() + " --gold=" + Write("gold.jsonl", gold) +
                                " --calibrate_null --output=" + predictions);
  ASSERT_EQ(calibrated.code, 0) << calibrated.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(calibrated.out, m,
                                std::regex("null threshold (\\S+) \\(chosen on this set: long F1 "
                                           "([0-9.]+) \\+ short F1 ([0-9.]+); 0.6667 \\+ 0.6667 "
                                           "when every question is answered\\)")))
      << calibrated.out;
  EXPECT_GE(std::stod(m[2]) + std::stod(m[3]), 2 * 0.6667);
  // The long figures printed are those of the written predictions: a non-null one is the
  // server's own long answer, right for examples 0-2 (of 4 gold long answers).
  std::ifstream q(predictions);
  const auto at_threshold = nlohmann::json::parse(q);
  ASSERT_EQ(at_threshold["predictions"].size(), 5u);
  int predicted = 0, correct = 0;
  for (int i = 0; i < 5; ++i) {
    const bool answered = at_threshold["predictions"][i]["long_answer"]["start_byte"] != -1;
    predicted += answered;
    correct += answered && i < 3;
  }
  const double precision = predicted ? static_cast<double>(correct) / predicted : 0;
  const double recall = correct / 4.0;
  char expected_long[96];
  std::snprintf(expected_long, sizeof(expected_long), "long   all predictions:  P %.4f  R %.4f",
                precision, recall);
  EXPECT_NE(calibrated.out.find(expected_long), std::string::npos) << calibrated.out;

  // --null_bands: a threshold for each document length. Example 0's document has a few dozen
  // tokens; a long one (40 paragraphs) goes in the band from 200 tokens.
  std::string long_document;
  for (int i = 0; i < 40; ++i)
    long_document += "Paragraph " + std::to_string(i) + " on the gate.\n\n";
  nlohmann::json long_gold = {{"example_id", "long"},
                              {"question", "what gate"},
                              {"document", long_document},
                              {"long_answer", nullptr},
                              {"short_answers", nlohmann::json::array()}};
  const std::string banded_gold =
      Write("banded.jsonl", gold.substr(0, gold.find('\n') + 1) + long_gold.dump() + "\n");
  const CliRun banded =
      Cli("eval " + Target() + " --gold=" + banded_gold + " --calibrate_null --null_bands=200");
  ASSERT_EQ(banded.code, 0) << banded.out;
  EXPECT_TRUE(std::regex_search(
      banded.out, std::regex("null threshold \\S+ \\(chosen on 1 examples with fewer than 200 "
                             "document tokens: long F1 1.0000 \\+ short F1 1.0000\\)")))
      << banded.out;
  // The long document has no answer: at any threshold its band scores F1 0.
  EXPECT_TRUE(std::regex_search(
      banded.out, std::regex("null_threshold_band 200 \\S+ \\(chosen on 1 examples with 200 or "
                             "more document tokens: long F1 0.0000 \\+ short F1 0.0000\\)")))
      << banded.out;
  for (const char* bad : {"0", "200,100", "abc", "200,"}) {
    const CliRun refused =
        Cli("eval " + Target() + " --gold=" + banded_gold + " --calibrate_null --null_bands=" + bad,
            /*with_stderr=*/true);
    EXPECT_EQ(refused.code, 2) << bad << ": " << refused.out;
    EXPECT_NE(refused.out.find("--null_bands must be"), std::string::npos) << refused.out;
  }
  const CliRun empty_band = Cli(
      "eval " + Target() + " --gold=" + banded_gold + " --calibrate_null --null_bands=200,100000",
      /*with_stderr=*/true);
  EXPECT_EQ(empty_band.code, 2) << empty_band.out;
  EXPECT_NE(empty_band.out.find("no example has a document of 100000 or more tokens"),
            std::string::npos)
      << empty_band.out;
  EXPECT_EQ(Cli("eval " + Target() + " --gold=" + banded_gold + " --null_bands=200").code, 2);

  // --calibrate_null also calibrates the answer_score the model is not served with, on the same
  // forced answers: what a server of the same weights with config.json answer_score "type+long"
  // chooses for itself, and the other way round. The test model's type margins all lie within
  // float rounding of its SHORT bias, so that their order would be a coin toss: here the NO_ANSWER
  // row of the type head is scaled to spread them (the answers stay the same).
  std::vector<std::string> outputs;
  for (const std::string answer_score : {"type", "type+long"}) {
    const fs::path dir = Dir() / ("model_" + answer_score);
    fs::create_directories(dir);
    nlohmann::json config = nlohmann::json::parse(std::ifstream(ModelDir() + "/config.json"));
    config["answer_score"] = answer_score;
    std::ofstream(dir / "config.json") << config.dump();
    fs::copy_file(ModelDir() + "/spm.model", dir / "spm.model",
                  fs::copy_options::overwrite_existing);
    auto parsed = LoadModelConfig((dir / "config.json").string());
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    auto weights = LoadWeights(ModelDir() + "/model.safetensors", *parsed);
    ASSERT_TRUE(weights.ok()) << weights.status().message();
    (*weights)["answer_type.weight"][0].mul_(50);
    ASSERT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), *weights).ok());
    ServerProcess server({"--model_dir=" + dir.string()});
    ASSERT_TRUE(server.ok()) << server.log();
    const CliRun run =
        Cli("eval --target=" + server.address() + " --gold=" + (Dir() / "gold.jsonl").string() +
            " --calibrate_null --concurrency=1");
    ASSERT_EQ(run.code, 0) << run.out;
    outputs.push_back(run.out);
  }
  const std::regex own(
      "null threshold (\\S+) \\(chosen on this set: long F1 ([0-9.]+) \\+ short "
      "F1 ([0-9.]+);");
  auto other = [](const std::string& name) {
    return std::regex("with answer_score " + name +
                      ": null threshold (\\S+) \\(long F1 ([0-9.]+) \\+ short F1 ([0-9.]+)\\)");
  };
  std::smatch type_own, type_other, long_own, long_other;
  ASSERT_TRUE(std::regex_search(outputs[0], type_own, own)) << outputs[0];
  ASSERT_TRUE(std::regex_search(outputs[0], type_other, other("type\\+long"))) << outputs[0];
  ASSERT_TRUE(std::regex_search(outputs[1], long_own, own)) << outputs[1];
  ASSERT_TRUE(std::regex_search(outputs[1], long_other, other("type"))) << outputs[1];
  // The same threshold to float rounding (the server adds in float, the client in double), and
  // the same F1 figures.
  EXPECT_NEAR(std::stod(type_other[1]), std::stod(long_own[1]), 1e-3) << outputs[0] << outputs[1];
  EXPECT_NEAR(std::stod(long_other[1]), std::stod(type_own[1]), 1e-3) << outputs[0] << outputs[1];
  for (int k : {2, 3}) {
    EXPECT_EQ(type_other[k], long_own[k]);
    EXPECT_EQ(long_other[k], type_own[k]);
  }
  // The two rules differ here: every margin moved by its long score.
  EXPECT_GT(std::abs(std::stod(type_own[1]) - std::stod(long_own[1])), 1e-3);
}

TEST_F(CliTest, BenchStopsWithinItsBounds) {
  const std::string csv = (Dir() / "bench.csv").string();
  auto start = std::chrono::steady_clock::now();
  const CliRun timed = Cli("bench " + Target() + " --concurrency=4 --duration_s=2 --doc_words=300");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(timed.code, 0);
  EXPECT_LT(seconds, 10.0);
  EXPECT_NE(timed.out.find("throughput:"), std::string::npos);
  EXPECT_NE(timed.out.find("p99"), std::string::npos);
  EXPECT_NE(timed.out.find("server ms (mean): queue"), std::string::npos);
  const CliRun counted = Cli("bench " + Target() + " --requests=5 --duration_s=60 --csv=" + csv);
  EXPECT_EQ(counted.code, 0);
  EXPECT_NE(counted.out.find("bench: 5 requests"), std::string::npos) << counted.out;
  std::ifstream in(csv);
  int rows = 0;
  std::string row;
  while (std::getline(in, row)) ++rows;
  EXPECT_EQ(rows, 6);  // header + 5
  const CliRun paced = Cli("bench " + Target() + " --rate=5 --duration_s=2 --doc_words=100");
  EXPECT_EQ(paced.code, 0);
  EXPECT_NE(paced.out.find("bench: 10 requests"), std::string::npos) << paced.out;
}

TEST(CliTlsTest, TlsAndMutualTlsOptions) {
  const auto pki = testing_support::MakeCertificates(Dir().string());
  ASSERT_FALSE(pki.ca.empty()) << "openssl failed to make test certificates";
  ServerProcess server({"--model_dir=" + ModelDir(), "--tls_cert=" + pki.server_cert,
                        "--tls_key=" + pki.server_key, "--tls_client_ca=" + pki.ca});
  ASSERT_TRUE(server.ok()) << server.log();
  const std::string target = "--target=" + server.address() + " --timeout_s=5";
  EXPECT_EQ(Cli("health " + target + " --tls_ca=" + pki.ca + " --tls_cert=" + pki.client_cert +
                " --tls_key=" + pki.client_key)
                .out,
            "SERVING\n");
  EXPECT_EQ(Cli("health " + target + " --tls_ca=" + pki.ca).code, 3);  // no client certificate
  EXPECT_EQ(Cli("health " + target).code, 3);                          // plaintext
  EXPECT_EQ(Cli("health " + target + " --tls_ca=" + pki.ca + " --tls_cert=" + pki.client_cert).code,
            2);  // --tls_cert without --tls_key
}

TEST(CliAuthTest, TokenFileIsSent) {
  const std::string token = Write("cli_token", "t0ken\n");
  ServerProcess server({"--model_dir=" + ModelDir(), "--auth_token_file=" + token});
  ASSERT_TRUE(server.ok()) << server.log();
  const std::string doc = Write("auth_doc.txt", kDocument);
  EXPECT_EQ(Cli("ask --target=" + server.address() + " --question=q --file=" + doc).code, 6);
  const std::string wrong = Write("cli_wrong_token", "nope\n");
  EXPECT_EQ(Cli("ask --target=" + server.address() + " --question=q --token_file=" + wrong +
                " --file=" + doc)
                .code,
            6);
  EXPECT_EQ(Cli("ask --target=" + server.address() + " --question=q --token_file=" + token +
                " --file=" + doc)
                .code,
            0);
}

}  // namespace
}  // namespace longqa
