// longqa: the command-line client of longqa-server.
#include <cstring>
#include <iostream>
#include <string>

#include "base/version.h"
#include "client/commands.h"
#include "client/connection.h"

namespace {

const std::string& Usage() {
  static const std::string usage =
      std::string(
          "longqa: the longqa question-answering client.\n"
          "\n"
          "Usage: longqa COMMAND [flags]\n"
          "\n"
          "Commands:\n"
          "  ask     --question=Q [--file=DOC | document on stdin] [--json] [--n_best=N]\n"
          "          [--max_short_answer_tokens=N] [--null_threshold=X] [--no_color]\n"
          "  batch   --input=in.jsonl --output=out.jsonl [--concurrency=4] [--max_attempts=5]\n"
          "          [--no_progress]   (lines: {\"id\", \"question\", \"document\" | "
          "\"paragraphs\"})\n"
          "  eval    --gold=gold.jsonl [--output=predictions.json] [--concurrency=4]\n"
          "          [--group_by=FIELD] [--calibrate_null]\n"
          "          NQ long/short precision, recall, F1 (gold format: docs/cli.md)\n"
          "  bench   [--concurrency=1 | --rate=R] [--duration_s=10] [--requests=N] [--file=DOC |\n"
          "          --doc_words=2000] [--question=Q] [--csv=out.csv]\n"
          "  health  the server's grpc.health.v1 status (exit 0 when SERVING)\n"
          "  info    the served model and the server's limits\n"
          "  version, help\n"
          "\n"
          "Connection flags (every command that talks to a server):\n") +
      longqa::cli::kConnectionHelp +
      "\n"
      "Exit codes: 0 success, 2 usage error, 3 connection failure, 4 server error.\n";
  return usage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace longqa::cli;
  if (argc < 2) {
    std::cerr << Usage();
    return kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << Usage();
    return kExitOk;
  }
  if (command == "version" || command == "--version") {
    std::cout << "longqa " << longqa::kVersion << "\n";
    return kExitOk;
  }
  try {
    if (command == "ask") return RunAsk(argc, argv);
    if (command == "batch") return RunBatch(argc, argv);
    if (command == "eval") return RunEval(argc, argv);
    if (command == "bench") return RunBench(argc, argv);
    if (command == "health") return RunHealth(argc, argv);
    if (command == "info") return RunInfo(argc, argv);
  } catch (const HelpRequested&) {
    std::cout << Usage();
    return kExitOk;
  } catch (const UsageError& e) {
    std::cerr << "longqa " << command << ": " << e.what() << "\n\n" << Usage();
    return kExitUsage;
  }
  std::cerr << "longqa: unknown command " << command << "\n\n" << Usage();
  return kExitUsage;
}
