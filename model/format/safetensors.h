// The safetensors checkpoint format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}}, then the raw little-endian data. The reader maps the file
// and validates every header entry against the file size before any tensor is touched, so a
// truncated, corrupt or hostile file gives an error naming the tensor, never a crash.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace longqa {

// Header length above this is refused (a corrupt length would otherwise allocate gigabytes).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 64ull << 20;

struct SafetensorsEntry {
  std::string dtype;  // "F32", "F16" or "BF16"
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  // A CPU tensor owning a copy of the named tensor's data, in its stored dtype.
  absl::StatusOr<at::Tensor> Read(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t* map_ = nullptr;
  uint64_t map_bytes_ = 0;
  const uint8_t* data_ = nullptr;  // start of the data section
  std::map<std::string, SafetensorsEntry> entries_;
};

// Parses a header (the JSON text) against a data section of data_bytes; exposed for tests.
absl::StatusOr<std::map<std::string, SafetensorsEntry>> ParseSafetensorsHeader(
    const std::string& header_json, uint64_t data_bytes);

// Writes tensors (f32, f16 or bf16; any device) as a safetensors file, atomically (temp + rename).
absl::Status WriteSafetensors(const std::string& path,
                              const std::map<std::string, at::Tensor>& tensors);

}  // namespace longqa
