#include "model/table_header.h"

#include <vector>

namespace longqa {
namespace {

struct Line {
  size_t begin, end;      // in the paragraph, without the newline (and a CR before it)
  std::string_view text;  // from its first non-blank byte
};

std::vector<Line> LinesOf(std::string_view paragraph) {
  std::vector<Line> lines;
  for (size_t pos = 0; pos <= paragraph.size();) {
    size_t nl = paragraph.find('\n', pos);
    if (nl == std::string_view::npos) nl = paragraph.size();
    size_t end = nl;
    if (end > pos && paragraph[end - 1] == '\r') --end;
    size_t first = pos;
    while (first < end && (paragraph[first] == ' ' || paragraph[first] == '\t')) ++first;
    lines.push_back({pos, end, paragraph.substr(first, end - first)});
    pos = nl + 1;
  }
  return lines;
}

// "| --- | :-: |": pipes, dashes, colons and blanks, at least one dash.
bool IsPipeSeparator(std::string_view line) {
  bool dash = false;
  for (char c : line) {
    if (c == '-') {
      dash = true;
    } else if (c != '|' && c != ':' && c != ' ' && c != '\t') {
      return false;
    }
  }
  return dash;
}

}  // namespace

std::pair<int64_t, int64_t> TableHeaderBytes(std::string_view paragraph) {
  // Every document's paragraphs pass here: prose leaves at its first byte, before any line split.
  const size_t first = paragraph.find_first_not_of(" \t");
  if (first == std::string_view::npos || (paragraph[first] != '|' && paragraph[first] != '+')) {
    return {0, 0};
  }
  const std::vector<Line> lines = LinesOf(paragraph);
  if (lines.size() < 3) return {0, 0};
  for (const Line& line : lines) {
    if (line.text.empty() || (line.text[0] != '|' && line.text[0] != '+')) return {0, 0};
  }
  if (lines[0].text[0] == '|') {
    if (!IsPipeSeparator(lines[1].text)) return {0, 0};
    return {static_cast<int64_t>(lines[0].begin), static_cast<int64_t>(lines[0].end)};
  }
  if (lines[0].text.substr(0, 2) != "+-") return {0, 0};
  for (size_t i = 2; i < lines.size(); ++i) {
    if (lines[i].text.substr(0, 2) == "+=") {
      return {static_cast<int64_t>(lines[1].begin), static_cast<int64_t>(lines[i - 1].end)};
    }
  }
  return {0, 0};
}

}  // namespace longqa
