// A whole file as a string, for the small files the server and a model folder read at start
// (TLS material, an auth token, a model folder's calibration.txt).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace longqa {

// NOT_FOUND "cannot read <what> file <path>" where it cannot be opened.
inline absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", what, " file ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace longqa
