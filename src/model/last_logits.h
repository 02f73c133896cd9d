// Last-position logits: a load-time rewrite of a decoder graph so that a Run computes the LM
// head only for the positions ebb samples, not for every token of a prompt.
//
// Why: a prefill Run of S tokens computes [B, S, vocab] logits, and ebb keeps one row per
// sequence. At vocab 32k-152k the LM head is 20-30 % of a small model's prefill; llama.cpp skips
// it the same way (it asks for the last position's logits only). ORT computes every node of the
// graph whatever outputs are fetched, so the graph itself must change.
//
// The rewrite (nothing else in the graph changes): the node that produces the logits output
// (MatMul or com.microsoft MatMulNBits, possibly behind Cast nodes) reads its hidden-state input
// [B, S, H] through
//   Reshape(hidden, [-1, H]) -> Gather(axis 0, ebb_logits_index) -> Reshape([-1, 1, H])
// where `ebb_logits_index` is a new int64 graph input [batch_size] holding, per row b, the flat
// index b * S + (the position whose logits row b needs). The logits output is then [B, 1, vocab].
//
// The model file is never modified: the rewritten ModelProto is written to an anonymous memory
// file (memfd) that ORT loads by path, with the external data still read from the model's folder
// (session.model_external_initializers_file_folder_path). Its pages are page cache, not this
// process's anonymous memory, and go when the file is closed after the session is created.
// Thread-safety: free functions and a move-only handle; no shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "platform/file.h"

namespace ebb::internal {

// The name of the graph input the rewrite adds (int64 [batch_size]).
inline constexpr const char* kLogitsIndexInput = "ebb_logits_index";

// A rewritten model in an anonymous memory file. Close (destroy) it once ORT has loaded it.
class RewrittenModel {
 public:
  RewrittenModel(RewrittenModel&& other) noexcept = default;
  RewrittenModel& operator=(RewrittenModel&& other) noexcept = default;
  RewrittenModel(const RewrittenModel&) = delete;
  ~RewrittenModel() = default;

  // Takes the memory file the rewrite wrote (RewriteForLastLogits, cpu_ops_rewrite.h's
  // RewriteForCpuOps) and the path ORT opens it by.
  RewrittenModel(platform::File file, std::filesystem::path path)
      : file_(std::move(file)), path_(std::move(path)) {}

  // A path ORT can open (platform::File::OpenablePath: /proc/self/fd/N on Linux) while this
  // object lives.
  const std::filesystem::path& path() const { return path_; }

 private:
  platform::File file_;  // the memory file; closed by the destructor
  std::filesystem::path path_;
};

// Writes `pieces` (byte ranges, in order) into a new memory file named `name` (for debugging
// output): the one way ebb's load-time rewrites hand ORT a graph. Returns nullopt with `why_not`
// when the file cannot be created or written (then `*system_failure`, when given, is true).
std::optional<RewrittenModel> WriteRewrittenModel(
    const char* name, const std::vector<std::pair<const uint8_t*, uint64_t>>& pieces,
    std::string* why_not, bool* system_failure = nullptr);

// Rewrites `onnx_file` so that `logits_output` is computed at one position per row (above).
// `hidden_size` is the LM head's input width (genai_config model.decoder.hidden_size).
// Returns nullopt and sets `why_not` when the graph does not have the expected shape (logits
// not produced by a MatMul/MatMulNBits, hidden_size unknown, the input already present, a
// malformed file) or the memory file cannot be created: the caller then loads the file as it is.
// `system_failure` (may be null) is set to whether the failure was the system's (the model file
// could not be opened or mapped, the memory file not written: another try may succeed) rather
// than the graph's (every try fails alike). Never throws for a model's content.
std::optional<RewrittenModel> RewriteForLastLogits(const std::filesystem::path& onnx_file,
                                                   const std::string& logits_output,
                                                   int hidden_size, std::string* why_not,
                                                   bool* system_failure = nullptr);

}  // namespace ebb::internal
