// ParseByteSize at its edges (issue 10: values above INT64_MAX overflowed llround); the option
// table's defaults against the fields they describe, and its enum aliases (issue 22).
#include "ebb/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/option_parse.h"
#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ort/session_options.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;

// Issue 38: "config first, then the user's keys win" was written five times (the session, the
// cache key, the refusal probe, the custom-op library, the load's hints); now once.
TEST(EffectiveSessionOptions, TheUsersKeysWinOverTheConfigs) {
  ModelOptions user;
  user.Set("session_options.intra_op_num_threads", "3");
  user.Set("session_options.session.disable_prepacking", "1");
  const internal::EffectiveSessionOptions s(
      {{"intra_op_num_threads", "1"}, {"enable_mem_pattern", "1"}}, user);
  ASSERT_NE(s.Find("intra_op_num_threads"), nullptr);
  EXPECT_EQ(*s.Find("intra_op_num_threads"), "3");
  EXPECT_TRUE(s.IsOn("enable_mem_pattern"));
  EXPECT_TRUE(s.IsOn("session.disable_prepacking"));
  EXPECT_FALSE(s.IsOn("intra_op_num_threads"));
  EXPECT_EQ(s.Find("graph_optimization_level"), nullptr);
  EXPECT_EQ(s.entries().size(), 3u);
}

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

void ExpectRefused(const char* text, const char* why) {
  try {
    ParseByteSize(text, "kv_cache.max_bytes");
    ADD_FAILURE() << text << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << text;
    EXPECT_THAT(e.what(), HasSubstr(std::string("kv_cache.max_bytes='") + text + "'"));
    EXPECT_THAT(e.what(), HasSubstr(why)) << text;
  }
}

TEST(ParseByteSizeIssue10, ExactUpToUint64MaxAndAClearErrorAbove) {
  EXPECT_EQ(ParseByteSize("18446744073709551615", "k"), kMax);
  EXPECT_EQ(ParseByteSize("9300000000000000000", "k"), 9300000000000000000ull);  // > INT64_MAX
  EXPECT_EQ(ParseByteSize("9223372036854775808", "k"), 9223372036854775808ull);
  EXPECT_EQ(ParseByteSize("16777215TiB", "k"), 16777215ull << 40);
  EXPECT_EQ(ParseByteSize("18446744073GB", "k"), 18446744073000000000ull);
  ExpectRefused("18446744073709551616", "18446744073709551615 bytes");
  ExpectRefused("16777216TiB", "18446744073709551615 bytes");
  ExpectRefused("18446744074GB", "18446744073709551615 bytes");
  ExpectRefused("99999999999999999999999", "18446744073709551615 bytes");
}

TEST(ParseByteSize, UnitsAndBadForms) {
  EXPECT_EQ(ParseByteSize("0", "k"), 0u);
  EXPECT_EQ(ParseByteSize("1048576", "k"), 1048576u);
  EXPECT_EQ(ParseByteSize("512MiB", "k"), 512ull << 20);
  EXPECT_EQ(ParseByteSize(" 2 GiB ", "k"), 2ull << 30);
  EXPECT_EQ(ParseByteSize("1.5GB", "k"), 1500000000u);
  EXPECT_EQ(ParseByteSize("0.5KiB", "k"), 512u);
  ExpectRefused("", "is not a size");
  ExpectRefused("12XB", "is not a size");
  ExpectRefused("-1", "is not a size");
  ExpectRefused("1.2.3", "is not a size");
}

// Rows whose default is a description, not a value a setter takes: what the field's default
// means instead. Any other row's default, set through its setter, must leave the struct as
// default-constructed (issue 22: a default was written up to four times and nothing tied them).
bool DefaultIsADescription(std::string_view key) {
  static const std::string_view kDescribed[] = {
      "execution_provider",  // "" = the config's list
      "chat_template",       // "" = the folder's template
      "model_cache.dir",     // "" = $EBB_MODEL_CACHE_DIR, else auto
      "max_length",          // 0 = the config's search.max_length, else the context
      "logit_bias",          // empty = none
      "do_sample",
      "top_k",
      "top_p",
      "temperature",
      "repetition_penalty",  // unset = the config's
      "embed.normalize",     // unset = modules.json's Normalize module
      "stop",                // "(none)" = no stop string
      "json_schema",         // "(none)" = no constraint (empty string)
      "regex",
      "grammar",
      "constraint_prefix",
      "constraint_suffix",
      "constraint_trigger",
  };
  for (std::string_view k : kDescribed) {
    if (k == key) return true;
  }
  return false;
}

TEST(OptionTableIssue22, EveryDefaultIsTheFieldsDefault) {
  int checked = 0;
  for (const OptionSpec& s : OptionTable()) {
    const std::string key(s.key), def(s.default_value);
    SCOPED_TRACE(key + " default '" + def + "'");
    if (DefaultIsADescription(key)) continue;
    if (HasScope(s, OptionScope::kModel)) {
      ModelOptions set;
      set.Set(key, def);
      EXPECT_TRUE(set == ModelOptions{}) << "ModelOptions' field default differs from the table";
      ++checked;
    }
    if (HasScope(s, OptionScope::kRequest) && key.starts_with("embed.")) {
      EmbedRequest set;
      set.Set(key, def);
      EXPECT_TRUE(set.options == EmbedOptions{}) << "EmbedOptions' default differs";
      ++checked;
    } else if (HasScope(s, OptionScope::kRequest) && !HasScope(s, OptionScope::kModel)) {
      GenerateRequest set;  // the loop's keys, and GeneratorParams' through it
      set.Set(key, def);
      const GenerateRequest fresh;
      EXPECT_TRUE(set.params == GeneratorParams{}) << "GeneratorParams' default differs";
      EXPECT_EQ(set.max_new_tokens, fresh.max_new_tokens) << "GenerateRequest's default differs";
      EXPECT_EQ(set.add_generation_prompt, fresh.add_generation_prompt);
      EXPECT_EQ(set.stop, fresh.stop);
      ++checked;
    }
  }
  EXPECT_GE(checked, 29) << "the rows of ModelOptions, GeneratorParams and EmbedOptions";
}

// Every alias names one of its row's choices, and every setter path reads it as that choice.
TEST(OptionTableIssue22, EnumAliasesNameAChoiceOfTheirRow) {
  int aliases = 0;
  for (const OptionSpec& s : OptionTable()) {
    if (s.aliases.empty()) continue;
    ASSERT_EQ(s.type, OptionType::kEnum) << s.key;
    std::string_view rest = s.aliases;
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      const std::string_view alias = rest.substr(0, bar);
      rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
      const auto eq = alias.find('=');
      ASSERT_NE(eq, std::string_view::npos) << s.key << ": '" << alias << "'";
      const std::string name(alias.substr(0, eq)), choice(alias.substr(eq + 1));
      EXPECT_EQ(internal::CanonicalEnumValue(s, name), choice) << s.key;
      EXPECT_EQ(internal::CanonicalEnumValue(s, choice), choice) << s.key << ": not a choice";
      ++aliases;
    }
  }
  EXPECT_GE(aliases, 4);
  const OptionSpec* mode = FindOption("execution_mode");
  ASSERT_NE(mode, nullptr);
  try {
    internal::ValidateOptionValue(*mode, "ORT_SOMETIMES");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not one of: sequential parallel (or ONNX Runtime's "
                                    "ORT_SEQUENTIAL ORT_PARALLEL)"));
  }
  EXPECT_THROW(internal::ValidateOptionValue(*mode, ""), Error) << "an empty value is no alias";
}

}  // namespace
}  // namespace ebb
