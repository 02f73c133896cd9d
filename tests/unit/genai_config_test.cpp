#include "model/genai_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ebb/error.h"
#include "test_env.h"

namespace ebb::internal {
namespace {

using ::testing::HasSubstr;

constexpr const char* kLlama = R"({
  "model": {
    "type": "llama", "vocab_size": 512, "context_length": 256,
    "bos_token_id": 1, "eos_token_id": [2, 3], "pad_token_id": 0,
    "decoder": {
      "filename": "model.onnx", "head_size": 16, "hidden_size": 64,
      "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
      "session_options": {"log_id": "x", "intra_op_num_threads": 2,
                          "provider_options": [{"cuda": {"gpu_mem_limit": "1024", "x": true}}]},
      "run_options": {"memory.enable_memory_arena_shrinkage": "cpu:0"},
      "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                 "past_key_names": "past_key_values.%d.key",
                 "past_value_names": "past_key_values.%d.value"},
      "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                  "present_value_names": "present.%d.value"}
    }
  },
  "search": {"max_length": 128, "top_k": 5, "past_present_share_buffer": true}
})";

std::string ErrorOf(const std::string& text) {
  try {
    ParseGenaiConfig(text, "/m/genai_config.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

TEST(GenaiConfig, ParsesBuilderStyleDecoder) {
  const GenaiConfig c = ParseGenaiConfig(kLlama, "/m/genai_config.json");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_FALSE(c.is_encoder);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.context_length, 256);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(c.model_path, std::filesystem::path("/m/model.onnx"));
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.io.past_key, "past_key_values.%d.key");
  EXPECT_TRUE(c.io.past_combined.empty());
  ASSERT_EQ(c.session_options.size(), 1u);  // log_id is dropped, provider_options split out
  EXPECT_EQ(c.session_options[0],
            (std::pair<std::string, std::string>{"intra_op_num_threads", "2"}));
  ASSERT_EQ(c.provider_options.size(), 1u);
  EXPECT_EQ(c.provider_options[0].name, "cuda");
  EXPECT_EQ(c.provider_options[0].options[1].second, "1");
  ASSERT_EQ(c.run_options.size(), 1u);
  EXPECT_EQ(c.search.max_length, 128);
  EXPECT_EQ(c.search.top_k, 5);
  EXPECT_TRUE(c.search.past_present_share_buffer);
  EXPECT_EQ(LayerName(c.io.past_key, 7), "past_key_values.7.key");
}

TEST(GenaiConfig, ErrorsNameFileAndField) {
  EXPECT_THAT(ErrorOf("{"), HasSubstr("/m/genai_config.json: not valid JSON"));
  EXPECT_THAT(ErrorOf(Replace(kLlama, "\"llama\"", "\"llamax\"")),
              HasSubstr("/model/type: unknown model type \"llamax\""));
  EXPECT_THAT(ErrorOf(Replace(kLlama, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3")),
              HasSubstr("/model/decoder/num_attention_heads: inconsistent head counts"));
  EXPECT_THAT(ErrorOf(Replace(kLlama, "\"head_size\": 16", "\"head_size\": \"16\"")),
              HasSubstr("/model/decoder/head_size: expected an integer"));
  EXPECT_THAT(ErrorOf(Replace(kLlama, "\"vocab_size\": 512,", "")),
              HasSubstr("/model/vocab_size: missing"));
  EXPECT_THAT(ErrorOf(Replace(kLlama, "\"hidden_size\": 64", "\"hidden_size\": 65")),
              HasSubstr("/model/decoder/hidden_size: inconsistent"));
  // Found by the genai_config fuzzer: heads * head_size overflowed int (UB). It is computed in
  // 64 bits and the file is refused as inconsistent, naming the true product.
  EXPECT_THAT(
      ErrorOf(Replace(kLlama, "\"num_attention_heads\": 4", "\"num_attention_heads\": 400033334")),
      HasSubstr("num_attention_heads*head_size=6400533344"));
}

TEST(GenaiConfig, MissingFolderAndMissingModelFileAreNotFound) {
  const auto dir = std::filesystem::temp_directory_path() / "ebb_genai_config_test";
  std::filesystem::remove_all(dir);
  try {
    LoadGenaiConfig(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("genai_config.json: not found"));
  }
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "genai_config.json") << kLlama;
  try {
    LoadGenaiConfig(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("/model/decoder/filename"));
    EXPECT_THAT(e.what(), HasSubstr("model.onnx does not exist"));
  }
  std::ofstream(dir / "model.onnx") << "x";
  EXPECT_EQ(LoadGenaiConfig(dir).model_type, "llama");
  std::filesystem::remove_all(dir);
}

TEST(GenaiConfig, ReadsTheSharedGpt2FixtureWhenPresent) {
  const std::filesystem::path dir = ebb::testing::SharedDir() / "models/tiny-random-gpt2-fp32";
  EBB_SKIP_UNLESS_EXISTS(dir);
  const GenaiConfig c = LoadGenaiConfig(dir);
  EXPECT_EQ(c.model_type, "gpt2");
  EXPECT_EQ(c.io.past_combined, "past_%d");
  EXPECT_EQ(c.io.present_combined, "present_%d");
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.pad_token_id, 98);
  ASSERT_EQ(c.session_options.size(), 1u);
  EXPECT_EQ(c.session_options[0].first, "session.use_device_allocator_for_initializers");
}

}  // namespace
}  // namespace ebb::internal
