// GraphOpTypes: the bounded protobuf walk that finds a graph's operators (issue 10, padding).
#include "model/graph_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ebb/error.h"

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string Field(uint64_t field, const std::string& bytes) {  // length-delimited
  return Varint(field << 3 | 2) + Varint(bytes.size()) + bytes;
}
std::string VarintField(uint64_t field, uint64_t v) { return Varint(field << 3) + Varint(v); }

std::string Node(const std::string& op, const std::string& name) {
  // input, output, name, op_type, attribute (with a tensor), domain
  return Field(1, "x") + Field(2, "y") + Field(3, name) + Field(4, op) +
         Field(5, Field(1, "axis") + VarintField(3, 1) + Field(5, std::string(100, 'w'))) +
         Field(7, "com.microsoft");
}

class GraphOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ebb_graph_ops_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Write(const std::string& bytes) {
    const fs::path p = dir_ / "model.onnx";
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  fs::path dir_;
};

TEST_F(GraphOpsTest, FindsTheMainGraphsOpTypesAndSkipsEverythingElse) {
  // A 1 MiB initializer (GraphProto.initializer = 5) between the nodes is skipped by seeking.
  const std::string initializer = Field(5, Field(8, "w") + Field(9, std::string(1 << 20, 'z')));
  const std::string graph = Field(1, Node("MatMul", "a")) + initializer +
                            Field(1, Node("GroupQueryAttention", "b")) + Field(2, "main") +
                            Field(1, Node("MatMul", "c"));
  const std::string model = VarintField(1, 8) + Field(2, "ebb-test") +
                            Field(8, Field(1, "") + VarintField(2, 17)) + Field(7, graph) +
                            Field(14, Field(1, "key") + Field(2, "value"));
  EXPECT_EQ(GraphOpTypes(Write(model)), (std::set<std::string>{"GroupQueryAttention", "MatMul"}));
}

TEST_F(GraphOpsTest, GraphOpsCountsNodesPerDomainAndOperator) {
  // Field order inside a node is free: the domain (7) may come before the op_type (4).
  const std::string plain = Field(1, "x") + Field(4, "MatMul");
  const std::string spelled = Field(7, "ai.onnx") + Field(4, "MatMul");
  const std::string custom = Field(7, "ebb.ggml") + Field(4, "MatMulQ4_0");
  const std::string graph = Field(1, plain) + Field(1, spelled) + Field(1, custom) +
                            Field(1, Node("GroupQueryAttention", "g1")) +
                            Field(1, Node("GroupQueryAttention", "g2")) + Field(1, custom);
  const auto ops = GraphOps(Write(VarintField(1, 8) + Field(7, graph)));
  EXPECT_EQ(ops, (std::map<OpId, int>{{{"", "MatMul"}, 2},
                                      {{"com.microsoft", "GroupQueryAttention"}, 2},
                                      {{"ebb.ggml", "MatMulQ4_0"}, 2}}));
  // An over-long domain is not an operator's: the file is refused, naming the field.
  const std::string bad = Field(7, Field(1, Field(7, std::string(2000, 'd'))));
  try {
    GraphOps(Write(VarintField(1, 8) + bad));
    ADD_FAILURE() << "accepted a 2000-byte domain";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("domain of 2000 bytes"));
  }
}

TEST_F(GraphOpsTest, AModelWithoutGqaHasNoGqa) {
  const std::string model = VarintField(1, 8) + Field(7, Field(1, Node("Attention", "a")));
  EXPECT_EQ(GraphOpTypes(Write(model)).count("GroupQueryAttention"), 0u);
}

TEST_F(GraphOpsTest, TruncatedOrCorruptFilesAreClearErrors) {
  const std::string model = VarintField(1, 8) + Field(7, Field(1, Node("MatMul", "a")));
  for (size_t cut : {model.size() - 1, model.size() - 10, size_t{3}}) {
    try {
      GraphOpTypes(Write(model.substr(0, cut)));
      ADD_FAILURE() << "accepted a file truncated at " << cut;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr("model.onnx: not a well-formed ONNX model"));
    }
  }
  // A length that claims far more than the file holds is refused without reading it.
  const std::string huge = VarintField(1, 8) + Varint(7 << 3 | 2) + Varint(uint64_t{1} << 40);
  EXPECT_THROW(GraphOpTypes(Write(huge)), Error);
  // A group (wire type 3) is not ONNX.
  EXPECT_THROW(GraphOpTypes(Write(Varint(1 << 3 | 3))), Error);
  try {
    GraphOpTypes(dir_ / "missing.onnx");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
  }
}

}  // namespace
}  // namespace ebb::internal
