// longqa-random-model: writes a model folder with random weights and a freshly trained tokenizer.
// For tests, benchmarks and trying the server before a trained model exists; it answers nonsense.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "tools/random_model.h"

ABSL_FLAG(std::string, out, "", "Folder to write (created if missing)");
ABSL_FLAG(std::string, architecture, "cluster_former", "cluster_former or etc");
ABSL_FLAG(std::string, layers, "SSCS",
          "Layer plan: S, C, N, K, I letters (cluster_former; docs/model-format.md), E (etc)");
ABSL_FLAG(int64_t, hidden_size, 64, "d");
ABSL_FLAG(int64_t, num_heads, 4, "Attention heads");
ABSL_FLAG(int64_t, intermediate_size, 128, "FFN width");
ABSL_FLAG(int64_t, window_tokens, 64, "Cluster-Former window l");
ABSL_FLAG(int64_t, stride_tokens, 48, "Cluster-Former stride m");
ABSL_FLAG(int64_t, clusters, 8, "Centroids per C or N layer");
ABSL_FLAG(int64_t, etc_radius, 16, "ETC local radius r");
ABSL_FLAG(int64_t, vocab_size, 400, "Sentencepiece vocabulary (an upper bound)");
ABSL_FLAG(std::string, corpus, "", "Text to train the tokenizer on (default: generated)");
ABSL_FLAG(std::string, spm_normalization, "identity",
          "sentencepiece normalization rule of spm.model (identity, nmt_nfkc, nfkc, ...)");
ABSL_FLAG(int64_t, max_question_tokens, 32, "Question pieces kept");
ABSL_FLAG(bool, exact_match, false,
          "Add the exact-match input feature (config exact_match_feature)");
ABSL_FLAG(uint64_t, seed, 1, "Random seed");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Writes a random-weight longqa model folder: longqa-random-model --out=DIR");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_out).empty()) {
    std::cerr << "longqa-random-model: --out is required\n";
    return 2;
  }
  longqa::RandomModelSpec spec;
  spec.architecture = absl::GetFlag(FLAGS_architecture);
  spec.layers = absl::GetFlag(FLAGS_layers);
  spec.hidden_size = absl::GetFlag(FLAGS_hidden_size);
  spec.num_heads = absl::GetFlag(FLAGS_num_heads);
  spec.intermediate_size = absl::GetFlag(FLAGS_intermediate_size);
  spec.window_tokens = absl::GetFlag(FLAGS_window_tokens);
  spec.stride_tokens = absl::GetFlag(FLAGS_stride_tokens);
  spec.clusters = absl::GetFlag(FLAGS_clusters);
  spec.etc_radius = absl::GetFlag(FLAGS_etc_radius);
  spec.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  spec.corpus_path = absl::GetFlag(FLAGS_corpus);
  spec.spm_normalization = absl::GetFlag(FLAGS_spm_normalization);
  spec.max_question_tokens = absl::GetFlag(FLAGS_max_question_tokens);
  spec.exact_match_feature = absl::GetFlag(FLAGS_exact_match);
  spec.seed = absl::GetFlag(FLAGS_seed);
  const absl::Status status = longqa::WriteRandomModel(spec, absl::GetFlag(FLAGS_out));
  if (!status.ok()) {
    std::cerr << "longqa-random-model: " << status.message() << "\n";
    return 1;
  }
  std::cout << "wrote " << absl::GetFlag(FLAGS_out) << "\n";
  return 0;
}
