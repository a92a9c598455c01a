// A small command-line parser for the CLI's subcommands: "--name=value" or "--name value" flags,
// "--flag" booleans, and a usage error naming the bad flag.
#pragma once

#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace longqa::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// -h or --help among a command's flags: main prints the usage and exits 0.
struct HelpRequested {};

// The whole file; a UsageError naming `flag` when it cannot be read or is a directory.
std::string ReadFileOrThrow(const std::string& path, const std::string& flag);
// The same for a document: also a UsageError when it is not UTF-8 text (a binary file), naming
// the offset of the first bad byte; the server would refuse it anyway, with less to go on.
std::string ReadTextFileOrThrow(const std::string& path, const std::string& flag);
// The offset of the first byte that breaks UTF-8 (overlongs, surrogates and code points past
// U+10FFFF included), or text.size() when there is none.
size_t FirstInvalidUtf8Byte(const std::string& text);

class Args {
 public:
  // Parses argv[first..]; `known` lists the flags the command takes; `booleans` those without a
  // value.
  Args(int argc, char** argv, int first, const std::set<std::string>& known,
       const std::set<std::string>& booleans);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  // A UsageError when the value is not an integer or is below `min`.
  int64_t GetInt(const std::string& name, int64_t fallback,
                 int64_t min = std::numeric_limits<int64_t>::min()) const;
  double GetDouble(const std::string& name, double fallback) const;
  bool GetBool(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace longqa::cli
