// The tokenizer interface: text in, pieces with byte offsets out, so that answers can be returned
// as byte spans of the caller's original text. Implementations: sentencepiece
// (sentencepiece_tokenizer.h); a model folder says which one it has (model/format/model_folder.h).
//
// This header stays free of Abseil and gRPC headers: sentencepiece declares its own
// absl::string_view, which clashes with real Abseil in one translation unit
// (docs/environment.md), and its implementation includes this interface. Errors are plain strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace longqa {

// One token of an encoded text. [byte_begin, byte_end) indexes the text given to Encode; a
// piece that stands for no input bytes (e.g. a lone word-boundary marker) has begin == end.
struct Piece {
  int32_t id = 0;
  int64_t byte_begin = 0;
  int64_t byte_end = 0;
  // The word the piece belongs to, counted from 0 in each Encode call: the pre-tokenizer's
  // splits of a tokenizer.json (its `word_ids`); -1 when the tokenizer has no notion of words.
  int64_t word = -1;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes UTF-8 text. Offsets are bytes into `text`. Thread-safe.
  virtual bool Encode(std::string_view text, std::vector<Piece>* pieces,
                      std::string* error) const = 0;

  virtual int32_t vocab_size() const = 0;
  // The id of a piece, or -1 when the vocabulary lacks it.
  virtual int32_t PieceToId(const std::string& piece) const = 0;
  virtual std::string IdToPiece(int32_t id) const = 0;
};

}  // namespace longqa
