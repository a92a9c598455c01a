// The sentencepiece tokenizer with byte offsets: every piece knows which bytes of the caller's
// UTF-8 text it came from, so answers can be returned as byte spans of the original text.
//
// This header and tokenizer.cc stay free of Abseil and gRPC headers: sentencepiece declares its
// own absl::string_view, which clashes with real Abseil in one translation unit
// (../shared/ENVIRONMENT.md). Errors are reported as plain strings here.
#pragma once

#include <cstdint>
#include <memory>
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
};

class Tokenizer {
 public:
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Loads a sentencepiece model file; on failure returns nullptr and sets *error.
  static std::unique_ptr<Tokenizer> Load(const std::string& model_path, std::string* error);
  // Loads a model from its serialized bytes.
  static std::unique_ptr<Tokenizer> LoadFromBytes(const std::string& model_bytes,
                                                  std::string* error);

  // Encodes UTF-8 text. Offsets are bytes into `text`. Thread-safe.
  bool Encode(std::string_view text, std::vector<Piece>* pieces, std::string* error) const;

  int32_t vocab_size() const;
  // The id of a piece, or -1 when the vocabulary lacks it.
  int32_t PieceToId(const std::string& piece) const;
  std::string IdToPiece(int32_t id) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace longqa
