// Built only in CUDA builds (tests/gpu/run.sh): the whole model on the GPU answers like the CPU.
#include <ATen/ATen.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "model/engine.h"
#include "tools/random_model.h"

namespace longqa {
namespace {

// Removes the model folder (plain files only) with POSIX calls: on the lent GPU machines a binary
// built on Debian 12 crashed inside std::filesystem::remove_all of the machine's libstdc++ (a call
// through a null pointer, after every check had passed).
void RemoveModelFolder(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

void ExpectSameAnswers(const std::string& architecture, const std::string& layers) {
  ASSERT_TRUE(at::hasCUDA()) << "this test needs a CUDA device";
  RandomModelSpec spec;
  spec.architecture = architecture;
  spec.layers = layers;
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("longqa_gpu_" + architecture + std::to_string(getpid())))
                              .string();
  ASSERT_TRUE(WriteRandomModel(spec, dir).ok());
  auto cpu = Engine::LoadFromDir(dir, {2, "cpu"});
  auto gpu = Engine::LoadFromDir(dir, {2, "cuda"});
  ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().message();
  for (int i = 0; i < 3; ++i) {
    QaRequest r;
    r.question = "kalo ruso";
    for (int p = 0; p < 3 + 4 * i; ++p)
      r.text += (p ? "\n\n" : "") + std::string(40 + 30 * i, 'a' + p % 20);
    r.options.n_best = 3;
    const auto a = (*cpu)->Answer(r), b = (*gpu)->Answer(r);
    ASSERT_TRUE(a.ok() && b.ok()) << b.status().message();
    EXPECT_EQ(a->type, b->type);
    EXPECT_EQ(a->long_answer.paragraph_index, b->long_answer.paragraph_index);
    EXPECT_NEAR(a->no_answer_score, b->no_answer_score, 1e-3);
    EXPECT_NEAR(a->long_answer.score, b->long_answer.score, 1e-3);
  }
  RemoveModelFolder(dir);
}

TEST(GpuEngineTest, ClusterFormerOnCudaMatchesCpu) { ExpectSameAnswers("cluster_former", "SSCS"); }
TEST(GpuEngineTest, EtcOnCudaMatchesCpu) { ExpectSameAnswers("etc", "EE"); }

}  // namespace
}  // namespace longqa
