// Host-side index tables of the Cluster-Former for one batch of requests. Nothing here touches
// tensors: the encoder uploads these tables and the kernels (gather_rows, overlap_merge) do the
// moving.
//
// The state between layers is H̄ (cluster_former_v2 eq. 4) for all requests, concatenated: for
// each request and each of its windows k, the window's question copy (q rows) followed by the
// context tokens the window *owns* ([m·k, m·k + m), the last window owning the rest), then its
// end token's row when the input has one (qa_format squad's closing SEP). Every context token has
// exactly one row; every window keeps its own question (and end token) copy. A window that starts
// inside a table below its header (WindowInput::tables) also reads the header's rows, in slots
// after the question: read-only copies that the overlap merge leaves out.
#pragma once

#include <cstdint>
#include <vector>

namespace longqa {

struct ContextTable {
  int64_t begin = 0, end = 0;                // the table's context tokens [begin, end)
  int64_t header_begin = 0, header_end = 0;  // the header tokens a window below it carries
};

struct WindowInput {
  std::vector<int32_t> question;       // token ids with CLS and SEP: q = question.size()
  std::vector<int32_t> context;        // the document's token ids: x = context.size()
  std::vector<int64_t> context_match;  // optional exact-match flag per context token (else 0)
  int32_t end_token = -1;              // closes every window when >= 0 (BERT's second SEP)
  int64_t context_type = 0;            // token type of the context and end slots (question: 0)
  // Tables in context order, disjoint: a window whose first context token j lies in [begin, end)
  // of one with header_end <= j carries tokens [header_begin, header_end) after the question.
  std::vector<ContextTable> tables = {};
};

// Windows needed to cover x context tokens with windows of l and stride m (at least 1).
int64_t NumWindows(int64_t x, int64_t l, int64_t m);

struct WindowPlan {
  int64_t window_len = 0;   // T: slots per window (the longest q + header + min(l, x) + end)
  int64_t num_windows = 0;  // Kt: windows of all requests
  int64_t num_rows = 0;     // R: rows of H̄ over all requests
  std::vector<int64_t> windows_begin;  // [n+1] first window of each request
  std::vector<int64_t> rows_begin;     // [n+1] first H̄ row of each request
  // Per window slot, [Kt * T]: token id (pad id for padding), position (0.., or -1 for padding),
  // and the H̄ row the slot reads and writes (-1 for padding).
  std::vector<int64_t> slot_tokens;
  std::vector<int64_t> slot_positions;
  std::vector<int64_t> window_index;
  std::vector<int64_t> slot_match;  // exact-match flag (question slots and padding: 0)
  std::vector<int64_t> slot_types;  // token type (question slots and padding: 0)
  // Overlap merge in CSR form: H̄ row r is the mean of the slots merge_sources[offsets[r] ..].
  std::vector<int64_t> merge_offsets;  // [R+1]
  std::vector<int64_t> merge_sources;
  // The H̄ row of every context token, requests concatenated; context_begin [n+1].
  std::vector<int64_t> context_rows;
  std::vector<int64_t> context_begin;
  // The H̄ row of every window's first token (its CLS), [Kt].
  std::vector<int64_t> cls_rows;
  // Per window, [Kt]: the request's context tokens it holds, [begin, end), at slots
  // q + h, q + h + 1, ... of the window, after the h = window_header_tokens table header tokens it
  // carries (0 but where WindowInput::tables says).
  std::vector<int64_t> window_context_begin, window_context_end, window_header_tokens;
  // Per H̄ row, [R]: its slot in the window that owns it, for encoders that keep windows
  // independent (qa_format squad) and read each row from its owner instead of a merge.
  std::vector<int64_t> row_owner_slot;
};

WindowPlan PlanWindows(const std::vector<WindowInput>& inputs, int64_t l, int64_t m,
                       int64_t pad_id);

// Cluster layers cut each request's sorted H̄ rows into chunks of m (eq. 7); chunks of all
// requests form one batch.
struct ChunkPlan {
  int64_t num_chunks = 0;
  std::vector<int64_t> sorted_to_slot;  // [R]: global sorted position → flat chunk slot
  std::vector<uint8_t> slot_valid;      // [num_chunks * m]
};

ChunkPlan PlanChunks(const std::vector<int64_t>& rows_begin, int64_t m);

}  // namespace longqa
