// longqa: the command-line client of longqa-server.
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "base/version.h"
#include "client/commands.h"
#include "client/connection.h"

namespace {

// Each command's flags, as `longqa COMMAND --help` prints them (and `longqa --help`, all of them).
const std::vector<std::pair<std::string, std::string>>& Commands() {
  static const std::vector<std::pair<std::string, std::string>> commands = {
      {"ask",
       "  ask     --question=Q [--file=DOC | document on stdin] [--json] [--n_best=N]\n"
       "          [--max_short_answer_tokens=N] [--null_threshold=X] [--no_color]\n"},
      {"batch",
       "  batch   --input=in.jsonl --output=out.jsonl [--concurrency=4] [--max_attempts=5]\n"
       "          [--no_progress]   (lines: {\"id\", \"question\", \"document\" | "
       "\"paragraphs\"})\n"},
      {"eval",
       "  eval    --gold=gold.jsonl [--output=predictions.json] [--concurrency=4]\n"
       "          [--group_by=FIELD] [--calibrate_null [--null_bands=4096,...]]\n"
       "          NQ long/short precision, recall, F1 (gold format: docs/cli.md)\n"},
      {"bench",
       "  bench   [--concurrency=1 | --rate=R] [--duration_s=10] [--requests=N] [--file=DOC |\n"
       "          --doc_words=2000] [--question=Q] [--csv=out.csv]\n"},
      {"health", "  health  the server's grpc.health.v1 status (exit 0 when SERVING)\n"},
      {"info", "  info    the served model and the server's limits\n"},
  };
  return commands;
}

constexpr char kExitCodes[] =
    "Exit codes: 0 success, 2 usage error (also a missing or non-UTF-8 input file), 3 no server\n"
    "(UNAVAILABLE), 4 server error, 5 deadline (--timeout_s) exceeded, 6 authentication refused.\n";

// The usage of one command ("" for all of them).
std::string Usage(const std::string& command = "") {
  std::string usage = "longqa: the longqa question-answering client.\n\n";
  if (command.empty()) {
    usage += "Usage: longqa COMMAND [flags]\n\nCommands:\n";
    for (const auto& [name, flags] : Commands()) usage += flags;
    usage += "  version, help\n";
  } else {
    usage += "Usage: longqa " + command + " [flags]\n\n";
    for (const auto& [name, flags] : Commands()) {
      if (name == command) usage += flags;
    }
  }
  usage += "\nConnection flags (every command that talks to a server):\n";
  usage += longqa::cli::kConnectionHelp;
  usage += "\n";
  usage += kExitCodes;
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
    std::cout << Usage(command);
    return kExitOk;
  } catch (const UsageError& e) {
    std::cerr << "longqa " << command << ": " << e.what() << "\n\n" << Usage(command);
    return kExitUsage;
  }
  std::cerr << "longqa: unknown command " << command << "\n\n" << Usage();
  return kExitUsage;
}
