#include "model/proto_wire.h"

#include <string>

#include "core/files.h"
#include "platform/file.h"
#include "platform/vm.h"

namespace ebb::internal::proto {

Mapping::Mapping(const std::filesystem::path& path) {
  int err = 0;
  platform::File file = platform::File::Open(path, platform::OpenMode::kRead, &err);
  if (!file.is_open()) {
    throw Malformed{"cannot open the file: " + internal::DescribeErrno(err),
                    internal::IsResourceErrno(err)};
  }
  platform::FileInfo info;
  if (const int stat_err = file.Stat(&info); stat_err != 0) {
    throw Malformed{"cannot stat the file: " + internal::DescribeErrno(stat_err),
                    internal::IsResourceErrno(stat_err)};
  }
  if (info.size == 0) throw Malformed{"empty file"};
  size_ = info.size;
  const platform::MapResult m = platform::MapFileReadOnly(file, size_);
  if (m.addr == nullptr) {  // `file` closes either way
    throw Malformed{"cannot map the file: " + internal::DescribeErrno(m.err),
                    internal::IsResourceErrno(m.err)};
  }
  data_ = static_cast<const uint8_t*>(m.addr);
}

std::vector<Entry> ReadEntries(Span& s, std::pair<uint64_t, uint64_t> tensor) {
  using namespace onnx;
  std::vector<Entry> entries;
  ForEachField(s, tensor.first, tensor.second, [&](uint64_t field, int wt, uint64_t, auto v) {
    if (field != kTensorExternalData || wt != kLen) return;
    Entry e;
    ForEachField(s, v.first, v.second, [&](uint64_t f, int w, uint64_t, auto r) {
      if (w != kLen) return;
      if (f == kEntryKey) e.key = std::string(s.Str(r));
      if (f == kEntryValue) e.value = std::string(s.Str(r));
    });
    entries.push_back(std::move(e));
  });
  return entries;
}

std::string LocationOf(const std::vector<Entry>& entries) {
  for (const auto& e : entries) {
    if (e.key == "location") return e.value;
  }
  return {};
}

std::string TensorName(Span& s, std::pair<uint64_t, uint64_t> tensor) {
  std::string name;
  ForEachField(s, tensor.first, tensor.second, [&](uint64_t field, int wt, uint64_t, auto v) {
    if (field == onnx::kTensorName && wt == kLen) name = std::string(s.Str(v));
  });
  return name;
}

std::pair<uint64_t, uint64_t> FindGraph(Span& s) {
  std::pair<uint64_t, uint64_t> graph{0, 0};
  int graphs = 0;
  ForEachField(s, 0, s.size(), [&](uint64_t field, int wt, uint64_t, auto v) {
    if (field == onnx::kModelGraph && wt == kLen) {
      graph = v;
      ++graphs;
    }
  });
  if (graphs != 1) throw Malformed{"expected one graph, found " + std::to_string(graphs)};
  return graph;
}

Mapping::~Mapping() { platform::Unmap(const_cast<uint8_t*>(data_), size_); }

}  // namespace ebb::internal::proto
