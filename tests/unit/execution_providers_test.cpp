// Execution provider names map to one canonical short name (issue 10, bug 8).
#include "ort/execution_providers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ebb::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ExecutionProviderNamesIssue10, EverySpellingMapsToOneCanonicalName) {
  for (const char* n : {"cpu", "CPU", "CPUExecutionProvider", "cpuexecutionprovider"}) {
    EXPECT_EQ(CanonicalProviderName(n), "cpu") << n;
  }
  for (const char* n : {"cuda", "CUDA", "CUDAExecutionProvider"}) {
    EXPECT_EQ(CanonicalProviderName(n), "cuda") << n;
  }
  for (const char* n : {"dml", "DML", "DirectML", "DmlExecutionProvider"}) {
    EXPECT_EQ(CanonicalProviderName(n), "dml") << n;
  }
  EXPECT_EQ(CanonicalProviderName("TensorrtExecutionProvider"), "tensorrt");
  EXPECT_EQ(CanonicalProviderName("QNN"), "qnn");
  EXPECT_EQ(CanonicalProviderName("SomethingNew"), "SomethingNew");  // passed to ORT as given
  EXPECT_EQ(OrtProviderName("cuda"), "CUDAExecutionProvider");
  EXPECT_EQ(OrtProviderName("dml"), "DmlExecutionProvider");
  EXPECT_EQ(OrtProviderName("SomethingNew"), "");
  EXPECT_EQ(OrtAppendName("qnn"), "QNN");
  EXPECT_EQ(OrtAppendName("xnnpack"), "XNNPACK");
}

TEST(ExecutionProviderNamesIssue10, MissingProviderMessagesNameARealWayOut) {
  const std::string cuda =
      MissingProviderMessage("cuda", "genai_config.json", "CPUExecutionProvider");
  EXPECT_THAT(cuda, HasSubstr("CUDA (cuda, CUDAExecutionProvider)"));
  EXPECT_THAT(cuda, HasSubstr("available: CPUExecutionProvider"));
  EXPECT_THAT(cuda, HasSubstr("--ep cpu"));
  EXPECT_THAT(cuda, Not(HasSubstr("EBB_ORT_GPU")));
  const std::string dml = MissingProviderMessage("dml", "execution_provider=dml", "x");
  EXPECT_THAT(dml, HasSubstr("DirectML needs Windows"));
  EXPECT_THAT(dml, HasSubstr("execution_provider=cpu"));
}

// ORT 1.30's onnxruntime-node build lists CUDA, TensorRT and WebGPU without their libraries: the
// message says so, with ORT's reason and the same ways out, instead of an option error.
TEST(ExecutionProviderNames, ListedButNotLoadableSaysWhy) {
  const std::string cuda = MissingProviderMessage(
      "cuda", "execution_provider=cuda", "CUDAExecutionProvider, CPUExecutionProvider",
      "Failed to load library libonnxruntime_providers_shared.so\n");
  EXPECT_THAT(cuda, HasSubstr("execution_provider=cuda asks for the execution provider CUDA"));
  EXPECT_THAT(cuda,
              HasSubstr("lists (available: CUDAExecutionProvider, CPUExecutionProvider) but "
                        "cannot add: Failed to load library libonnxruntime_providers_shared.so;"));
  EXPECT_THAT(cuda, HasSubstr("EBB_ORT_ROOT"));
  EXPECT_THAT(cuda, HasSubstr("--ep cpu"));
  EXPECT_THAT(cuda, Not(HasSubstr("does not have")));
}

}  // namespace
}  // namespace ebb::internal
