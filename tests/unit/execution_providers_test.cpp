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

}  // namespace
}  // namespace ebb::internal
