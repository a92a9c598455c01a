#include "model/tokenizers/hf/models.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "base/json_number.h"
#include "base/status_macros.h"
#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

// The piece `id` standing for characters [begin, end) of the word.
Piece PieceOf(const NormalizedText& word, size_t begin, size_t end, int32_t id) {
  const OriginalBytes range = word.OriginalRange(begin, end);
  return Piece{id, range.begin, range.end};
}

// A {"piece": id, ...} vocabulary (WordPiece, BPE).
absl::Status ReadVocabObject(const nlohmann::json& spec, const char* type, Vocabulary* vocabulary) {
  for (const auto& [piece, value] : spec.at("vocab").items()) {
    int32_t id = 0;
    if (!JsonInteger(value, &id) || id < 0 || id == std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: ", type, " piece \"", piece,
                                                     "\" has the id ", value.dump()));
    }
    if (!vocabulary->Add(piece, id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: ", type, " piece \"", piece, "\" appears twice"));
    }
  }
  return absl::OkStatus();
}

// Greedy longest-match-first WordPiece, as BERT and tokenizers do it: a word longer than
// max_input_chars_per_word, or one with any part that no piece covers, becomes a single unk.
class WordPieceModel : public HfModel {
 public:
  void Tokenize(const NormalizedText& word, std::vector<Piece>* pieces) const override {
    if (word.empty()) return;
    if (static_cast<int64_t>(word.size()) > max_chars_per_word_) {
      pieces->push_back(PieceOf(word, 0, word.size(), unk_id_));
      return;
    }
    std::vector<size_t> char_bytes;
    const std::string utf8 = word.Utf8(&char_bytes);

    const size_t first_new = pieces->size();
    std::string candidate;
    size_t start = 0;
    while (start < word.size()) {
      int32_t found = -1;
      size_t end = word.size();
      for (; end > start; --end) {
        const std::string_view part(utf8.data() + char_bytes[start],
                                    char_bytes[end] - char_bytes[start]);
        if (start == 0) {
          found = vocabulary_.Find(part);
        } else {
          candidate.assign(prefix_);
          candidate.append(part);
          found = vocabulary_.Find(candidate);
        }
        if (found >= 0) break;
      }
      if (found < 0) {
        pieces->resize(first_new);
        pieces->push_back(PieceOf(word, 0, word.size(), unk_id_));
        return;
      }
      pieces->push_back(PieceOf(word, start, end, found));
      start = end;
    }
  }

  static absl::StatusOr<std::unique_ptr<HfModel>> Make(const nlohmann::json& spec) {
    auto model = std::make_unique<WordPieceModel>();
    LONGQA_RETURN_IF_ERROR(ReadVocabObject(spec, "WordPiece", &model->vocabulary_));
    model->prefix_ = spec.value("continuing_subword_prefix", "##");
    if (const auto it = spec.find("max_input_chars_per_word");
        it != spec.end() && !JsonInteger(*it, &model->max_chars_per_word_)) {
      return absl::InvalidArgumentError("tokenizer.json: WordPiece max_input_chars_per_word " +
                                        it->dump());
    }
    const std::string unk = spec.value("unk_token", "[UNK]");
    model->unk_id_ = model->vocabulary_.Find(unk);
    if (model->unk_id_ < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: WordPiece unk_token \"", unk, "\" is not in the vocab"));
    }
    return model;
  }

 private:
  std::string prefix_;
  int64_t max_chars_per_word_ = 100;
  int32_t unk_id_ = 0;
};

// BPE as tokenizers applies it: each character of the word starts as a symbol (with the
// continuing-subword prefix / end-of-word suffix where configured; unknown characters become
// unk, fused if asked, or vanish without an unk token), then merges are applied lowest rank
// first, leftmost first among equal ranks, through a heap (a word of n symbols costs
// O(n log n), so one enormous word cannot stall a request).
class BpeModel : public HfModel {
 public:
  void Tokenize(const NormalizedText& word, std::vector<Piece>* pieces) const override {
    if (word.empty()) return;
    std::string piece;
    if (ignore_merges_) {
      const int32_t id = vocabulary_.Find(word.Utf8());
      if (id >= 0) {
        pieces->push_back(PieceOf(word, 0, word.size(), id));
        return;
      }
    }
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    int32_t pending_unk_begin = -1;  // char index where a pending (fusable) unk starts
    const auto flush_unk = [&](size_t end) {
      if (pending_unk_begin >= 0) {
        symbols.push_back({unk_id_, static_cast<size_t>(pending_unk_begin), end});
        pending_unk_begin = -1;
      }
    };
    for (size_t i = 0; i < word.size(); ++i) {
      piece.clear();
      if (i > 0) piece += prefix_;
      unicode::AppendUtf8(word.chars[i], &piece);
      if (i + 1 == word.size()) piece += suffix_;
      const int32_t id = vocabulary_.Find(piece);
      if (id >= 0) {
        flush_unk(i);
        symbols.push_back({id, i, i + 1});
      } else if (unk_id_ >= 0) {
        if (pending_unk_begin >= 0 && !fuse_unk_) flush_unk(i);
        if (pending_unk_begin < 0) pending_unk_begin = static_cast<int32_t>(i);
      }
    }
    flush_unk(word.size());
    MergeAll(&symbols);
    for (const Symbol& symbol : symbols) {
      if (!symbol.removed)
        pieces->push_back(PieceOf(word, symbol.char_begin, symbol.char_end, symbol.id));
    }
  }

  static absl::StatusOr<std::unique_ptr<HfModel>> Make(const nlohmann::json& spec) {
    auto model = std::make_unique<BpeModel>();
    LONGQA_RETURN_IF_ERROR(ReadVocabObject(spec, "BPE", &model->vocabulary_));
    if (spec.value("byte_fallback", false)) {
      return absl::UnimplementedError("tokenizer.json: BPE byte_fallback is not supported");
    }
    const auto text_or_empty = [&](const char* key) {
      const auto it = spec.find(key);
      return it == spec.end() || it->is_null() ? std::string() : it->get<std::string>();
    };
    model->prefix_ = text_or_empty("continuing_subword_prefix");
    model->suffix_ = text_or_empty("end_of_word_suffix");
    model->fuse_unk_ = spec.value("fuse_unk", false);
    model->ignore_merges_ = spec.value("ignore_merges", false);
    const std::string unk = text_or_empty("unk_token");
    if (!unk.empty()) {
      model->unk_id_ = model->vocabulary_.Find(unk);
      if (model->unk_id_ < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("tokenizer.json: BPE unk_token \"", unk, "\" is not in the vocab"));
      }
    }
    int32_t rank = 0;
    for (const nlohmann::json& merge : spec.at("merges")) {
      // "a b" (tokenizers < 0.20) or ["a", "b"].
      std::string left, right;
      if (merge.is_string()) {
        const std::string text = merge.get<std::string>();
        const size_t space = text.find(' ', 1);
        if (space == std::string::npos) {
          return absl::InvalidArgumentError(
              absl::StrCat("tokenizer.json: BPE merge \"", text, "\" is not \"a b\""));
        }
        left = text.substr(0, space);
        right = text.substr(space + 1);
      } else {
        left = merge.at(0).get<std::string>();
        right = merge.at(1).get<std::string>();
      }
      const int32_t left_id = model->vocabulary_.Find(left);
      const int32_t right_id = model->vocabulary_.Find(right);
      // With a continuing-subword prefix, "a" + "##b" makes "ab".
      const bool prefixed = !model->prefix_.empty() && right.rfind(model->prefix_, 0) == 0;
      const std::string merged_piece = left + right.substr(prefixed ? model->prefix_.size() : 0);
      const int32_t merged = model->vocabulary_.Find(merged_piece);
      if (left_id < 0 || right_id < 0 || merged < 0) {
        return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: BPE merge \"", left, " ",
                                                       right, "\" uses pieces not in the vocab"));
      }
      model->merges_.emplace(PairKey(left_id, right_id), std::make_pair(rank++, merged));
    }
    return model;
  }

 private:
  struct Symbol {
    int32_t id;
    size_t char_begin, char_end;
    bool removed = false;
  };
  struct Merge {
    int32_t rank;
    size_t pos;
    int32_t new_id;
    // std::priority_queue pops the largest: the largest is the lowest rank, then leftmost.
    bool operator<(const Merge& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const std::pair<int32_t, int32_t>* FindMerge(int32_t left, int32_t right) const {
    const auto it = merges_.find(PairKey(left, right));
    return it == merges_.end() ? nullptr : &it->second;
  }

  void MergeAll(std::vector<Symbol>* symbols_ptr) const {
    std::vector<Symbol>& symbols = *symbols_ptr;
    const size_t n = symbols.size();
    // Doubly linked list over live symbols.
    std::vector<int64_t> prev(n), next(n);
    for (size_t i = 0; i < n; ++i) {
      prev[i] = static_cast<int64_t>(i) - 1;
      next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
    }
    std::priority_queue<Merge> queue;
    for (size_t i = 0; i + 1 < n; ++i) {
      if (const auto* m = FindMerge(symbols[i].id, symbols[i + 1].id)) {
        queue.push({m->first, i, m->second});
      }
    }
    while (!queue.empty()) {
      const Merge top = queue.top();
      queue.pop();
      Symbol& left = symbols[top.pos];
      if (left.removed || next[top.pos] < 0) continue;
      const size_t right_pos = static_cast<size_t>(next[top.pos]);
      const Symbol& right = symbols[right_pos];
      const auto* current = FindMerge(left.id, right.id);
      if (current == nullptr || current->second != top.new_id) continue;  // stale entry
      left.id = top.new_id;
      left.char_end = right.char_end;
      symbols[right_pos].removed = true;
      next[top.pos] = next[right_pos];
      if (next[right_pos] >= 0) prev[next[right_pos]] = static_cast<int64_t>(top.pos);
      if (prev[top.pos] >= 0) {
        const size_t p = static_cast<size_t>(prev[top.pos]);
        if (const auto* m = FindMerge(symbols[p].id, left.id)) queue.push({m->first, p, m->second});
      }
      if (next[top.pos] >= 0) {
        const auto* m = FindMerge(left.id, symbols[static_cast<size_t>(next[top.pos])].id);
        if (m != nullptr) queue.push({m->first, top.pos, m->second});
      }
    }
  }

  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // -> (rank, merged id)
  std::string prefix_, suffix_;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
};

// serde_json's table: the correctly rounded literals 1e0 ... 1e308.
double PowerOfTen(int n) {
  static const std::vector<double> table = [] {
    std::vector<double> t(309);
    for (int i = 0; i <= 308; ++i) t[i] = std::strtod(("1e" + std::to_string(i)).c_str(), nullptr);
    return t;
  }();
  return table[n];
}

// A score as tokenizers holds it. tokenizer.json holds shortest round-trip decimals; tokenizers
// reads them with serde_json's default parser, which is not correctly rounded: it takes the
// decimal digits as an integer, converts that to double, then divides (or multiplies) by one
// power of ten. For 17-digit scores this can land one ulp from the correctly rounded value,
// which decides Viterbi ties between equal-sum segmentations; so scores are re-read that way.
double AsSerdeJsonReadsIt(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  uint64_t digits = 0;
  int exponent = 0;
  bool negative = false, after_point = false;
  for (const char* c = text; c < result.ptr; ++c) {
    if (*c == '-') {
      negative = true;
    } else if (*c == '.') {
      after_point = true;
    } else if (*c == 'e' || *c == 'E') {
      exponent += std::atoi(c + 1);
      break;
    } else {
      digits = digits * 10 + static_cast<uint64_t>(*c - '0');
      if (after_point) --exponent;
    }
  }
  double f = static_cast<double>(digits);
  while (true) {
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude <= 308) {
      f = exponent >= 0 ? f * PowerOfTen(magnitude) : f / PowerOfTen(magnitude);
      break;
    }
    if (f == 0) break;
    f /= 1e308;
    exponent += 308;
  }
  return negative ? -f : f;
}

// Unigram (sentencepiece's model, as tokenizers runs it): the best-scoring segmentation by a
// forward Viterbi pass over character positions (ties keep the first candidate, shorter pieces
// first, as tokenizers' trie walk does); a character no one-character piece covers costs
// min_score - 10 as unk, and consecutive unks fuse into one piece.
class UnigramModel : public HfModel {
 public:
  void Tokenize(const NormalizedText& word, std::vector<Piece>* pieces) const override {
    if (word.empty()) return;
    std::vector<size_t> char_bytes;
    const std::string utf8 = word.Utf8(&char_bytes);
    const size_t n = word.size();
    struct Best {
      double score = 0;
      int64_t from = -1;  // start char of the last piece; -1 while unreached
      int32_t id = 0;
    };
    std::vector<Best> best(n + 1);
    best[0].from = 0;
    for (size_t start = 0; start < n; ++start) {
      const double base = best[start].score;
      bool has_single = false;
      const auto offer = [&](size_t end, int32_t id, double score) {
        Best& target = best[end];
        if (target.from < 0 || base + score > target.score) {
          target = {base + score, static_cast<int64_t>(start), id};
        }
      };
      for (size_t end = start + 1; end <= n; ++end) {
        const size_t length = char_bytes[end] - char_bytes[start];
        if (length > max_piece_bytes_) break;
        const int32_t id =
            vocabulary_.Find(std::string_view(utf8.data() + char_bytes[start], length));
        if (id < 0) continue;
        offer(end, id, scores_[id]);
        if (end == start + 1) has_single = true;
      }
      if (!has_single) offer(start + 1, unk_id_, min_score_ - 10.0);
    }
    // Back from the end; runs of unk become one piece (looked up again: the run's text may be a
    // piece of its own).
    std::vector<std::pair<size_t, size_t>> spans;  // char ranges, last first
    std::vector<int32_t> ids;
    for (size_t end = n; end > 0;) {
      const size_t start = static_cast<size_t>(best[end].from);
      if (best[end].id == unk_id_ && !ids.empty() && ids.back() == unk_id_ &&
          spans.back().first == end) {
        spans.back().first = start;
      } else {
        spans.push_back({start, end});
        ids.push_back(best[end].id);
      }
      end = start;
    }
    for (size_t k = spans.size(); k-- > 0;) {
      auto [start, end] = spans[k];
      int32_t id = ids[k];
      if (id == unk_id_) {
        const int32_t found = vocabulary_.Find(
            std::string_view(utf8.data() + char_bytes[start], char_bytes[end] - char_bytes[start]));
        if (found >= 0) id = found;
      }
      pieces->push_back(PieceOf(word, start, end, id));
    }
  }

  static absl::StatusOr<std::unique_ptr<HfModel>> Make(const nlohmann::json& spec) {
    auto model = std::make_unique<UnigramModel>();
    if (spec.value("byte_fallback", false)) {
      return absl::UnimplementedError("tokenizer.json: Unigram byte_fallback is not supported");
    }
    const auto unk = spec.find("unk_id");
    if (unk == spec.end() || unk->is_null()) {
      return absl::UnimplementedError("tokenizer.json: a Unigram model without unk_id");
    }
    if (!JsonInteger(*unk, &model->unk_id_) || model->unk_id_ < 0) {
      return absl::InvalidArgumentError("tokenizer.json: Unigram unk_id " + unk->dump());
    }
    int32_t id = 0;
    for (const nlohmann::json& entry : spec.at("vocab")) {
      const std::string piece = entry.at(0).get<std::string>();
      const double score = AsSerdeJsonReadsIt(entry.at(1).get<double>());
      model->vocabulary_.AddOrReplace(piece, id);
      model->scores_.push_back(score);
      model->min_score_ = std::min(model->min_score_, score);
      model->max_piece_bytes_ = std::max(model->max_piece_bytes_, piece.size());
      ++id;
    }
    if (model->unk_id_ < 0 || model->unk_id_ >= id) {
      return absl::InvalidArgumentError("tokenizer.json: Unigram unk_id is not in the vocab");
    }
    return model;
  }

 private:
  std::vector<double> scores_;  // by id
  double min_score_ = std::numeric_limits<double>::infinity();
  size_t max_piece_bytes_ = 0;
  int32_t unk_id_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HfModel>> MakeHfModel(const nlohmann::json& spec) {
  const std::string type = spec.value("type", "");
  if (type == "WordPiece") return WordPieceModel::Make(spec);
  if (type == "BPE") return BpeModel::Make(spec);
  if (type == "Unigram") return UnigramModel::Make(spec);
  return absl::UnimplementedError(
      absl::StrCat("tokenizer.json: model type \"", type, "\" is not supported"));
}

}  // namespace longqa
