#include "model/format/config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/json_number.h"
#include "base/status_macros.h"
#include "model/format/weights.h"

namespace longqa {
namespace {

using nlohmann::json;

template <typename T>
absl::Status Read(const json& j, const char* key, T* out, bool required) {
  if (!j.contains(key)) {
    if (required)
      return absl::InvalidArgumentError(absl::StrCat("config: missing key '", key, "'"));
    return absl::OkStatus();
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!JsonInteger(j.at(key), out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: key '", key, "' must be an integer that fits ", sizeof(T) * 8,
                       " bits, not ", j.at(key).dump()));
    }
    return absl::OkStatus();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!JsonFloat(j.at(key), out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: key '", key, "' must be a finite number, not ", j.at(key).dump()));
    }
    return absl::OkStatus();
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    const json& list = j.at(key);
    out->clear();
    for (size_t i = 0; list.is_array() && i < list.size(); ++i) {
      if (!JsonInteger(list[i], &out->emplace_back())) break;
    }
    if (!list.is_array() || out->size() != list.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: key '", key, "' must be a list of 64-bit integers, not ", list.dump()));
    }
    return absl::OkStatus();
  } else {
    try {
      *out = j.at(key).get<T>();
    } catch (const json::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: key '", key, "' has the wrong type: ", e.what()));
    }
    return absl::OkStatus();
  }
}

}  // namespace

absl::Status ValidateModelConfig(const ModelConfig& c) {
  auto bad = [](const char* key, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("config: '", key, "' ", why));
  };
  if (c.vocab_size <= 0) return bad("vocab_size", "must be positive");
  if (c.hidden_size <= 0) return bad("hidden_size", "must be positive");
  if (c.num_heads <= 0 || c.hidden_size % c.num_heads != 0) {
    return bad("num_heads", absl::StrCat("must divide hidden_size (", c.hidden_size, ")"));
  }
  if (c.intermediate_size <= 0) return bad("intermediate_size", "must be positive");
  if (c.type_vocab_size <= 0) return bad("type_vocab_size", "must be positive");
  if (c.layers.empty()) return bad("layers", "must name at least one layer");
  int64_t cluster_layers = 0;
  for (char kind : c.layers) {
    const bool ok = c.architecture == Architecture::kClusterFormer
                        ? (kind == 'S' || kind == 'C' || IsClusteringAttentionLayer(kind))
                        : kind == 'E';
    if (!ok) {
      return bad("layers", absl::StrCat("has '", std::string(1, kind), "': ",
                                        c.architecture == Architecture::kClusterFormer
                                            ? "cluster_former models take S, C, N, K and I layers"
                                            : "etc models take E layers"));
    }
    cluster_layers += kind == 'C' || kind == 'N';
  }
  if (c.architecture == Architecture::kClusterFormer) {
    if (c.layers[0] != 'S') {
      return bad("layers", "must start with S: cluster layers work on merged window states");
    }
    if (c.window_tokens <= 0) return bad("window_tokens", "must be positive");
    if (c.stride_tokens <= 0 || c.stride_tokens > c.window_tokens) {
      return bad("stride_tokens", "must be in [1, window_tokens]");
    }
    if (static_cast<int64_t>(c.num_clusters.size()) != cluster_layers) {
      return bad("num_clusters",
                 absl::StrCat("needs one entry per C or N layer (", cluster_layers, ")"));
    }
    const ClusteredAttentionConfig& k = c.clustered;
    if (k.clusters <= 0) return bad("clustered_attention.clusters", "must be positive");
    if (k.bits < 1 || k.bits > 63) return bad("clustered_attention.bits", "must be in [1, 63]");
    if (k.iterations < 0) return bad("clustered_attention.iterations", "must not be negative");
    if (k.topk <= 0) return bad("clustered_attention.topk", "must be positive");
    if (c.etc.supporting_fact_head) {
      return bad("etc.supporting_fact_head", "needs architecture \"etc\" (segment tokens)");
    }
    if (c.etc.entity_globals != 0) {
      return bad("etc.entity_globals", "needs architecture \"etc\" (global tokens)");
    }
    if (c.etc.pool_entity_mentions) {
      return bad("etc.pool_entity_mentions", "needs architecture \"etc\" (entity tokens)");
    }
    for (int64_t n : c.num_clusters) {
      if (n <= 0) return bad("num_clusters", "entries must be positive");
    }
    // A squad window ends with one more SEP.
    const int64_t ends = c.qa_format == QaFormat::kSquad ? 3 : 2;
    const int64_t needed =
        c.position_offset + c.max_question_tokens + ends + c.table_header_tokens + c.window_tokens;
    if (c.max_position_embeddings < needed) {
      return bad("max_position_embeddings",
                 absl::StrCat("must be at least position_offset + max_question_tokens + ", ends,
                              " + table_header_tokens + window_tokens = ", needed));
    }
  } else {
    if (c.etc.radius <= 0) return bad("etc.radius", "must be positive");
    if (c.etc.relative_clip <= 0) return bad("etc.relative_clip", "must be positive");
    if (c.etc.max_segments <= 0) return bad("etc.max_segments", "must be positive");
    if (c.etc.entity_globals < 0) return bad("etc.entity_globals", "must not be negative");
    if (c.etc.pool_entity_mentions && c.etc.entity_globals == 0) {
      return bad("etc.pool_entity_mentions", "needs etc.entity_globals > 0");
    }
    if (c.etc.positions != "none" && c.etc.positions != "paragraph" &&
        c.etc.positions != "document") {
      return bad("etc.positions", "must be \"none\", \"paragraph\" or \"document\"");
    }
    if (c.etc.positions != "none" &&
        c.max_position_embeddings < c.position_offset + c.max_question_tokens + 2) {
      return bad("max_position_embeddings",
                 absl::StrCat("must be at least position_offset + max_question_tokens + 2 = ",
                              c.position_offset + c.max_question_tokens + 2,
                              " with etc.positions \"", c.etc.positions, "\""));
    }
  }
  if (c.max_question_tokens <= 0) return bad("max_question_tokens", "must be positive");
  if (c.answer_type_pooling != "mean" && c.answer_type_pooling != "max" &&
      c.answer_type_pooling != "paragraph") {
    return bad("answer_type_pooling", "must be \"mean\", \"max\" or \"paragraph\"");
  }
  if (c.answer_type_pooling == "paragraph" && c.qa_format != QaFormat::kNq) {
    return bad("answer_type_pooling", "\"paragraph\" needs qa_format \"nq\" (paragraph tokens)");
  }
  if (c.table_header_tokens < 0) return bad("table_header_tokens", "must not be negative");
  if (c.table_header_tokens > 0 &&
      (c.architecture != Architecture::kClusterFormer || c.qa_format != QaFormat::kNq)) {
    return bad("table_header_tokens",
               "needs a cluster_former model with qa_format \"nq\" (its windows carry the "
               "header)");
  }
  if (!std::isfinite(c.null_threshold)) return bad("null_threshold", "must be a finite number");
  if (c.answer_score != "type" && c.answer_score != "type+long") {
    return bad("answer_score", "must be \"type\" or \"type+long\"");
  }
  if (c.answer_score == "type+long" && c.qa_format != QaFormat::kNq) {
    return bad("answer_score", "\"type+long\" needs qa_format \"nq\" (a long-answer head)");
  }
  for (size_t i = 0; i < c.null_threshold_bands.size(); ++i) {
    const NullThresholdBand& band = c.null_threshold_bands[i];
    const int64_t floor = i == 0 ? 0 : c.null_threshold_bands[i - 1].min_document_tokens;
    // Below 2^32: ModelInfo and Usage count document tokens in uint32.
    if (band.min_document_tokens <= floor || band.min_document_tokens > 0xffffffffLL) {
      return bad("null_threshold_bands",
                 absl::StrCat("needs min_document_tokens positive, below 2^32 and strictly "
                              "increasing; band ",
                              i, " has ", band.min_document_tokens));
    }
    if (!std::isfinite(band.null_threshold)) {
      return bad("null_threshold_bands",
                 absl::StrCat("band ", i, ": null_threshold must be a finite number"));
    }
  }
  if (!(c.int8_recheck_margin >= 0) || std::isinf(c.int8_recheck_margin)) {
    return bad("int8_recheck_margin", "must be a finite number >= 0");
  }
  for (const absl::string_view name : absl::StrSplit(c.default_precision, ',')) {
    if (name != "fp32" && name != "bf16" && name != "int8") {
      return bad("default_precision",
                 "must be \"fp32\", \"bf16\" or \"int8\", or a list of them in order of "
                 "preference (\"bf16,int8\")");
    }
  }
  if (c.qa_format == QaFormat::kSquad &&
      (c.architecture != Architecture::kClusterFormer ||
       c.layers.find_first_not_of('S') != std::string::npos || c.exact_match_feature)) {
    return bad("qa_format",
               "\"squad\" needs a cluster_former model of S layers only, without "
               "exact_match_feature (independent windows, as the checkpoint was fine-tuned)");
  }
  if (c.tokenizer != "spm.model" && c.tokenizer != "tokenizer.json") {
    return bad("tokenizer", "must be \"spm.model\" or \"tokenizer.json\"");
  }
  for (const std::string& head : c.untrained_heads) {
    if (head != kQaOutputs && head != kLongAnswer && head != kAnswerType) {
      return bad("untrained_heads", absl::StrCat("names an unknown head '", head, "'"));
    }
  }
  for (auto [name, id] : {std::pair<const char*, int32_t>{"special_tokens.cls", c.special.cls},
                          {"special_tokens.sep", c.special.sep},
                          {"special_tokens.pad", c.special.pad},
                          {"special_tokens.paragraph", c.special.paragraph}}) {
    if (id < 0 || id >= c.vocab_size) return bad(name, "must be a token id below vocab_size");
  }
  return absl::OkStatus();
}

ModelConfig ClusterFormerConfig(int64_t vocab_size, int64_t hidden_size, int64_t num_heads,
                                int64_t intermediate_size, const std::string& layers,
                                int64_t window_tokens, int64_t stride_tokens,
                                int64_t clusters_per_layer, int64_t max_question_tokens) {
  ModelConfig c;
  c.architecture = Architecture::kClusterFormer;
  c.vocab_size = vocab_size;
  c.hidden_size = hidden_size;
  c.num_heads = num_heads;
  c.intermediate_size = intermediate_size;
  c.layers = layers;
  c.window_tokens = window_tokens;
  c.stride_tokens = stride_tokens;
  c.max_question_tokens = max_question_tokens;
  c.max_position_embeddings = c.position_offset + max_question_tokens + 2 + window_tokens;
  for (char kind : layers) {
    if (kind == 'C' || kind == 'N') c.num_clusters.push_back(clusters_per_layer);
  }
  return c;
}

double NullThresholdFor(const ModelConfig& config, int64_t document_tokens) {
  double threshold = config.null_threshold;
  for (const NullThresholdBand& band : config.null_threshold_bands) {
    if (document_tokens >= band.min_document_tokens) threshold = band.null_threshold;
  }
  return threshold;
}

const char* ArchitectureName(Architecture architecture) {
  return architecture == Architecture::kEtc ? "etc" : "cluster_former";
}

const char* QaFormatName(QaFormat format) { return format == QaFormat::kSquad ? "squad" : "nq"; }

bool ParseQaFormat(const std::string& name, QaFormat* format) {
  for (QaFormat f : {QaFormat::kNq, QaFormat::kSquad}) {
    if (name == QaFormatName(f)) {
      *format = f;
      return true;
    }
  }
  return false;
}

bool ParseArchitecture(const std::string& name, Architecture* architecture) {
  for (Architecture a : {Architecture::kClusterFormer, Architecture::kEtc}) {
    if (name == ArchitectureName(a)) {
      *architecture = a;
      return true;
    }
  }
  return false;
}

absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config: not valid JSON: ", e.what()));
  }
  if (!j.is_object()) return absl::InvalidArgumentError("config: must be a JSON object");
  ModelConfig c;
  std::string arch;
  LONGQA_RETURN_IF_ERROR(Read(j, "architecture", &arch, true));
  if (!ParseArchitecture(arch, &c.architecture)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: 'architecture' is '", arch, "'; expected 'cluster_former' or 'etc'"));
  }
  LONGQA_RETURN_IF_ERROR(Read(j, "vocab_size", &c.vocab_size, true));
  LONGQA_RETURN_IF_ERROR(Read(j, "hidden_size", &c.hidden_size, true));
  LONGQA_RETURN_IF_ERROR(Read(j, "num_heads", &c.num_heads, true));
  LONGQA_RETURN_IF_ERROR(Read(j, "intermediate_size", &c.intermediate_size, true));
  LONGQA_RETURN_IF_ERROR(Read(j, "max_position_embeddings", &c.max_position_embeddings, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "position_offset", &c.position_offset, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "type_vocab_size", &c.type_vocab_size, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "layer_norm_eps", &c.layer_norm_eps, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "layers", &c.layers, true));
  LONGQA_RETURN_IF_ERROR(Read(j, "window_tokens", &c.window_tokens, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "stride_tokens", &c.stride_tokens, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "num_clusters", &c.num_clusters, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "max_question_tokens", &c.max_question_tokens, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "exact_match_feature", &c.exact_match_feature, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "answer_type_pooling", &c.answer_type_pooling, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "table_header_tokens", &c.table_header_tokens, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "null_threshold", &c.null_threshold, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "answer_score", &c.answer_score, false));
  if (j.contains("null_threshold_bands")) {
    const json& bands = j["null_threshold_bands"];
    for (size_t i = 0; bands.is_array() && i < bands.size(); ++i) {
      NullThresholdBand& band = c.null_threshold_bands.emplace_back();
      absl::Status read = bands[i].is_object() ? Read(bands[i], "min_document_tokens",
                                                      &band.min_document_tokens, true)
                                               : absl::InvalidArgumentError("not an object");
      if (read.ok()) read = Read(bands[i], "null_threshold", &band.null_threshold, true);
      if (!read.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("config: 'null_threshold_bands' entry ", i, ": ", read.message()));
      }
    }
    if (!bands.is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: 'null_threshold_bands' must be a list of {\"min_document_tokens\": N, "
          "\"null_threshold\": X}, not ",
          bands.dump()));
    }
  }
  LONGQA_RETURN_IF_ERROR(Read(j, "default_precision", &c.default_precision, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "int8_recheck_margin", &c.int8_recheck_margin, false));
  std::string qa_format = QaFormatName(c.qa_format);
  LONGQA_RETURN_IF_ERROR(Read(j, "qa_format", &qa_format, false));
  if (!ParseQaFormat(qa_format, &c.qa_format)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: 'qa_format' is '", qa_format, "'; expected 'nq' or 'squad'"));
  }
  LONGQA_RETURN_IF_ERROR(Read(j, "tokenizer", &c.tokenizer, false));
  LONGQA_RETURN_IF_ERROR(Read(j, "untrained_heads", &c.untrained_heads, false));
  if (j.contains("special_tokens")) {
    const json& s = j["special_tokens"];
    LONGQA_RETURN_IF_ERROR(Read(s, "cls", &c.special.cls, true));
    LONGQA_RETURN_IF_ERROR(Read(s, "sep", &c.special.sep, true));
    LONGQA_RETURN_IF_ERROR(Read(s, "pad", &c.special.pad, true));
    LONGQA_RETURN_IF_ERROR(Read(s, "paragraph", &c.special.paragraph, true));
  }
  if (j.contains("etc")) {
    const json& e = j["etc"];
    LONGQA_RETURN_IF_ERROR(Read(e, "radius", &c.etc.radius, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "relative_clip", &c.etc.relative_clip, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "shared_projections", &c.etc.shared_projections, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "hard_g2l_mask", &c.etc.hard_g2l_mask, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "max_segments", &c.etc.max_segments, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "positions", &c.etc.positions, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "supporting_fact_head", &c.etc.supporting_fact_head, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "entity_globals", &c.etc.entity_globals, false));
    LONGQA_RETURN_IF_ERROR(Read(e, "pool_entity_mentions", &c.etc.pool_entity_mentions, false));
  }
  if (j.contains("clustered_attention")) {
    const json& k = j["clustered_attention"];
    LONGQA_RETURN_IF_ERROR(Read(k, "clusters", &c.clustered.clusters, false));
    LONGQA_RETURN_IF_ERROR(Read(k, "bits", &c.clustered.bits, false));
    LONGQA_RETURN_IF_ERROR(Read(k, "iterations", &c.clustered.iterations, false));
    LONGQA_RETURN_IF_ERROR(Read(k, "topk", &c.clustered.topk, false));
  }
  LONGQA_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("config: cannot open ", path));
  std::stringstream text;
  text << in.rdbuf();
  auto config = ParseModelConfig(text.str());
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat(path, ": ", config.status().message()));
  }
  return config;
}

std::string ModelConfigToJson(const ModelConfig& c) {
  json j;
  j["architecture"] = ArchitectureName(c.architecture);
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_heads"] = c.num_heads;
  j["intermediate_size"] = c.intermediate_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["position_offset"] = c.position_offset;
  j["type_vocab_size"] = c.type_vocab_size;
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["layers"] = c.layers;
  j["window_tokens"] = c.window_tokens;
  j["stride_tokens"] = c.stride_tokens;
  j["num_clusters"] = c.num_clusters;
  j["max_question_tokens"] = c.max_question_tokens;
  j["exact_match_feature"] = c.exact_match_feature;
  j["answer_type_pooling"] = c.answer_type_pooling;
  // Written only when on: the folders made before it keep their JSON.
  if (c.table_header_tokens > 0) j["table_header_tokens"] = c.table_header_tokens;
  j["null_threshold"] = c.null_threshold;
  for (const NullThresholdBand& band : c.null_threshold_bands) {  // the key only when it has bands
    j["null_threshold_bands"].push_back({{"min_document_tokens", band.min_document_tokens},
                                         {"null_threshold", band.null_threshold}});
  }
  if (c.answer_score != "type") j["answer_score"] = c.answer_score;  // as table_header_tokens
  j["default_precision"] = c.default_precision;
  j["int8_recheck_margin"] = c.int8_recheck_margin;
  j["qa_format"] = QaFormatName(c.qa_format);
  j["tokenizer"] = c.tokenizer;
  j["untrained_heads"] = c.untrained_heads;
  j["special_tokens"] = {{"cls", c.special.cls},
                         {"sep", c.special.sep},
                         {"pad", c.special.pad},
                         {"paragraph", c.special.paragraph}};
  j["etc"] = {{"radius", c.etc.radius},
              {"relative_clip", c.etc.relative_clip},
              {"shared_projections", c.etc.shared_projections},
              {"hard_g2l_mask", c.etc.hard_g2l_mask},
              {"max_segments", c.etc.max_segments},
              {"positions", c.etc.positions},
              {"supporting_fact_head", c.etc.supporting_fact_head},
              {"entity_globals", c.etc.entity_globals},
              {"pool_entity_mentions", c.etc.pool_entity_mentions}};
  j["clustered_attention"] = {{"clusters", c.clustered.clusters},
                              {"bits", c.clustered.bits},
                              {"iterations", c.clustered.iterations},
                              {"topk", c.clustered.topk}};
  return j.dump(2);
}

}  // namespace longqa
