// A tokenizer for document tests: words are runs without spaces, cut into pieces of at most 3
// bytes that share the word's number; piece ids count up from 10.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizers/tokenizer.h"

namespace longqa::testing_support {

class ThreeByteTokenizer : public Tokenizer {
 public:
  bool Encode(std::string_view text, std::vector<Piece>* pieces, std::string*) const override {
    pieces->clear();
    int64_t word = 0;
    for (size_t i = 0; i < text.size();) {
      if (text[i] == ' ') {
        ++i;
        continue;
      }
      size_t end = text.find(' ', i);
      if (end == std::string_view::npos) end = text.size();
      for (size_t p = i; p < end; p += 3) {
        pieces->push_back(Piece{static_cast<int32_t>(10 + pieces->size()), static_cast<int64_t>(p),
                                static_cast<int64_t>(std::min(p + 3, end)), word});
      }
      ++word;
      i = end;
    }
    return true;
  }
  int32_t vocab_size() const override { return 100; }
  int32_t PieceToId(const std::string&) const override { return -1; }
  std::string IdToPiece(int32_t) const override { return ""; }
};

}  // namespace longqa::testing_support
