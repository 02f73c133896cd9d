#include "model/graph_ops.h"

#include <cstdint>
#include <fstream>

#include "ebb/error.h"
#include "model/proto_wire.h"

namespace ebb::internal {
namespace {

// Protobuf wire types and ONNX field numbers: proto_wire.h's (one list).
using proto::kFixed32;
using proto::kFixed64;
using proto::kVarint;
constexpr int kLengthDelimited = proto::kLen;
using proto::onnx::kGraphNode;
using proto::onnx::kModelGraph;
using proto::onnx::kNodeDomain;
using proto::onnx::kNodeOpType;
// Longer op_type or domain strings are not ONNX operators: the file is not what it claims to be.
constexpr uint64_t kMaxOpTypeBytes = 1024;
// Skips shorter than this read through the stream's buffer; longer ones seek.
constexpr uint64_t kSeekAbove = 4096;

class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) {
      throw Error(ErrorCode::NotFound, path.string() + ": cannot open the model file");
    }
    in_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(in_.tellg());
    in_.seekg(0);
  }

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }

  [[noreturn]] void Fail(const std::string& what) const {
    throw Error(ErrorCode::InvalidArgument, path_.string() + ": not a well-formed ONNX model (" +
                                                what + " at byte " + std::to_string(pos_) + ")");
  }

  uint64_t Varint(uint64_t end) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end) Fail("truncated varint");
      const int c = in_.get();
      if (c == EOF) Fail("unexpected end of file");
      ++pos_;
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return v;
    }
    Fail("varint longer than 10 bytes");
  }

  // A length-delimited field's length, checked against the enclosing message's end.
  uint64_t Length(uint64_t end) {
    const uint64_t n = Varint(end);
    if (n > end - pos_) Fail("field length past the end of its message");
    return n;
  }

  void Skip(uint64_t n, uint64_t end) {
    if (n > end - pos_) Fail("field past the end of its message");
    if (n < kSeekAbove) {
      in_.ignore(static_cast<std::streamsize>(n));
    } else {
      in_.seekg(static_cast<std::streamoff>(pos_ + n));
    }
    if (!in_) Fail("unexpected end of file");
    pos_ += n;
  }

  void SkipField(int wire_type, uint64_t end) {
    switch (wire_type) {
      case kVarint:
        Varint(end);
        return;
      case kFixed64:
        Skip(8, end);
        return;
      case kLengthDelimited:
        Skip(Length(end), end);
        return;
      case kFixed32:
        Skip(4, end);
        return;
      default:
        Fail("unsupported wire type " + std::to_string(wire_type));
    }
  }

  std::string Bytes(uint64_t n) {
    std::string s(n, '\0');
    in_.read(s.data(), static_cast<std::streamsize>(n));
    if (!in_) Fail("unexpected end of file");
    pos_ += n;
    return s;
  }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
};

// Calls `on_field(field, wire_type, end)` for each field of the message ending at `end`; the
// callback consumes the field or returns false to have it skipped.
template <typename F>
void ForEachField(Reader& r, uint64_t end, F&& on_field) {
  while (r.pos() < end) {
    const uint64_t tag = r.Varint(end);
    const uint64_t field = tag >> 3;
    const int wire_type = static_cast<int>(tag & 7);
    if (field == 0) r.Fail("field number 0");
    if (!on_field(field, wire_type, end)) r.SkipField(wire_type, end);
  }
}

}  // namespace

std::map<OpId, int> GraphOps(const std::filesystem::path& onnx_file) {
  Reader r(onnx_file);
  std::map<OpId, int> ops;
  OpId current;
  auto node = [&](uint64_t field, int wire_type, uint64_t end) {
    if ((field != kNodeOpType && field != kNodeDomain) || wire_type != kLengthDelimited) {
      return false;
    }
    const uint64_t n = r.Length(end);
    if (n > kMaxOpTypeBytes) {
      r.Fail(std::string(field == kNodeOpType ? "op_type" : "domain") + " of " + std::to_string(n) +
             " bytes");
    }
    (field == kNodeOpType ? current.op_type : current.domain) = r.Bytes(n);
    return true;
  };
  auto graph = [&](uint64_t field, int wire_type, uint64_t end) {
    if (field != kGraphNode || wire_type != kLengthDelimited) return false;
    const uint64_t n = r.Length(end);
    current = OpId{};
    ForEachField(r, r.pos() + n, node);
    // "ai.onnx" is the default domain's other spelling.
    if (current.domain == "ai.onnx") current.domain.clear();
    ++ops[current];
    return true;
  };
  ForEachField(r, r.size(), [&](uint64_t field, int wire_type, uint64_t end) {
    if (field != kModelGraph || wire_type != kLengthDelimited) return false;
    const uint64_t n = r.Length(end);
    ForEachField(r, r.pos() + n, graph);
    return true;
  });
  return ops;
}

std::set<std::string> GraphOpTypes(const std::filesystem::path& onnx_file) {
  std::set<std::string> types;
  for (const auto& [op, count] : GraphOps(onnx_file)) types.insert(op.op_type);
  return types;
}

}  // namespace ebb::internal
