// A tokenizer's piece <-> id table, with lookups by string_view (no allocation per lookup: the
// WordPiece and BPE inner loops look up many substrings).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace longqa {

class Vocabulary {
 public:
  // Adds id's piece; returns false when the piece already has another id.
  bool Add(std::string piece, int32_t id);
  // Adds id's piece; a piece seen before now looks up to this id (Unigram vocabularies may list
  // a special token twice; tokenizers keeps the last).
  void AddOrReplace(std::string piece, int32_t id);
  // -1 when absent.
  int32_t Find(std::string_view piece) const {
    const auto it = ids_.find(piece);
    return it == ids_.end() ? -1 : it->second;
  }
  // "" when the id has no piece.
  const std::string& Piece(int32_t id) const;
  // One past the largest id.
  int32_t size() const { return size_; }

 private:
  std::deque<std::string> storage_;  // stable addresses for the views below
  std::unordered_map<std::string_view, int32_t> ids_;
  std::unordered_map<int32_t, const std::string*> pieces_;
  int32_t size_ = 0;
};

}  // namespace longqa
