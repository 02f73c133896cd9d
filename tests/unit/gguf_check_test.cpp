// Issue 27: a GGUF file or folder got the generic "genai_config.json: not found".
#include "model/gguf_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ebb/error.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "model/genai_config.h"

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class GgufCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ebb-gguf-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }
  static std::string LoadError(const fs::path& p) {
    try {
      LoadModelFolderConfig(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

// GGUF v3 header: magic, version 3, tensor count 0, metadata count 0.
const std::string kGgufHeader = std::string("GGUF\x03\0\0\0", 8) + std::string(16, '\0');

TEST_F(GgufCheck, AFolderWithAGgufFileIsRefusedWithTheBuilderCommand) {
  const fs::path f = Write("tinyllama-q4_0.gguf", kGgufHeader);
  const std::string msg = LoadError(dir_);
  EXPECT_THAT(msg, HasSubstr(f.string()));
  EXPECT_THAT(msg, HasSubstr("GGUF"));
  EXPECT_THAT(msg, HasSubstr("onnxruntime-genai's layout"));
  EXPECT_THAT(msg, HasSubstr("genai_config.json"));
  EXPECT_THAT(msg, HasSubstr("python3 -m onnxruntime_genai.models.builder"));
  EXPECT_THAT(msg, Not(HasSubstr("not found")));
}

TEST_F(GgufCheck, AGgufFileGivenDirectlyIsRefusedEvenWithoutTheExtension) {
  const fs::path f = Write("model.bin", kGgufHeader);
  EXPECT_TRUE(IsGgufFile(f));
  EXPECT_THAT(LoadError(f), HasSubstr("a GGUF file (llama.cpp's format)"));
}

TEST_F(GgufCheck, ThePublicLoadRefusesItToo) {
  Write("m.gguf", kGgufHeader);
  try {
    ebb::LoadModel(dir_);
    FAIL() << "loaded a GGUF folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("onnxruntime_genai.models.builder"));
  }
}

TEST_F(GgufCheck, OtherFilesAndFoldersAreNotGguf) {
  const fs::path onnx = Write("model.onnx", std::string("\x08\x07\x12\x04test", 8));
  EXPECT_FALSE(IsGgufFile(onnx));
  EXPECT_FALSE(IsGgufFile(dir_));
  EXPECT_TRUE(FindGgufFile(dir_).empty());
  EXPECT_NO_THROW(RefuseGgufModel(dir_));
  // A .gguf name that is not a GGUF file is not taken for one.
  EXPECT_FALSE(IsGgufFile(Write("notes.gguf", "hello world")));
  EXPECT_TRUE(FindGgufFile(dir_).empty());
  // A genai folder that also holds a GGUF file is a genai folder.
  Write("x.gguf", kGgufHeader);
  EXPECT_FALSE(FindGgufFile(dir_).empty());
  Write("genai_config.json", "{}");
  EXPECT_NO_THROW(RefuseGgufModel(dir_));
}

}  // namespace
}  // namespace ebb::internal
