#include "client/args.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace longqa::cli {

std::string ReadFileOrThrow(const std::string& path, const std::string& flag) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw UsageError(flag + " " + path + " is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + flag + " " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t FirstInvalidUtf8Byte(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    const uint8_t b = byte(i);
    size_t length = 0;
    uint32_t low = 0;  // the smallest code point of that length (longer is an overlong)
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      length = 2, low = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      length = 3, low = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      length = 4, low = 0x10000;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    uint32_t c = b & (0xFF >> (length + 1));
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return i;
      c = (c << 6) | (byte(i + k) & 0x3F);
    }
    if (c < low || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return i;
    i += length;
  }
  return text.size();
}

std::string ReadTextFileOrThrow(const std::string& path, const std::string& flag) {
  std::string text = ReadFileOrThrow(path, flag);
  if (const size_t bad = FirstInvalidUtf8Byte(text); bad != text.size()) {
    throw UsageError(flag + " " + path + " is not UTF-8 text (a binary file?): byte " +
                     std::to_string(bad) + " breaks it");
  }
  return text;
}

Args::Args(int argc, char** argv, int first, const std::set<std::string>& known,
           const std::set<std::string>& booleans) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") throw HelpRequested{};
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "'");
    arg = arg.substr(2);
    std::string value;
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (booleans.count(arg)) {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError("--" + arg + " needs a value");
    }
    if (!known.count(arg) && !booleans.count(arg)) throw UsageError("unknown flag --" + arg);
    values_[arg] = value;
  }
}

std::string Args::Get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::GetInt(const std::string& name, int64_t fallback, int64_t min) const {
  if (!Has(name)) return fallback;
  int64_t v = 0;
  try {
    size_t used = 0;
    v = std::stoll(Get(name), &used);
    if (used != Get(name).size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw UsageError("--" + name + " must be an integer, got '" + Get(name) + "'");
  }
  if (v < min) {
    throw UsageError("--" + name + " must be at least " + std::to_string(min) + ", got " +
                     Get(name));
  }
  return v;
}

double Args::GetDouble(const std::string& name, double fallback) const {
  if (!Has(name)) return fallback;
  try {
    return std::stod(Get(name));
  } catch (const std::exception&) {
    throw UsageError("--" + name + " must be a number, got '" + Get(name) + "'");
  }
}

bool Args::GetBool(const std::string& name) const {
  const std::string v = Get(name, "false");
  return v == "true" || v == "1" || v == "yes";
}

}  // namespace longqa::cli
