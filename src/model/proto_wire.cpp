#include "model/proto_wire.h"

#include "platform/file.h"
#include "platform/vm.h"

namespace ebb::internal::proto {

Mapping::Mapping(const std::filesystem::path& path) {
  int err = 0;
  platform::File file = platform::File::Open(path, platform::OpenMode::kRead, &err);
  if (!file.is_open()) throw Malformed{"cannot open the file"};
  platform::FileInfo info;
  if (file.Stat(&info) != 0 || info.size == 0) throw Malformed{"empty or unreadable file"};
  size_ = info.size;
  const platform::MapResult m = platform::MapFileReadOnly(file, size_);
  if (m.addr == nullptr) throw Malformed{"cannot map the file"};  // `file` closes either way
  data_ = static_cast<const uint8_t*>(m.addr);
}

Mapping::~Mapping() { platform::Unmap(const_cast<uint8_t*>(data_), size_); }

}  // namespace ebb::internal::proto
