// longqa-tokenize: runs a tokenizer file (a Hugging Face tokenizer.json or a sentencepiece
// spm.model) over texts and prints each text's pieces as "id:begin:end" (byte offsets), one
// line per text; or, with --bench, the throughput in MB/s. The inputs are JSON lines, one JSON
// string each, so that texts may hold newlines and control characters. The tokenizer parity
// test (tests/integration/test_tokenizers.py) and bench/tokenizer_speed.py drive it.
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizers/hf/hf_tokenizer.h"
#include "model/tokenizers/sentencepiece_tokenizer.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, tokenizer, "", "tokenizer.json or spm.model");
ABSL_FLAG(std::string, input, "", "JSON-lines file, one JSON string (a text) per line");
ABSL_FLAG(double, bench_seconds, 0, "If > 0: encode the inputs repeatedly this long, print MB/s");

namespace longqa {
namespace {

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  if (absl::EndsWith(path, ".json")) {
    auto tokenizer = HfTokenizer::Load(path);
    if (!tokenizer.ok()) return tokenizer.status();
    return std::unique_ptr<Tokenizer>(std::move(*tokenizer));
  }
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = SentencePieceTokenizer::Load(path, &error);
  if (tokenizer == nullptr) return absl::InvalidArgumentError(error);
  return tokenizer;
}

absl::StatusOr<std::vector<std::string>> ReadTexts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<std::string> texts;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json text = nlohmann::json::parse(line, nullptr, false);
    if (!text.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": line ", texts.size() + 1, " is not a JSON string"));
    }
    texts.push_back(text.get<std::string>());
  }
  return texts;
}

int Run() {
  auto tokenizer = LoadTokenizer(absl::GetFlag(FLAGS_tokenizer));
  auto texts = ReadTexts(absl::GetFlag(FLAGS_input));
  for (const absl::Status& status : {tokenizer.status(), texts.status()}) {
    if (!status.ok()) {
      std::cerr << "longqa-tokenize: " << status << "\n";
      return 1;
    }
  }
  std::vector<Piece> pieces;
  std::string error;
  const double bench_seconds = absl::GetFlag(FLAGS_bench_seconds);
  if (bench_seconds > 0) {
    int64_t bytes = 0, tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < bench_seconds) {
      for (const std::string& text : *texts) {
        (*tokenizer)->Encode(text, &pieces, &error);
        bytes += static_cast<int64_t>(text.size());
        tokens += static_cast<int64_t>(pieces.size());
      }
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::cout << "bytes " << bytes << " tokens " << tokens << " seconds " << elapsed << " MB/s "
              << bytes / elapsed / 1e6 << "\n";
    return 0;
  }
  std::string out;
  for (const std::string& text : *texts) {
    if (!(*tokenizer)->Encode(text, &pieces, &error)) {
      std::cerr << "longqa-tokenize: " << error << "\n";
      return 1;
    }
    out.clear();
    for (const Piece& piece : pieces) {
      if (!out.empty()) out += ' ';
      absl::StrAppend(&out, piece.id, ":", piece.byte_begin, ":", piece.byte_end);
    }
    std::cout << out << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace longqa

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Tokenizes JSON-lines texts: longqa-tokenize --tokenizer=F --input=F");
  absl::ParseCommandLine(argc, argv);
  return longqa::Run();
}
