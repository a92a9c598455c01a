#include "model/tokenizers/hf/vocabulary.h"

#include <algorithm>

namespace longqa {

bool Vocabulary::Add(std::string piece, int32_t id) {
  const auto it = ids_.find(piece);
  if (it != ids_.end()) return it->second == id;
  storage_.push_back(std::move(piece));
  const std::string& stored = storage_.back();
  ids_.emplace(std::string_view(stored), id);
  pieces_[id] = &stored;
  size_ = std::max(size_, id + 1);
  return true;
}

void Vocabulary::AddOrReplace(std::string piece, int32_t id) {
  const auto it = ids_.find(piece);
  if (it != ids_.end()) {
    // The string the key views is stored already: the earlier id's piece.
    pieces_[id] = pieces_.at(it->second);
    it->second = id;
    size_ = std::max(size_, id + 1);
    return;
  }
  Add(std::move(piece), id);
}

const std::string& Vocabulary::Piece(int32_t id) const {
  static const std::string kNone;
  const auto it = pieces_.find(id);
  return it == pieces_.end() ? kNone : *it->second;
}

}  // namespace longqa
