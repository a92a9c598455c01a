// Table headers found from a paragraph's text (model/table_header.h) and their tokens in a
// tokenized document, which the Cluster-Former's windows below them carry.
#include "model/table_header.h"

#include <gtest/gtest.h>

#include <string>

#include "model/document.h"
#include "tests/unit/three_byte_tokenizer.h"

namespace longqa {
namespace {

using Range = std::pair<int64_t, int64_t>;

TEST(TableHeaderTest, PipeTablesHaveTheirFirstLineAsHeader) {
  EXPECT_EQ(TableHeaderBytes("| flag | default |\n| --- | ---: |\n| a | 1 |"), Range(0, 18));
  EXPECT_EQ(TableHeaderBytes("  | a | b |\n  |:-:|---|\n  | 1 | 2 |"), Range(0, 11));  // indented
  EXPECT_EQ(TableHeaderBytes("| a | b |\r\n| - | - |\r\n| 1 | 2 |"), Range(0, 9));     // CRLF
}

TEST(TableHeaderTest, GridTablesHaveTheRowsAboveTheirEqualsBorder) {
  const std::string grid = "+---+---+\n| a | b |\n| c | d |\n+===+===+\n| 1 | 2 |\n+---+---+";
  EXPECT_EQ(TableHeaderBytes(grid), Range(10, 29));  // "| a | b |\n| c | d |"
  EXPECT_EQ(grid.substr(10, 19), "| a | b |\n| c | d |");
}

TEST(TableHeaderTest, OtherParagraphsHaveNone) {
  EXPECT_EQ(TableHeaderBytes("Plain prose | with a pipe.\n| and a line\nthat is no row"),
            Range(0, 0));
  EXPECT_EQ(TableHeaderBytes("| a | b |\n| --- | --- |"), Range(0, 0));         // two lines
  EXPECT_EQ(TableHeaderBytes("| a | b |\n| 1 | 2 |\n| 3 | 4 |"), Range(0, 0));  // no separator
  EXPECT_EQ(TableHeaderBytes("| a | b |\n| --- | --- |\nprose after it"), Range(0, 0));
  EXPECT_EQ(TableHeaderBytes("+---+---+\n| a | b |\n+---+---+\n| 1 | 2 |\n+---+---+"),
            Range(0, 0));  // a grid table without a header row
  EXPECT_EQ(TableHeaderBytes("| a | b |\n\n| --- |"), Range(0, 0));  // a blank line is no row
  EXPECT_EQ(TableHeaderBytes(""), Range(0, 0));
}

using testing_support::ThreeByteTokenizer;

TEST(TableHeaderTest, ADocumentKnowsEachTableHeadersTokens) {
  // Paragraph 0: its paragraph token and "int" "ro" "wor" "ds" (tokens 0-4); paragraph 1: its
  // paragraph token (5), then "|" "ab" "|" "cd" (6-9) inside the header line; "|\n|" (10) runs
  // past the line's end, so it is no header token.
  const std::string text = "intro words\n\n| ab | cd |\n| --- | --- |\n| 1 | 2 |";
  const ThreeByteTokenizer tokenizer;
  const auto doc = TokenizeDocument(tokenizer, text, SplitParagraphs(text), SpecialTokens());
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->table_header, (std::vector<Range>{{0, 0}, {6, 10}}));
}

}  // namespace
}  // namespace longqa
