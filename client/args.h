// A small command-line parser for the CLI's subcommands: "--name=value" or "--name value" flags,
// "--flag" booleans, and a usage error naming the bad flag.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace longqa::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole file; a UsageError naming `flag` when it cannot be read.
std::string ReadFileOrThrow(const std::string& path, const std::string& flag);

class Args {
 public:
  // Parses argv[first..]; `known` lists the flags the command takes; `booleans` those without a
  // value.
  Args(int argc, char** argv, int first, const std::set<std::string>& known,
       const std::set<std::string>& booleans);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  int64_t GetInt(const std::string& name, int64_t fallback) const;
  double GetDouble(const std::string& name, double fallback) const;
  bool GetBool(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace longqa::cli
