// ModelConfig: the typed, validated form of a model folder's config.json. Every key is documented
// in docs/model-format.md; validation errors name the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace longqa {

enum class Architecture { kClusterFormer, kEtc };

// How windows are laid out and answers decoded (docs/model-format.md, "qa_format").
// kNq: longqa's own models: a paragraph token opens every paragraph (the long-answer candidates),
// overlapping windows are merged after every layer (Cluster-Former eq. 4), Natural-Questions
// decoding (answer type, long answer, short spans). kSquad: a SQuAD-style extractive checkpoint
// exactly as it was fine-tuned and as transformers' question-answering pipeline runs it: every
// window is [CLS] question [SEP] context [SEP] with token type 1 on the context, no paragraph
// tokens, windows independent, and the best span chosen by per-window softmax probabilities.
enum class QaFormat { kNq, kSquad };

struct SpecialTokens {
  int32_t cls = 0;        // starts the question ("<s>" in RoBERTa)
  int32_t sep = 2;        // ends the question ("</s>")
  int32_t pad = 1;        // padding; also RoBERTa's position padding_idx
  int32_t paragraph = 4;  // starts every paragraph: the long-answer candidate token ("<P>")
};

struct EtcConfig {
  int64_t radius = 84;             // r: l2l attention radius in tokens
  int64_t relative_clip = 12;      // k: relative position labels clipped to [-k, k]
  bool shared_projections = true;  // one W_Q/W_K/W_V for global and long, or two sets
  bool hard_g2l_mask = false;      // segment tokens see only their own paragraph's tokens
  // At most this many segment tokens: a document with more paragraphs gets consecutive paragraphs
  // merged into segments of about equal token counts, so that the global input (and the l2g/g2l
  // work, which grows with it) stays bounded whatever the paragraph count.
  int64_t max_segments = 256;
  // Absolute positions, what a BERT lift keeps of its pretraining: "none" (relative labels only,
  // ETC's own scheme), "paragraph" (a long token adds the position embedding of its offset
  // within its paragraph, clipped) or "document" (long token t continues after CLS, question and
  // SEP: question + 2 + t, wrapping around the table as Longformer tiles BERT's 512 positions).
  // Globals: CLS 0, question 1.., segment tokens 0.
  std::string positions = "none";
  // A supporting-fact head (weights supporting_fact.*, [1, d]) on the segment tokens: a training
  // signal only, as ETC trains HotpotQA's supporting facts from its sentence globals (§4): the
  // trainer's loss asks the segments holding the paragraphs an answer needs to score 1 and the
  // others 0, so that a two-hop fact reaches a segment token where the answer's paragraph can
  // read it. Serving ignores its scores.
  bool supporting_fact_head = false;
  // Entity tokens (ETC's WikiHop set-up, appendix: a global token per candidate, linked to its
  // string-matched mentions by the "part of" label): up to this many global tokens, one per word
  // of two or more pieces that recurs in two or more paragraphs (etc_plan.h), each "part of" every
  // mention of its word, so that what one paragraph says about a name reaches the others that name
  // it (a two-hop question's bridge). 0: none.
  int64_t entity_globals = 0;
  // Entity tokens that hold the mean of their mentions' states (a project extension, not the
  // paper's): before every layer an entity token's state is replaced by the mean of its mentions'
  // long states, so that a mention's long-to-global query meets, in one layer, what the other
  // mentions of its name hold, as a Cluster-Former's cluster layer lets two mentions of a name
  // attend to each other. Its own attention row is still computed (the last layer's is its
  // output). Needs entity_globals > 0.
  bool pool_entity_mentions = false;
};

// Clustered attention layers (K, and I for the improved form): Vyas et al. 2020 §3.
struct ClusteredAttentionConfig {
  int64_t clusters = 100;   // C: query clusters per head (fewer when a request has fewer rows)
  int64_t bits = 63;        // B: hash bits (random projections), at most 63
  int64_t iterations = 10;  // L: Lloyd iterations of the Hamming K-Means
  int64_t topk = 32;        // I layers: keys recomputed exactly per query
};

// True for the Cluster-Former layer letters that run on a request's merged rows H̄ with an
// attention pattern of their own: N, K and I (C is the Cluster-Former's own cluster layer).
inline bool IsClusteringAttentionLayer(char kind) {
  return kind == 'N' || kind == 'K' || kind == 'I';
}

// A null threshold for documents of at least min_document_tokens tokens (config.json
// "null_threshold_bands"): a model's no-answer margin need not mean the same on a 300-token page
// and on 30 windows, so each length band may have its own, chosen on that band's dev examples by
// `longqa eval --calibrate_null --null_bands` (docs/model-format.md).
struct NullThresholdBand {
  int64_t min_document_tokens = 0;
  double null_threshold = 0.0;
};

struct ModelConfig {
  Architecture architecture = Architecture::kClusterFormer;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t position_offset = 2;  // RoBERTa: position ids start at padding_idx + 1
  int64_t type_vocab_size = 1;
  double layer_norm_eps = 1e-5;
  // Layer plan, one letter a layer. cluster_former: S sliding-window, C cluster (Cluster-Former),
  // N neural clustering attention, K clustered attention, I improved clustered attention;
  // etc: E. docs/model-format.md says what each computes.
  std::string layers;
  int64_t window_tokens = 0;          // l
  int64_t stride_tokens = 0;          // m
  std::vector<int64_t> num_clusters;  // one entry per C or N layer, in order
  int64_t max_question_tokens = 64;   // question tokens kept, without CLS/SEP
  // DrQA-style exact-match input feature: a learned embedding (row 1 of
  // embeddings.exact_match_embeddings) added to every document token whose piece also occurs in
  // the question. Off in converted checkpoints; the demo model uses it.
  bool exact_match_feature = false;
  // The answer-type head's input. Cluster-Former: a request's window CLS states pooled, "mean"
  // (the first demo model) or "max" (element-wise; does not fade as windows multiply); ETC: its
  // global CLS state. Either architecture, qa_format nq: "paragraph", what the long-answer head
  // points at: the paragraph tokens' states weighted by the long-answer softmax (no gradient
  // through the weights). A yes/no answer is a property of one paragraph, which pooled CLS states
  // of many windows did not learn to carry (docs/demo-model.md).
  std::string answer_type_pooling = "mean";
  // Cluster-Former, qa_format nq: a window that starts inside a table (a paragraph of "|" rows,
  // Markdown pipe or reST grid) below its header carries up to this many of the header's tokens
  // after the question, read-only copies of the header rows' states: a cell far down a long table
  // is read with the names of its columns. 0: off (every window holds the question and its
  // context only).
  int64_t table_header_tokens = 0;
  QaFormat qa_format = QaFormat::kNq;
  // The server's default RequestOptions.null_threshold (qa.proto's no-answer rule) when a request
  // leaves it unset: chosen on a dev set by `longqa eval --calibrate_null` after training.
  double null_threshold = 0.0;
  // Thresholds for longer documents, min_document_tokens strictly increasing and positive: a
  // document gets the last band it reaches, else null_threshold (NullThresholdFor). Empty: one
  // threshold for every length.
  std::vector<NullThresholdBand> null_threshold_bands;
  // What the no-answer rule weighs NO_ANSWER against (qa.proto's best_answer_score): "type", the
  // best other answer-type logit; "type+long" (qa_format nq), that plus the best paragraph's long
  // score, for a model whose type head says "answerable" for questions it then finds no paragraph
  // for (docs/model-format.md has the measurement). Chosen on a dev set, as null_threshold is.
  std::string answer_score = "type";
  // The precision the server's --precision=auto serves in where the device runs it natively
  // ("fp32", "bf16" or "int8", or a list in order of preference such as "bf16,int8";
  // model/precision_choice.h). Set when a model is shipped, only after
  // its answers at that precision were measured against fp32 on its dev set
  // (bench/precision_answers.sh).
  std::string default_precision = "fp32";
  // Checked int8's default margin (EngineOptions::int8_recheck_margin), in the heads' logits: where
  // the server runs the model in int8, answers whose closest call is within it are computed again
  // in fp32. Chosen with the int8 noise of this model measured on its dev set
  // (bench/int8_recheck.sh); 0: off.
  double int8_recheck_margin = 0.0;
  SpecialTokens special;
  EtcConfig etc;
  ClusteredAttentionConfig clustered;  // config.json "clustered_attention"
  // The model folder's tokenizer file: "spm.model" (sentencepiece) or "tokenizer.json" (a
  // Hugging Face tokenizer, as tools/import_hf.py copies it).
  std::string tokenizer = "spm.model";
  // Heads a converted checkpoint lacked, initialised at random by tools/import_hf.py
  // ("qa_outputs", "long_answer", "answer_type"); the server warns when it serves one.
  std::vector<std::string> untrained_heads;

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  int64_t head_dim() const { return hidden_size / num_heads; }
};

// "cluster_former" or "etc": the config.json spelling, also used in logs and GetModelInfo.
const char* ArchitectureName(Architecture architecture);
// The inverse of ArchitectureName; false for an unknown name.
bool ParseArchitecture(const std::string& name, Architecture* architecture);

// "nq" or "squad": the config.json spelling; the inverse returns false for an unknown name.
const char* QaFormatName(QaFormat format);
bool ParseQaFormat(const std::string& name, QaFormat* format);

// The default null threshold of a document of `document_tokens` tokens: the last of
// null_threshold_bands whose min_document_tokens it reaches, else null_threshold.
double NullThresholdFor(const ModelConfig& config, int64_t document_tokens);

// ETC relative-attention labels: 2k+1 clipped relative positions (label = clip(j - i) + k), then
// "part of" (a segment token and a token of its paragraph) and "not part of".
inline int64_t EtcNumLabels(const ModelConfig& c) { return 2 * c.etc.relative_clip + 3; }
inline int64_t EtcPartOfLabel(const ModelConfig& c) { return 2 * c.etc.relative_clip + 1; }
inline int64_t EtcNotPartOfLabel(const ModelConfig& c) { return 2 * c.etc.relative_clip + 2; }

// A Cluster-Former config for any dims, with max_position_embeddings sized to fit the windows and
// one cluster count per C layer of `layers`: the input of the random-model factory
// (RandomWeights) for tests and benchmarks.
ModelConfig ClusterFormerConfig(int64_t vocab_size, int64_t hidden_size, int64_t num_heads,
                                int64_t intermediate_size, const std::string& layers,
                                int64_t window_tokens, int64_t stride_tokens,
                                int64_t clusters_per_layer, int64_t max_question_tokens);

// Parses and validates config.json text.
absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text);
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& path);
// The config as config.json text (inverse of ParseModelConfig).
std::string ModelConfigToJson(const ModelConfig& config);
// Checks cross-field consistency; returns an error naming the offending key.
absl::Status ValidateModelConfig(const ModelConfig& config);

}  // namespace longqa
