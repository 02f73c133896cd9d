// oga_internal.h — the objects behind genai's opaque handles, and the helpers every oga_*.cpp
// uses. Internal to libonnxruntime-genai.so; it sees only ebb's public API (include/ebb/), so the
// drop-in is a surface over ebb, not a second engine.
//
// Ownership: each OgaX* handed to the caller is a `new OgaX`, freed by OgaDestroyX. Objects that
// need the model hold a std::shared_ptr<ebb::Model>, so genai's rule "params, generators and
// tokenizers keep their model alive" holds whatever order the caller destroys them in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/tokenizer.h"
#include "ort_genai_c.h"

// A failed call's message (genai: freed with OgaDestroyResult).
struct OgaResult {
  std::string message;
};

struct OgaSequences {
  std::vector<std::vector<int32_t>> rows;
};

struct OgaStringArray {
  std::vector<std::string> items;
};

namespace oga {

// A tensor's storage. Shared: OgaNamedTensors and the generator's inputs keep a reference, so
// the caller may destroy its OgaTensor handle first (genai's tensors are reference counted).
struct TensorData {
  OgaElementType type = OgaElementType_undefined;
  std::vector<int64_t> shape;
  void* data = nullptr;        // the caller's buffer, or owned.data()
  std::vector<uint8_t> owned;  // empty when the caller owns the buffer
  size_t ElementCount() const;
  size_t Bytes() const;
};

// Bytes per element of `t`; 0 for types ebb does not store (string, undefined).
size_t ElementSize(OgaElementType t);

}  // namespace oga

struct OgaTensor {
  std::shared_ptr<oga::TensorData> t;
};

struct OgaNamedTensors {
  std::map<std::string, std::shared_ptr<oga::TensorData>> items;
};

// genai_config.json as read, with the caller's changes (providers, options, overlays). A model is
// created from it (OgaCreateModelFromConfig); changing it afterwards does not change that model.
struct OgaConfig {
  std::filesystem::path dir;  // the model folder
  nlohmann::json json;        // genai_config.json with overlays merged in (RFC 7386)
  // The providers the caller set (ClearProviders / AppendProvider), in order; nullopt: the
  // config's own list.
  std::optional<std::vector<std::string>> providers;
  // Models given from memory (AddModelData): file name -> bytes.
  std::map<std::string, std::vector<uint8_t>> model_data;
};

// The search options genai documents, with the values in force: genai's defaults, then the
// config's "search" section, then the caller's.
struct SearchOptions {
  std::map<std::string, double> numbers;
  std::map<std::string, bool> bools;
  // SetGuidance: the ebb request key ("json_schema", "regex", "grammar") and its text.
  std::string guidance_key;
  std::string guidance;
};

struct OgaModel {
  std::shared_ptr<ebb::Model> model;
  SearchOptions search;  // the config's defaults (after overlays)
  std::string type;      // genai_config model.type
  std::string device;    // "cpu", "webgpu", ...
};

struct OgaGeneratorParams {
  std::shared_ptr<ebb::Model> model;
  SearchOptions search;
};

struct OgaTokenizer {
  std::shared_ptr<ebb::Model> model;  // owns the tokenizer
  const ebb::Tokenizer* tokenizer = nullptr;
  bool add_special_tokens = false;  // UpdateTokenizerOptions "add_special_tokens" (genai: off)
  bool skip_special_tokens = true;  // UpdateTokenizerOptions "skip_special_tokens"
  std::vector<int32_t> eos_ids;
};

struct OgaTokenizerStream {
  std::shared_ptr<ebb::Model> model;
  std::unique_ptr<ebb::StreamDecoder> decoder;
  std::string last;  // the string handed out by the last Decode call
};

namespace oga {

// A new result with `message` (never null: a static "out of memory" one if allocation fails).
OgaResult* Fail(std::string message);
OgaResult* OutOfMemoryResult();

// Runs `f` and turns any exception into a result whose message starts with `fn`, genai's way of
// reporting (the C++ wrapper throws it as std::runtime_error). nullptr on success.
template <class F>
OgaResult* Guard(const char* fn, F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const std::exception& e) {
    return Fail(std::string(fn) + ": " + e.what());
  } catch (...) {
    return Fail(std::string(fn) + ": unknown error");
  }
}

// Throws std::invalid_argument naming `what` when `p` is null.
void NotNull(const void* p, const char* what);

// A copy of `s` the caller frees with OgaDestroyString.
const char* CopyString(std::string_view s);

// The result of a function ebb does not offer: names the function and what ebb has instead.
OgaResult* Unsupported(const char* fn, std::string_view instead);

// genai's defaults for every search option it documents, then `config_search` over them.
SearchOptions DefaultSearch(const nlohmann::json& config_search);

// The ebb::GeneratorParams for `search` (throws ebb::Error naming a bad value).
ebb::GeneratorParams ToEbbParams(const SearchOptions& search, const ebb::Model& model);

// Logs `message` through genai's log settings (OgaSetLogBool / OgaSetLogCallback).
void Log(std::string_view message);

}  // namespace oga
