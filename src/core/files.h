// Reading files that users point ebb at: bounded, regular files only, with errors that say
// what is wrong (missing, permission denied, a FIFO or device, a symlink loop, too large).
//
// Every loader goes through here, so /dev/zero symlinked as genai_config.json is refused before
// a byte is read, a FIFO as model.onnx does not block, and an unreadable file is not reported
// as "corrupt".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ebb::internal {

// Size limits for the small JSON and text files of a model folder.
constexpr uint64_t kMaxConfigFileBytes = 64ull << 20;    // genai_config.json, *_config.json
constexpr uint64_t kMaxTokenizerFileBytes = 1ull << 30;  // tokenizer.json (largest known ~30 MiB)

// Reads the whole of `path`, which must be a regular file (after symlinks) of at most
// `max_bytes`. `what` names the file's role in messages ("genai_config.json"). Throws
// ebb::Error: NotFound (no such file or folder), InvalidArgument (not a regular file, too large,
// symlink loop), FailedPrecondition (permission denied), Internal (other I/O errors, errno
// text included).
std::string ReadRegularFile(const std::filesystem::path& path, uint64_t max_bytes,
                            std::string_view what);

// Checks that `path` is a regular file that this process can open for reading, without reading
// it; returns its size. Same errors as ReadRegularFile (no size limit). For files another
// library reads (model.onnx, external data).
uint64_t CheckRegularFile(const std::filesystem::path& path, std::string_view what);

// Whether `path` exists (following symlinks): false only for ENOENT/ENOTDIR; any other failure
// (permission denied, symlink loop) throws as above, instead of std::filesystem's
// "internal: filesystem error".
bool FileExists(const std::filesystem::path& path, std::string_view what);

// "permission denied", "symlink loop (too many levels of symbolic links)", … for an errno.
std::string DescribeErrno(int err);

// Whether `err` says the process ran out of memory or descriptors (ENOMEM, EMFILE, ENFILE,
// EAGAIN): the system's state at that moment, not the file's; another try may succeed.
bool IsResourceErrno(int err);

}  // namespace ebb::internal
