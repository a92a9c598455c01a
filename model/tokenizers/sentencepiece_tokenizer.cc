// Wraps sentencepiece's processor. No Abseil or gRPC includes here (see tokenizer.h).
#include "model/tokenizers/sentencepiece_tokenizer.h"

#include <sentencepiece.pb.h>
#include <sentencepiece_processor.h>

namespace longqa {

struct SentencePieceTokenizer::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::Load(const std::string& model_path,
                                                                     std::string* error) {
  auto impl = std::make_unique<Impl>();
  const auto status = impl->processor.Load(model_path);
  if (!status.ok()) {
    *error = "cannot load sentencepiece model " + model_path + ": " + status.ToString();
    return nullptr;
  }
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::LoadFromBytes(
    const std::string& model_bytes, std::string* error) {
  auto impl = std::make_unique<Impl>();
  const auto status = impl->processor.LoadFromSerializedProto(model_bytes);
  if (!status.ok()) {
    *error = "cannot parse sentencepiece model: " + status.ToString();
    return nullptr;
  }
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
}

bool SentencePieceTokenizer::Encode(std::string_view text, std::vector<Piece>* pieces,
                                    std::string* error) const {
  sentencepiece::SentencePieceText spt;
  const auto status = impl_->processor.Encode(absl::string_view(text.data(), text.size()), &spt);
  if (!status.ok()) {
    *error = "sentencepiece encode failed: " + status.ToString();
    return false;
  }
  pieces->clear();
  pieces->reserve(spt.pieces_size());
  for (const auto& p : spt.pieces()) {
    pieces->push_back(Piece{static_cast<int32_t>(p.id()), static_cast<int64_t>(p.begin()),
                            static_cast<int64_t>(p.end())});
  }
  return true;
}

int32_t SentencePieceTokenizer::vocab_size() const { return impl_->processor.GetPieceSize(); }

int32_t SentencePieceTokenizer::PieceToId(const std::string& piece) const {
  const int id = impl_->processor.PieceToId(piece);
  // sentencepiece maps unknown pieces to unk; report "absent" unless the piece *is* unk.
  if (id == impl_->processor.unk_id() && impl_->processor.IdToPiece(id) != piece) return -1;
  return id;
}

std::string SentencePieceTokenizer::IdToPiece(int32_t id) const {
  return impl_->processor.IdToPiece(id);
}

}  // namespace longqa
