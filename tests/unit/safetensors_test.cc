// The safetensors checkpoint: round trips, and errors (never crashes) for truncated, corrupt,
// oversized-header and wrong-shape files.
#include "model/format/safetensors.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/format/config.h"
#include "model/format/weights.h"
#include "tests/unit/test_model.h"

namespace longqa {
namespace {

using testing_support::TinyConfig;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("longqa_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string ReadAll(const std::string& path) const {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void WriteAll(const std::string& path, const std::string& bytes) const {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::filesystem::path dir_;
};

TEST_F(SafetensorsTest, RoundTripKeepsValuesAndDtypes) {
  const TensorMap tensors = {{"a", at::randn({3, 5})},
                             {"b.half", at::randn({7}).to(at::kHalf)},
                             {"c.bf16", at::randn({2, 2, 2}).to(at::kBFloat16)},
                             {"empty", at::zeros({0, 4})}};
  ASSERT_TRUE(WriteSafetensors(Path("t.safetensors"), tensors).ok());
  auto file = SafetensorsFile::Open(Path("t.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ((*file)->entries().size(), 4u);
  for (const auto& [name, want] : tensors) {
    auto got = (*file)->Read(name);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->scalar_type(), want.scalar_type()) << name;
    EXPECT_TRUE(at::equal(*got, want)) << name;
  }
  EXPECT_FALSE((*file)->Read("missing").ok());
}

TEST_F(SafetensorsTest, ModelWeightsRoundTripThroughLoadWeights) {
  const ModelConfig c = TinyConfig("SCS", 16, 12, 3);
  const TensorMap w = RandomWeights(c, 7);
  ASSERT_TRUE(WriteSafetensors(Path("model.safetensors"), w).ok());
  auto loaded = LoadWeights(Path("model.safetensors"), c);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->size(), w.size());
  EXPECT_TRUE(
      at::equal(loaded->at("encoder.layer.1.centroids"), w.at("encoder.layer.1.centroids")));
}

TEST_F(SafetensorsTest, TruncatedFilesAreErrors) {
  ASSERT_TRUE(WriteSafetensors(Path("t.safetensors"), {{"x", at::randn({64, 64})}}).ok());
  const std::string bytes = ReadAll(Path("t.safetensors"));
  for (size_t keep : {size_t{0}, size_t{5}, size_t{20}, bytes.size() - 1}) {
    WriteAll(Path("cut.safetensors"), bytes.substr(0, keep));
    auto file = SafetensorsFile::Open(Path("cut.safetensors"));
    EXPECT_FALSE(file.ok()) << "kept " << keep << " bytes";
    if (keep == bytes.size() - 1) {
      EXPECT_NE(file.status().message().find("tensor 'x'"), std::string::npos)
          << file.status().message();
    }
  }
}

TEST_F(SafetensorsTest, CorruptAndOversizedHeadersAreErrors) {
  auto with_header = [&](const std::string& header, uint64_t claimed, const std::string& data) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(claimed >> (8 * i));
    WriteAll(Path("h.safetensors"), bytes + header + data);
    return SafetensorsFile::Open(Path("h.safetensors"));
  };
  EXPECT_FALSE(with_header("{not json", 9, "").ok());
  EXPECT_FALSE(with_header("[]", 2, "").ok());
  auto huge = with_header("{}", uint64_t{1} << 40, "");
  EXPECT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("exceeds"), std::string::npos);
  const std::string bad_dtype = R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})";
  EXPECT_FALSE(with_header(bad_dtype, bad_dtype.size(), std::string(8, '\0')).ok());
  const std::string bad_size = R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  auto sized = with_header(bad_size, bad_size.size(), std::string(8, '\0'));
  ASSERT_FALSE(sized.ok());
  EXPECT_NE(sized.status().message().find("tensor 'x'"), std::string::npos);
  const std::string overlap =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_FALSE(with_header(overlap, overlap.size(), std::string(12, '\0')).ok());
  const std::string negative = R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})";
  EXPECT_FALSE(with_header(negative, negative.size(), std::string(4, '\0')).ok());
}

TEST_F(SafetensorsTest, WrongShapesMissingAndExtraTensorsNameTheTensor) {
  const ModelConfig c = TinyConfig("SS", 16, 12);
  TensorMap w = RandomWeights(c, 1);
  w["encoder.layer.1.intermediate.dense.weight"] = at::zeros({5, 16});
  ASSERT_TRUE(WriteSafetensors(Path("m.safetensors"), w).ok());
  auto loaded = LoadWeights(Path("m.safetensors"), c);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("encoder.layer.1.intermediate.dense.weight"),
            std::string::npos)
      << loaded.status().message();

  w = RandomWeights(c, 1);
  w.erase("qa_outputs.bias");
  ASSERT_TRUE(WriteSafetensors(Path("m.safetensors"), w).ok());
  loaded = LoadWeights(Path("m.safetensors"), c);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("missing tensor 'qa_outputs.bias'"), std::string::npos);

  w = RandomWeights(c, 1);
  w["encoder.layer.0.centroids"] = at::zeros({4, 16});  // the config says layer 0 is S
  ASSERT_TRUE(WriteSafetensors(Path("m.safetensors"), w).ok());
  loaded = LoadWeights(Path("m.safetensors"), c);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("encoder.layer.0.centroids"), std::string::npos);
}

}  // namespace
}  // namespace longqa
