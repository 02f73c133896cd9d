#include "model/prepacked_align.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "core/files.h"
#include "ebb/error.h"
#include "model/proto_wire.h"
#include "platform/file.h"

namespace ebb::internal {
namespace {

using proto::ForEachField;
using proto::kLen;
using proto::Malformed;
using proto::Mapping;
using proto::PutLen;
using proto::Span;

using namespace proto::onnx;  // the field numbers (proto_wire.h)

using Range = std::pair<uint64_t, uint64_t>;

using proto::Entry;
using proto::FindGraph;
using proto::LocationOf;
using proto::ReadEntries;

uint64_t ParseU64(std::string_view s, const char* what) {
  if (s.empty() || s.size() > 19)
    throw Malformed{std::string("bad ") + what + " '" + std::string(s) + "'"};
  uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9')
      throw Malformed{std::string("bad ") + what + " '" + std::string(s) + "'"};
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::vector<std::string_view> SplitView(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(
        s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// Calls fn(offset, length) for each region an initializer's records reference: the tensor's own
// bytes, then each prepacked blob.
template <typename F>
void ForEachRegion(const std::vector<Entry>& entries, F&& fn) {
  uint64_t offset = 0, length = 0;
  bool has_length = false;
  for (const auto& e : entries) {
    if (e.key == "offset") offset = ParseU64(e.value, "offset");
    if (e.key == "length") {
      length = ParseU64(e.value, "length");
      has_length = true;
    }
  }
  if (has_length) fn(offset, length, false);
  for (const auto& e : entries) {
    if (!e.key.starts_with("prepacked")) continue;
    const auto fields = SplitView(e.value, '|');
    for (size_t i = 1; i < fields.size(); ++i) {
      const auto blob = SplitView(fields[i], ';');
      if (blob.size() != 3) throw Malformed{"bad prepacked record '" + e.value + "'"};
      fn(ParseU64(blob[0], "prepacked offset"), ParseU64(blob[1], "prepacked length"), true);
    }
  }
}

// Calls fn(tensor_payload) for each main-graph initializer, after checking that no node carries
// a subgraph (whose initializers this rewrite would not see).
template <typename F>
void ForEachInitializer(Span& s, Range graph, F&& fn) {
  ForEachField(s, graph.first, graph.second, [&](uint64_t field, int wt, uint64_t, Range v) {
    if (wt != kLen) return;
    if (field == kGraphNode) {
      ForEachField(s, v.first, v.second, [&](uint64_t f, int w, uint64_t, Range attr) {
        if (f != kNodeAttribute || w != kLen) return;
        ForEachField(s, attr.first, attr.second, [&](uint64_t af, int, uint64_t, Range) {
          if (af == kAttrGraph || af == kAttrGraphs) {
            throw Malformed{
                "the graph has subgraphs (If/Loop/Scan), whose initializers are not rewritten"};
          }
        });
      });
    } else if (field == kGraphInitializer) {
      fn(v);
    }
  });
}

// Writes regions of source data files into `out` at aligned offsets, each distinct region (of one
// source) once.
class RegionWriter {
 public:
  RegionWriter(platform::File& out, uint64_t alignment) : out_(out), alignment_(alignment) {}

  uint64_t Place(const Mapping* src, uint64_t offset, uint64_t length) {
    if (src == nullptr)
      throw Malformed{"a tensor references external data, but there is no data file"};
    if (offset > src->size() || length > src->size() - offset) {
      throw Malformed{"a record references bytes [" + std::to_string(offset) + ", +" +
                      std::to_string(length) + ") past the data file's end (" +
                      std::to_string(src->size()) + " bytes)"};
    }
    const auto [it, inserted] = placed_.try_emplace({src, {offset, length}}, 0);
    if (!inserted) return it->second;
    static const char kZeros[4096] = {};
    uint64_t pad = (alignment_ - pos_ % alignment_) % alignment_;
    while (pad > 0) {
      const uint64_t n = std::min<uint64_t>(pad, sizeof(kZeros));
      if (const int err = out_.WriteAll(kZeros, n); err != 0)
        throw Malformed{"write failed: " + DescribeErrno(err)};
      pos_ += n;
      pad -= n;
    }
    if (const int err = out_.WriteAll(src->data() + offset, length); err != 0)
      throw Malformed{"write failed: " + DescribeErrno(err)};
    it->second = pos_;
    pos_ += length;
    ++num_regions_;
    if (offset % alignment_ != 0) ++num_were_misaligned_;
    return it->second;
  }
  uint64_t size() const { return pos_; }
  uint64_t num_regions() const { return num_regions_; }
  uint64_t num_were_misaligned() const { return num_were_misaligned_; }

 private:
  platform::File& out_;
  uint64_t alignment_;
  uint64_t pos_ = 0;
  uint64_t num_regions_ = 0;
  uint64_t num_were_misaligned_ = 0;
  std::map<std::pair<const Mapping*, Range>, uint64_t> placed_;
};

// The TensorProto payload [tensor) with its external-data records re-emitted for new offsets.
// `src` is the data file the records point into; `location` the data file name to write.
std::string RewriteTensor(Span& s, Range tensor, const std::vector<Entry>& entries,
                          const Mapping* src, const std::string& location, RegionWriter& out,
                          AlignedExternalData& stats) {
  std::vector<Entry> rewritten = entries;
  uint64_t new_offset = 0;
  std::vector<uint64_t> blob_offsets;
  ForEachRegion(entries, [&](uint64_t off, uint64_t len, bool prepacked) {
    const uint64_t at = out.Place(src, off, len);
    if (prepacked) {
      blob_offsets.push_back(at);
      ++stats.num_prepacked_blobs;
    } else {
      new_offset = at;
    }
  });
  size_t blob = 0;
  for (auto& e : rewritten) {
    if (e.key == "location") e.value = location;
    if (e.key == "offset") e.value = std::to_string(new_offset);
    if (!e.key.starts_with("prepacked")) continue;
    const auto fields = SplitView(e.value, '|');
    std::string v(fields[0]);
    for (size_t i = 1; i < fields.size(); ++i) {
      const auto parts = SplitView(fields[i], ';');
      // Appended piece by piece: `"|" + std::to_string(...)` trips GCC 12's -Wrestrict false
      // positive at -O2 (as in options_flags.cpp).
      v += '|';
      v += std::to_string(blob_offsets.at(blob++));
      v += ';';
      v += parts[1];
      v += ';';
      v += parts[2];
    }
    e.value = std::move(v);
  }
  // ORT writes "offset" only when it is not 0; a tensor moved away from 0 needs one.
  bool has_offset = false, has_length = false;
  for (const auto& e : rewritten) {
    has_offset |= e.key == "offset";
    has_length |= e.key == "length";
  }
  if (!has_offset && has_length && new_offset != 0) {
    rewritten.insert(rewritten.begin() + 1, Entry{"offset", std::to_string(new_offset)});
  }
  std::string result;
  bool emitted = false;
  ForEachField(
      s, tensor.first, tensor.second, [&](uint64_t field, int wt, uint64_t tag_begin, Range v) {
        if (field == kTensorExternalData && wt == kLen) {
          if (!emitted) {  // all records at the first record's place, in their original order
            for (const auto& e : rewritten) {
              std::string entry;
              PutLen(entry, kEntryKey, e.key);
              PutLen(entry, kEntryValue, e.value);
              PutLen(result, kTensorExternalData, entry);
            }
            emitted = true;
          }
          return;
        }
        result.append(reinterpret_cast<const char*>(s.data() + tag_begin), v.second - tag_begin);
      });
  return result;
}

}  // namespace

namespace {

// A graph whose initializers carry prepacked blobs (one saved prepacking chunk): its files stay
// mapped while the output is written.
struct Overlay {
  std::unique_ptr<Mapping> graph, data;
  std::map<std::string, Range> tensors;  // name -> TensorProto payload, those with blobs only
};

Overlay ReadOverlay(const std::filesystem::path& graph_path, const std::string& data_name) {
  Overlay o;
  o.graph = std::make_unique<Mapping>(graph_path);
  const std::filesystem::path data_path = graph_path.parent_path() / data_name;
  std::error_code ec;
  if (std::filesystem::exists(data_path, ec)) o.data = std::make_unique<Mapping>(data_path);
  Span s(o.graph->data(), o.graph->size());
  const Range graph = FindGraph(s);
  ForEachInitializer(s, graph, [&](Range v) {
    const std::vector<Entry> entries = ReadEntries(s, v);
    const bool has_blobs = std::any_of(entries.begin(), entries.end(), [](const Entry& e) {
      return e.key.starts_with("prepacked");
    });
    if (!has_blobs) return;
    if (LocationOf(entries) != data_name) {
      throw Malformed{graph_path.string() + ": prepacked initializer data not in '" + data_name +
                      "'"};
    }
    o.tensors.emplace(proto::TensorName(s, v), v);
  });
  return o;
}

}  // namespace

AlignedExternalData AlignExternalData(const std::filesystem::path& graph_in,
                                      const std::filesystem::path& graph_out,
                                      const std::string& data_name, uint64_t alignment,
                                      const std::vector<std::filesystem::path>& overlays) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw Error(ErrorCode::InvalidArgument, "AlignExternalData: alignment must be a power of two");
  }
  const std::filesystem::path data_in = graph_in.parent_path() / data_name;
  const std::filesystem::path data_out = graph_out.parent_path() / data_name;
  AlignedExternalData stats;
  platform::File data_file;  // closed by its destructor on failure
  try {
    const Mapping graph_file(graph_in);
    std::error_code ec;
    std::unique_ptr<Mapping> data;
    if (std::filesystem::exists(data_in, ec)) data = std::make_unique<Mapping>(data_in);
    Span s(graph_file.data(), graph_file.size());
    const Range graph = FindGraph(s);
    // Subgraphs: refused (their initializers would keep stale offsets).
    ForEachInitializer(s, graph, [](Range) {});
    std::vector<Overlay> layers;
    for (const auto& o : overlays) layers.push_back(ReadOverlay(o, data_name));
    int err = 0;
    data_file = platform::File::Open(data_out, platform::OpenMode::kWriteTruncate, &err);
    if (!data_file.is_open())
      throw Malformed{"cannot create " + data_out.string() + ": " + DescribeErrno(err)};
    RegionWriter out(data_file, alignment);

    // The graph with every external initializer re-emitted; everything else verbatim.
    std::string new_graph;
    ForEachField(
        s, graph.first, graph.second, [&](uint64_t field, int wt, uint64_t tag_begin, Range v) {
          if (field == kGraphInitializer && wt == kLen) {
            const std::vector<Entry> entries = ReadEntries(s, v);
            const std::string location = LocationOf(entries);
            if (!location.empty()) {
              if (location != data_name) {
                throw Malformed{"initializer data in '" + location + "', expected '" + data_name +
                                "'"};
              }
              ++stats.num_tensors;
              // A tensor a chunk saved with its blobs comes from that chunk, blobs and all.
              if (!layers.empty()) {
                const std::string name = proto::TensorName(s, v);
                for (const Overlay& layer : layers) {
                  const auto it = layer.tensors.find(name);
                  if (it == layer.tensors.end()) continue;
                  Span os(layer.graph->data(), layer.graph->size());
                  const std::vector<Entry> from = ReadEntries(os, it->second);
                  ++stats.num_from_overlays;
                  PutLen(
                      new_graph, kGraphInitializer,
                      RewriteTensor(os, it->second, from, layer.data.get(), data_name, out, stats));
                  return;
                }
              }
              PutLen(new_graph, kGraphInitializer,
                     RewriteTensor(s, v, entries, data.get(), data_name, out, stats));
              return;
            }
          }
          new_graph.append(reinterpret_cast<const char*>(s.data() + tag_begin),
                           v.second - tag_begin);
        });

    std::string model;
    ForEachField(s, 0, s.size(), [&](uint64_t field, int wt, uint64_t tag_begin, Range v) {
      if (field == kModelGraph && wt == kLen) {
        PutLen(model, kModelGraph, new_graph);
      } else {
        model.append(reinterpret_cast<const char*>(s.data() + tag_begin), v.second - tag_begin);
      }
    });
    stats.num_regions = out.num_regions();
    stats.num_were_misaligned = out.num_were_misaligned();
    stats.data_bytes = out.size();
    if (const int close_err = data_file.Close(); close_err != 0)
      throw Malformed{"cannot write " + data_out.string() + ": " + DescribeErrno(close_err)};
    platform::File graph_file_out =
        platform::File::Open(graph_out, platform::OpenMode::kWriteTruncate, &err);
    if (!graph_file_out.is_open())
      throw Malformed{"cannot create " + graph_out.string() + ": " + DescribeErrno(err)};
    const int write_err = graph_file_out.WriteAll(model);
    const int close_err = graph_file_out.Close();
    if (close_err != 0 || write_err != 0) {
      throw Malformed{"cannot write " + graph_out.string() + ": " +
                      DescribeErrno(write_err == 0 ? close_err : write_err)};
    }
  } catch (const Malformed& m) {
    throw Error(ErrorCode::Internal,
                "cannot align the external data of " + graph_in.string() + ": " + m.what);
  }
  return stats;
}

uint64_t CountMisalignedRegions(const std::filesystem::path& graph_path, uint64_t alignment) {
  try {
    const Mapping graph_file(graph_path);
    Span s(graph_file.data(), graph_file.size());
    const Range graph = FindGraph(s);
    uint64_t misaligned = 0;
    ForEachInitializer(s, graph, [&](Range v) {
      const std::vector<Entry> entries = ReadEntries(s, v);
      if (LocationOf(entries).empty()) return;
      ForEachRegion(entries, [&](uint64_t off, uint64_t, bool) {
        if (off % alignment != 0) ++misaligned;
      });
    });
    return misaligned;
  } catch (const Malformed& m) {
    throw Error(ErrorCode::Internal,
                "cannot read the external data records of " + graph_path.string() + ": " + m.what);
  }
}

}  // namespace ebb::internal
