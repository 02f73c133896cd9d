// Protobuf wire-format reading and writing for ONNX files, without linking protobuf.
//
// ebb edits ONNX files in two places (model/last_logits.cpp, model/prepacked_align.cpp): a
// bounded walk over a memory-mapped file that copies most bytes verbatim and re-emits the few
// messages it changes. These are the shared pieces: a field reader over a byte span, the writers
// of tags, varints and length-delimited fields, and a read-only file mapping.
// Thread-safety: free functions and value types with no shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ebb::internal::proto {

// Wire types.
constexpr int kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5;

// The ONNX field numbers ebb reads or writes (onnx.proto3), in one list so that the readers
// (model/graph_ops.cpp, model/last_logits.cpp, model/prepacked_align.cpp) agree.
namespace onnx {
constexpr uint64_t kModelGraph = 7, kModelOpsetImport = 8;  // ModelProto.graph, .opset_import
constexpr uint64_t kOpsetDomain = 1, kOpsetVersion = 2;     // OperatorSetIdProto
constexpr uint64_t kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphInput = 11,
                   kGraphOutput = 12;  // GraphProto
constexpr uint64_t kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4,
                   kNodeAttribute = 5, kNodeDomain = 7;  // NodeProto
constexpr uint64_t kAttrName = 1, kAttrInt = 3, kAttrTensor = 5, kAttrGraph = 6, kAttrGraphs = 11,
                   kAttrType = 20;                         // AttributeProto
constexpr uint64_t kAttrTypeInt = 2, kAttrTypeTensor = 4;  // AttributeProto.AttributeType
constexpr uint64_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9,
                   kTensorExternalData = 13;                // TensorProto
constexpr uint64_t kEntryKey = 1, kEntryValue = 2;          // StringStringEntryProto
constexpr uint64_t kValueInfoName = 1, kValueInfoType = 2;  // ValueInfoProto
constexpr uint64_t kTypeTensor = 1, kTensorElemType = 1, kTensorShape = 2, kShapeDim = 1,
                   kDimParam = 2;  // TypeProto, TypeProto.Tensor, TensorShapeProto, Dimension
constexpr uint64_t kUint8 = 2, kInt64 = 7;                     // TensorProto.DataType.UINT8, INT64
constexpr uint64_t kFloat = 1, kFloat16 = 10, kBfloat16 = 16;  // TensorProto.DataType
}  // namespace onnx

// A malformed file: the caller falls back to loading it unchanged (ORT then says what is wrong).
// `system`: the file could not be opened, read or mapped for want of memory or descriptors
// (IsResourceErrno): nothing was read, so nothing is known about the graph, and another try may
// succeed.
struct Malformed {
  std::string what;
  bool system = false;
};

// Reads protobuf fields from a byte span (the memory-mapped model file).
class Span {
 public:
  Span(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos = 0;

  uint64_t Varint(uint64_t end) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end) throw Malformed{"truncated varint"};
      const uint8_t c = data_[pos++];
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return v;
    }
    throw Malformed{"varint longer than 10 bytes"};
  }
  // Consumes a field's value; returns the [begin, end) of a length-delimited payload, or of a
  // varint's bytes (VarintIn reads its value).
  std::pair<uint64_t, uint64_t> Value(int wire_type, uint64_t end) {
    uint64_t n = 0;
    switch (wire_type) {
      case kVarint: {
        const uint64_t begin = pos;
        Varint(end);
        return {begin, pos};
      }
      case kFixed64:
        n = 8;
        break;
      case kFixed32:
        n = 4;
        break;
      case kLen:
        n = Varint(end);
        break;
      default:
        throw Malformed{"unsupported wire type " + std::to_string(wire_type)};
    }
    if (n > end - pos) throw Malformed{"field past the end of its message"};
    const uint64_t begin = pos;
    pos += n;
    return {begin, pos};
  }
  // The value of the varint whose bytes are `r` (a kVarint field's range from Value()).
  uint64_t VarintIn(std::pair<uint64_t, uint64_t> r) const {
    Span c(data_, size_);
    c.pos = r.first;
    return c.Varint(r.second);
  }
  std::string_view Str(std::pair<uint64_t, uint64_t> r) const {
    return {reinterpret_cast<const char*>(data_ + r.first), r.second - r.first};
  }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  const uint8_t* data_;
  uint64_t size_;
};

// Calls on_field(field, wire_type, tag_begin, value_range) for each field of [begin, end).
template <typename F>
void ForEachField(Span& s, uint64_t begin, uint64_t end, F&& on_field) {
  s.pos = begin;
  while (s.pos < end) {
    const uint64_t tag_begin = s.pos;
    const uint64_t tag = s.Varint(end);
    if ((tag >> 3) == 0) throw Malformed{"field number 0"};
    const int wire_type = static_cast<int>(tag & 7);
    const auto value = s.Value(wire_type, end);
    const uint64_t after = s.pos;
    on_field(tag >> 3, wire_type, tag_begin, value);
    s.pos = after;
  }
}

inline void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void PutTag(std::string& out, uint64_t field, int wire_type) {
  PutVarint(out, (field << 3) | static_cast<uint64_t>(wire_type));
}
inline void PutLen(std::string& out, uint64_t field, std::string_view payload) {
  PutTag(out, field, kLen);
  PutVarint(out, payload.size());
  out.append(payload);
}
inline void PutInt(std::string& out, uint64_t field, uint64_t v) {
  PutTag(out, field, kVarint);
  PutVarint(out, v);
}

// One StringStringEntryProto of a TensorProto's external_data ("location", "offset", "length",
// ORT's "prepacked_N").
struct Entry {
  std::string key, value;
};
// The external-data records of one TensorProto payload [tensor), in file order.
std::vector<Entry> ReadEntries(Span& s, std::pair<uint64_t, uint64_t> tensor);
// The "location" record's value; "" for a tensor whose data is in the graph file.
std::string LocationOf(const std::vector<Entry>& entries);
// A TensorProto's name ("" when it has none).
std::string TensorName(Span& s, std::pair<uint64_t, uint64_t> tensor);
// The payload of the ModelProto's one graph; Malformed when there is not exactly one.
std::pair<uint64_t, uint64_t> FindGraph(Span& s);

// A read-only, private mapping of a whole file (platform::MapFileReadOnly). Throws Malformed when
// the file cannot be opened, is empty, or cannot be mapped.
class Mapping {
 public:
  explicit Mapping(const std::filesystem::path& path);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace ebb::internal::proto
