// Shared by the integration tests: a per-process temporary folder and the small random-weight
// model spec the test servers run (d=32, windows of 32 with stride 24: fast, yet many windows).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tools/random_model.h"

namespace longqa::testing_support {

// <tmp>/<prefix><pid>, created once per process.
inline std::filesystem::path ProcessTempDir(const std::string& prefix) {
  const auto dir = std::filesystem::temp_directory_path() / (prefix + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

inline RandomModelSpec SmallModelSpec() {
  RandomModelSpec spec;
  spec.layers = "SSCS";
  spec.hidden_size = 32;
  spec.num_heads = 2;
  spec.intermediate_size = 64;
  spec.window_tokens = 32;
  spec.stride_tokens = 24;
  spec.clusters = 4;
  spec.vocab_size = 300;
  return spec;
}

}  // namespace longqa::testing_support
