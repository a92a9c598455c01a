#include "model/format/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace longqa {
namespace {

using nlohmann::json;

absl::StatusOr<at::ScalarType> DTypeOf(const std::string& dtype) {
  if (dtype == "F32") return at::kFloat;
  if (dtype == "F16") return at::kHalf;
  if (dtype == "BF16") return at::kBFloat16;
  return absl::InvalidArgumentError(absl::StrCat("unsupported dtype '", dtype, "'"));
}

const char* DTypeName(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "F32";
    case at::kHalf:
      return "F16";
    case at::kBFloat16:
      return "BF16";
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<std::map<std::string, SafetensorsEntry>> ParseSafetensorsHeader(
    const std::string& header_json, uint64_t data_bytes) {
  json header;
  try {
    header = json::parse(header_json);
  } catch (const json::exception& e) {
    return absl::DataLossError(absl::StrCat("header is not valid JSON: ", e.what()));
  }
  if (!header.is_object()) return absl::DataLossError("header is not a JSON object");
  std::map<std::string, SafetensorsEntry> entries;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    // (A structured binding cannot be captured before C++20: Clang refuses it.)
    auto bad = [&tensor = name](const std::string& why) {
      return absl::DataLossError(absl::StrCat("tensor '", tensor, "': ", why));
    };
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") ||
        !value.contains("data_offsets")) {
      return bad("entry needs dtype, shape and data_offsets");
    }
    SafetensorsEntry e;
    try {
      e.dtype = value["dtype"].get<std::string>();
      e.shape = value["shape"].get<std::vector<int64_t>>();
      const auto offsets = value["data_offsets"].get<std::vector<uint64_t>>();
      if (offsets.size() != 2) return bad("data_offsets must have two entries");
      e.begin = offsets[0];
      e.end = offsets[1];
    } catch (const json::exception& ex) {
      return bad(absl::StrCat("malformed entry: ", ex.what()));
    }
    auto type = DTypeOf(e.dtype);
    if (!type.ok()) return bad(std::string(type.status().message()));
    uint64_t numel = 1;
    for (int64_t dim : e.shape) {
      if (dim < 0) return bad("negative dimension");
      if (dim != 0 && numel > (uint64_t{1} << 48) / static_cast<uint64_t>(dim)) {
        return bad("shape is implausibly large");
      }
      numel *= static_cast<uint64_t>(dim);
    }
    const uint64_t bytes = numel * at::elementSize(*type);
    if (e.begin > e.end || e.end > data_bytes) {
      return bad(absl::StrCat("data_offsets [", e.begin, ", ", e.end, ") lie outside the ",
                              data_bytes, "-byte data section (truncated file?)"));
    }
    if (e.end - e.begin != bytes) {
      return bad(
          absl::StrCat("holds ", e.end - e.begin, " bytes but shape and dtype need ", bytes));
    }
    ranges.emplace_back(e.begin, e.end);
    entries.emplace(name, std::move(e));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return absl::DataLossError("tensors overlap in the data section");
    }
  }
  return entries;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) munmap(const_cast<uint8_t*>(map_), map_bytes_);
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::InternalError(absl::StrCat(path, ": cannot stat"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto fail = [&path](const std::string& why) {
    return absl::DataLossError(absl::StrCat(path, ": ", why));
  };
  if (size < 8) {
    ::close(fd);
    return fail("file is shorter than the 8-byte header length (truncated?)");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap failed"));
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->map_ = static_cast<const uint8_t*>(map);
  file->map_bytes_ = size;
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | file->map_[i];
  if (header_bytes > kMaxSafetensorsHeaderBytes) {
    return fail(absl::StrCat("header length ", header_bytes, " exceeds the ",
                             kMaxSafetensorsHeaderBytes, "-byte limit (corrupt file?)"));
  }
  if (header_bytes > size - 8) {
    return fail(absl::StrCat("header length ", header_bytes, " runs past the end of the ", size,
                             "-byte file (truncated?)"));
  }
  const std::string header(reinterpret_cast<const char*>(file->map_ + 8), header_bytes);
  auto entries = ParseSafetensorsHeader(header, size - 8 - header_bytes);
  if (!entries.ok()) return fail(std::string(entries.status().message()));
  file->entries_ = std::move(*entries);
  file->data_ = file->map_ + 8 + header_bytes;
  return file;
}

absl::StatusOr<at::Tensor> SafetensorsFile::Read(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor named '", name, "'"));
  }
  const SafetensorsEntry& e = it->second;
  const at::ScalarType type = *DTypeOf(e.dtype);
  at::Tensor out = at::empty(e.shape, at::TensorOptions().dtype(type));
  // (An empty tensor has no data pointer: memcpy must not see it, even for 0 bytes.)
  if (e.end > e.begin) std::memcpy(out.data_ptr(), data_ + e.begin, e.end - e.begin);
  return out;
}

absl::Status WriteSafetensors(const std::string& path,
                              const std::map<std::string, at::Tensor>& tensors) {
  json header = json::object();
  std::vector<at::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const char* dtype = DTypeName(tensor.scalar_type());
    if (dtype == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': dtype ",
                                                     c10::toString(tensor.scalar_type()),
                                                     " cannot be written (F32, F16, BF16 only)"));
    }
    at::Tensor t = tensor.to(at::kCPU).contiguous();
    const uint64_t bytes = t.numel() * t.element_size();
    header[name] = {
        {"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(t));
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');  // align the data section
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::InternalError(absl::StrCat(tmp, ": cannot open for writing"));
    uint8_t len[8];
    const uint64_t n = header_text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
    for (const at::Tensor& t : data) {
      out.write(static_cast<const char*>(t.data_ptr()),
                static_cast<std::streamsize>(t.numel() * t.element_size()));
    }
    if (!out.good()) return absl::InternalError(absl::StrCat(tmp, ": write failed"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat(path, ": rename failed"));
  }
  return absl::OkStatus();
}

}  // namespace longqa
