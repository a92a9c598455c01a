#include "model/tokenizers/sentencepiece_trainer.h"

#include <sentencepiece_trainer.h>

#include <unordered_map>

namespace longqa {

bool TrainSentencePiece(const std::string& input_path, const std::string& model_prefix,
                        int vocab_size, const std::map<std::string, std::string>& options,
                        std::string* error) {
  std::unordered_map<std::string, std::string> args = {
      {"input", input_path},
      {"model_prefix", model_prefix},
      {"vocab_size", std::to_string(vocab_size)},
      {"model_type", "unigram"},
      {"character_coverage", "1.0"},
      {"minloglevel", "2"},
      // Identity normalization keeps piece offsets a plain slice of the caller's bytes.
      {"normalization_rule_name", "identity"},
      {"num_threads", "1"},
      // RoBERTa's ids for the specials, and the paragraph token right after them (id 4).
      {"bos_id", "0"},
      {"pad_id", "1"},
      {"eos_id", "2"},
      {"unk_id", "3"},
      {"bos_piece", "<s>"},
      {"eos_piece", "</s>"},
      {"pad_piece", "<pad>"},
      {"unk_piece", "<unk>"},
      {"user_defined_symbols", "<P>"},
  };
  for (const auto& [key, value] : options) args[key] = value;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  if (!status.ok()) {
    *error = "sentencepiece training failed: " + status.ToString();
    return false;
  }
  return true;
}

}  // namespace longqa
