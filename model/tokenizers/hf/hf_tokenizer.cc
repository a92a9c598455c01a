#include "model/tokenizers/hf/hf_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/json_number.h"
#include "model/tokenizers/hf/unicode_props.h"

namespace longqa {
namespace {

// Whether the character at text[pos] is whitespace (what an added token's lstrip/rstrip takes
// in); sets its byte length.
bool WhitespaceAt(std::string_view text, size_t pos, size_t* length) {
  char32_t c;
  const int decoded = unicode::DecodeUtf8(text, pos, &c);
  if (decoded == 0 || !unicode::IsWhitespace(c)) return false;
  *length = static_cast<size_t>(decoded);
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto tokenizer = Parse(buffer.str());
  if (!tokenizer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", tokenizer.status().message()));
  }
  return tokenizer;
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::Parse(const std::string& json_text) {
  const nlohmann::json spec = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (spec.is_discarded() || !spec.is_object()) {
    return absl::InvalidArgumentError("tokenizer.json is not a JSON object");
  }
  std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer());
  try {
    auto model = MakeHfModel(spec.at("model"));
    if (!model.ok()) return model.status();
    tokenizer->model_ = std::move(*model);
    auto normalizer = MakeHfNormalizer(spec.value("normalizer", nlohmann::json()));
    if (!normalizer.ok()) return normalizer.status();
    tokenizer->normalizer_ = std::move(*normalizer);
    auto pre_tokenizer = MakeHfPreTokenizer(spec.value("pre_tokenizer", nlohmann::json()));
    if (!pre_tokenizer.ok()) return pre_tokenizer.status();
    tokenizer->pre_tokenizer_ = std::move(*pre_tokenizer);

    const nlohmann::json post = spec.value("post_processor", nlohmann::json());
    std::vector<nlohmann::json> processors;
    if (post.is_object() && post.value("type", "") == "Sequence") {
      processors.assign(post.at("processors").begin(), post.at("processors").end());
    } else if (post.is_object()) {
      processors.push_back(post);
    }
    for (const nlohmann::json& processor : processors) {
      const std::string type = processor.value("type", "");
      if ((type == "ByteLevel" || type == "RobertaProcessing") &&
          processor.value("trim_offsets", true)) {
        tokenizer->trim_offsets_ = true;
        tokenizer->trim_keeps_prefix_space_ = processor.value("add_prefix_space", true);
      }
    }

    tokenizer->added_by_first_byte_.resize(256);
    for (const nlohmann::json& token : spec.value("added_tokens", nlohmann::json::array())) {
      AddedToken added;
      added.content = token.at("content").get<std::string>();
      if (!JsonInteger(token.at("id"), &added.id) || added.id < 0 ||
          added.id == std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError("tokenizer.json: added token \"" + added.content +
                                          "\" has the id " + token.at("id").dump());
      }
      added.lstrip = token.value("lstrip", false);
      added.rstrip = token.value("rstrip", false);
      if (added.content.empty()) continue;
      if (token.value("single_word", false) || token.value("normalized", false)) {
        return absl::UnimplementedError(absl::StrCat(
            "tokenizer.json: added token \"", added.content,
            "\" is single_word or normalized; only raw-text added tokens are supported"));
      }
      tokenizer->added_by_first_byte_[static_cast<unsigned char>(added.content[0])].push_back(
          static_cast<int>(tokenizer->added_.size()));
      tokenizer->added_.push_back(std::move(added));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: ", e.what()));
  }
  if (tokenizer->trim_offsets_) {
    const auto is_space = [](char32_t c) {
      return c == ByteToChar(' ') || unicode::IsWhitespace(c);
    };
    tokenizer->edge_spaces_.resize(tokenizer->vocab_size());
    for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) {
      const std::u32string chars = NormalizedText::FromUtf8(tokenizer->IdToPiece(id)).chars;
      int32_t leading = 0, trailing = 0;
      const auto n = static_cast<int32_t>(chars.size());
      while (leading < n && is_space(chars[leading])) ++leading;
      while (trailing < n && is_space(chars[n - 1 - trailing])) ++trailing;
      tokenizer->edge_spaces_[id] = {leading, trailing};
    }
  }
  return tokenizer;
}

const HfTokenizer::AddedToken* HfTokenizer::AddedTokenAt(std::string_view text, size_t pos) const {
  const AddedToken* best = nullptr;
  for (int index : added_by_first_byte_[static_cast<unsigned char>(text[pos])]) {
    const AddedToken& token = added_[index];
    if (text.compare(pos, token.content.size(), token.content) == 0 &&
        (best == nullptr || token.content.size() > best->content.size())) {
      best = &token;
    }
  }
  return best;
}

void HfTokenizer::EncodeSegment(std::string_view text, size_t begin, size_t end, int64_t* next_word,
                                std::vector<Piece>* pieces) const {
  if (end <= begin) return;
  std::vector<NormalizedText> words;
  words.push_back(
      NormalizedText::FromUtf8(text.substr(begin, end - begin), static_cast<int64_t>(begin)));
  if (normalizer_ != nullptr) normalizer_->Normalize(&words[0]);
  if (pre_tokenizer_ != nullptr) pre_tokenizer_->Split(&words);
  for (const NormalizedText& word : words) {
    const size_t first = pieces->size();
    model_->Tokenize(word, pieces);
    for (size_t i = first; i < pieces->size(); ++i) (*pieces)[i].word = *next_word;
    if (pieces->size() > first) ++*next_word;
  }
}

bool HfTokenizer::Encode(std::string_view text, std::vector<Piece>* pieces,
                         std::string* /*error*/) const {
  pieces->clear();
  size_t segment_begin = 0;
  int64_t next_word = 0;
  for (size_t pos = 0; pos < text.size();) {
    const AddedToken* token = added_.empty() ? nullptr : AddedTokenAt(text, pos);
    if (token == nullptr) {
      ++pos;
      continue;
    }
    size_t match_begin = pos;
    size_t match_end = pos + token->content.size();
    if (token->lstrip) {
      // Whitespace before the token, back to the previous match, joins it.
      while (match_begin > segment_begin) {
        size_t back = match_begin - 1;
        while (back > segment_begin &&
               unicode::IsUtf8Continuation(static_cast<unsigned char>(text[back]))) {
          --back;
        }
        size_t length;
        if (!WhitespaceAt(text, back, &length) || back + length != match_begin) break;
        match_begin = back;
      }
    }
    if (token->rstrip) {
      size_t length;
      while (match_end < text.size() && WhitespaceAt(text, match_end, &length)) {
        match_end += length;
      }
    }
    EncodeSegment(text, segment_begin, match_begin, &next_word, pieces);
    pieces->push_back(Piece{token->id, static_cast<int64_t>(match_begin),
                            static_cast<int64_t>(match_end), next_word++});
    segment_begin = pos = match_end;
  }
  EncodeSegment(text, segment_begin, text.size(), &next_word, pieces);
  if (trim_offsets_) TrimOffsets(text, pieces);
  return true;
}

void HfTokenizer::TrimOffsets(std::string_view text, std::vector<Piece>* pieces) const {
  const auto is_continuation = [&](int64_t pos) {
    return unicode::IsUtf8Continuation(static_cast<unsigned char>(text[pos]));
  };
  for (size_t i = 0; i < pieces->size(); ++i) {
    Piece& piece = (*pieces)[i];
    auto [leading, trailing] = edge_spaces_[piece.id];
    if (leading > 0) {
      // The one space tokenizers added before the first word stays counted.
      const bool first = i == 0 || piece.byte_begin == 0;
      if (first && trim_keeps_prefix_space_ && leading == 1) leading = 0;
      for (; leading > 0 && piece.byte_begin < piece.byte_end; --leading) {
        ++piece.byte_begin;
        while (piece.byte_begin < piece.byte_end && is_continuation(piece.byte_begin)) {
          ++piece.byte_begin;
        }
      }
    }
    for (; trailing > 0 && piece.byte_end > piece.byte_begin; --trailing) {
      --piece.byte_end;
      while (piece.byte_end > piece.byte_begin && is_continuation(piece.byte_end)) {
        --piece.byte_end;
      }
    }
  }
}

int32_t HfTokenizer::vocab_size() const {
  int32_t size = model_->vocabulary().size();
  for (const AddedToken& token : added_) size = std::max(size, token.id + 1);
  return size;
}

int32_t HfTokenizer::PieceToId(const std::string& piece) const {
  for (const AddedToken& token : added_) {
    if (token.content == piece) return token.id;
  }
  return model_->vocabulary().Find(piece);
}

std::string HfTokenizer::IdToPiece(int32_t id) const {
  for (const AddedToken& token : added_) {
    if (token.id == id) return token.content;
  }
  return model_->vocabulary().Piece(id);
}

}  // namespace longqa
