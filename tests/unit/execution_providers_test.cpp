// Execution provider names map to one canonical short name (issue 10, bug 8).
#include "ort/execution_providers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ort/provider_plan.h"

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

// One resolution of the provider list (issue 22): config first, user options merged by
// canonical name, execution_provider replacing the list, and has_gpu from what remains.
TEST(ProviderPlan, ConfigThenUserMergedByCanonicalNameAndExecutionProviderReplaces) {
  std::vector<ProviderOptions> config = {{"CUDAExecutionProvider", {{"device_id", "0"}}}};
  ModelOptions o;
  o.provider_options["cuda"]["device_id"] = "1";
  o.provider_options["DirectML"]["x"] = "y";
  ProviderPlan p = ResolveProviders(config, o);
  EXPECT_EQ(p.order, (std::vector<std::string>{"cuda", "dml"}));
  EXPECT_EQ(p.options.at("cuda").at("device_id"), "1") << "the user's key wins";
  EXPECT_EQ(p.named_by.at("cuda"), "genai_config.json");
  EXPECT_TRUE(p.has_gpu());
  EXPECT_EQ(p.Describe(),
            "cuda (genai_config.json), then dml (provider_options.DirectML), then cpu");

  o.execution_provider = "cpu";
  p = ResolveProviders(config, o);
  EXPECT_EQ(p.order, (std::vector<std::string>{"cpu"}));
  EXPECT_EQ(p.dropped, (std::vector<std::string>{"cuda", "dml"}));
  EXPECT_FALSE(p.has_gpu()) << "execution_provider=cpu runs on no GPU whatever the config says";
  EXPECT_EQ(p.Describe(), "cpu (execution_provider=cpu)");

  EXPECT_FALSE(ResolveProviders({}, ModelOptions{}).has_gpu());
  EXPECT_EQ(ResolveProviders({}, ModelOptions{}).Describe(), "cpu");
}

}  // namespace
}  // namespace ebb::internal
