// The header of a table paragraph, found from its text alone: the Cluster-Former's windows carry
// it when they start below it (ModelConfig::table_header_tokens), so that a cell far down a long
// table is read with the names of its columns.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

namespace longqa {

// The bytes of `paragraph`'s header rows, [begin, end) from the paragraph's start, when every
// line of it is a table row (its first non-blank byte '|' or '+'), at least three lines:
//   - a Markdown pipe table: the first line, when the second is its separator ("| --- | :-: |");
//   - a reST grid table: the lines between the top border and the "+===+" border under them.
// {0, 0} for any other paragraph (prose, a grid table without a header row, a lone "|" line).
std::pair<int64_t, int64_t> TableHeaderBytes(std::string_view paragraph);

}  // namespace longqa
