// ParseByteSize at its edges (issue 10: values above INT64_MAX overflowed llround).
#include "ebb/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "ebb/error.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace ebb
