// Encoder model folders: a sentence-transformers / Hugging Face ONNX export (model.onnx or
// onnx/model*.onnx, tokenizer.json, config.json, optional modules.json, 1_Pooling/config.json,
// sentence_bert_config.json), or a genai_config.json whose model.type is an encoder.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/files.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "model/genai_config.h"
#include "model/gguf_check.h"

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The ONNX file of an export, in the order sentence-transformers and optimum write them.
constexpr const char* kOnnxCandidates[] = {"model.onnx", "onnx/model.onnx",
                                           "onnx/model_quantized.onnx"};

fs::path FindOnnx(const fs::path& dir) {
  for (const char* c : kOnnxCandidates) {
    if (FileExists(dir / c, "the model's ONNX file")) return dir / c;
  }
  return {};
}

json ReadJson(const fs::path& path, std::string_view what) {
  return ParseJsonDocument(ReadRegularFile(path, kMaxConfigFileBytes, what), path.string());
}

// A positive integer field, or 0 when absent or not one.
int64_t IntField(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  return std::max<int64_t>(0, it->get<int64_t>());
}

}  // namespace

bool IsHfEncoderFolder(const fs::path& dir) {
  return !FindOnnx(dir).empty() && FileExists(dir / "tokenizer.json", "tokenizer.json") &&
         FileExists(dir / "config.json", "config.json");
}

bool LooksLikeModelFolder(const fs::path& dir) {
  try {
    return FileExists(dir / "genai_config.json", "genai_config.json") ||
           FileExists(dir / "config.json", "config.json") || !FindOnnx(dir).empty();
  } catch (const Error&) {
    return false;  // unreadable: Load says why when someone asks for it
  }
}

void ReadEncoderFolderInfo(GenaiConfig& cfg) {
  EncoderFolderInfo& e = cfg.encoder;
  const fs::path pooling = cfg.dir / "1_Pooling" / "config.json";
  if (FileExists(pooling, "1_Pooling/config.json")) {
    const json p = ReadJson(pooling, "1_Pooling/config.json");
    auto on = [&](const char* key) {
      auto it = p.is_object() ? p.find(key) : p.end();
      return it != p.end() && it->is_boolean() && it->get<bool>();
    };
    e.pooling_config = pooling;
    // sentence-transformers' modes and ebb's names for them. Several set at once mean a
    // concatenation of the poolings, which ebb does not do.
    constexpr std::pair<const char*, const char*> kModes[] = {
        {"pooling_mode_cls_token", "cls"},
        {"pooling_mode_mean_tokens", "mean"},
        {"pooling_mode_lasttoken", "last"},
        {"pooling_mode_max_tokens", "max"},
        {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"},
        {"pooling_mode_weightedmean_tokens", "weightedmean"}};
    std::vector<std::string> set;
    for (const auto& [key, name] : kModes) {
      if (on(key)) {
        set.push_back(key);
        e.pooling = name;
      }
    }
    if (set.empty()) {
      e.pooling_unsupported = "no pooling_mode_* set";
    } else if (set.size() > 1) {
      e.pooling.clear();
      std::string names;
      for (const auto& k : set) names += (names.empty() ? "" : ", ") + k;
      e.pooling_unsupported =
          "several pooling modes (" + names + "; sentence-transformers concatenates them)";
    }
  }
  // modules.json: a Normalize module means normalised vectors; a modules.json without one means
  // raw vectors (e.g. models meant for dot-product scoring). No modules.json: normalise.
  const fs::path modules = cfg.dir / "modules.json";
  if (FileExists(modules, "modules.json")) {
    const json m = ReadJson(modules, "modules.json");
    bool has_normalize = false;
    if (m.is_array()) {
      for (const auto& mod : m) {
        auto t = mod.is_object() ? mod.find("type") : mod.end();
        has_normalize =
            has_normalize || (t != mod.end() && t->is_string() &&
                              t->get<std::string>() == "sentence_transformers.models.Normalize");
      }
    }
    e.normalize_default = has_normalize;
    e.normalize_source = has_normalize ? "modules.json lists a Normalize module"
                                       : "modules.json lists no Normalize module";
  }
  // The maximum length: sentence-transformers' max_seq_length, else the tokenizer's
  // model_max_length (when it is a real number, not HF's 1e30 "unset"), else the positions the
  // model has. Never above the positions.
  int64_t positions = cfg.context_length;
  std::string positions_source = cfg.config_path.filename().string() + " context_length";
  const fs::path config = cfg.dir / "config.json";
  if (FileExists(config, "config.json")) {
    const int64_t p = IntField(ReadJson(config, "config.json"), "max_position_embeddings");
    if (p > 0) {
      positions = p;
      positions_source = "config.json max_position_embeddings";
    }
  }
  int64_t max_len = positions;
  std::string source = positions_source;
  const fs::path st = cfg.dir / "sentence_bert_config.json";
  const fs::path tc = cfg.dir / "tokenizer_config.json";
  if (FileExists(st, "sentence_bert_config.json") &&
      IntField(ReadJson(st, "sentence_bert_config.json"), "max_seq_length") > 0) {
    max_len = IntField(ReadJson(st, "sentence_bert_config.json"), "max_seq_length");
    source = "sentence_bert_config.json max_seq_length";
  } else if (FileExists(tc, "tokenizer_config.json")) {
    const int64_t m = IntField(ReadJson(tc, "tokenizer_config.json"), "model_max_length");
    if (m > 0 && m < 1000000) {
      max_len = m;
      source = "tokenizer_config.json model_max_length";
    }
  }
  if (positions > 0 && max_len > positions) {
    max_len = positions;
    source = positions_source;
  }
  if (max_len <= 0 || max_len > INT32_MAX) {
    throw Error(ErrorCode::InvalidArgument,
                cfg.dir.string() +
                    ": cannot tell the encoder's maximum input length (no max_seq_length, "
                    "model_max_length or max_position_embeddings)");
  }
  e.max_length = static_cast<int32_t>(max_len);
  e.max_length_source = source;
}

GenaiConfig LoadHfEncoderConfig(const fs::path& dir) {
  GenaiConfig cfg;
  cfg.dir = dir;
  cfg.config_path = dir / "config.json";
  cfg.is_encoder = true;
  cfg.model_path = FindOnnx(dir);
  const json c = ReadJson(cfg.config_path, "config.json");
  if (!c.is_object()) {
    throw Error(ErrorCode::InvalidArgument, cfg.config_path.string() + ": expected a JSON object");
  }
  if (auto it = c.find("model_type"); it != c.end() && it->is_string()) {
    cfg.model_type = it->get<std::string>();
  } else {
    cfg.model_type = "encoder";
  }
  cfg.vocab_size = static_cast<int32_t>(std::min<int64_t>(IntField(c, "vocab_size"), INT32_MAX));
  cfg.hidden_size = static_cast<int32_t>(std::min<int64_t>(IntField(c, "hidden_size"), INT32_MAX));
  cfg.num_hidden_layers =
      static_cast<int32_t>(std::min<int64_t>(IntField(c, "num_hidden_layers"), INT32_MAX));
  cfg.num_attention_heads =
      static_cast<int32_t>(std::min<int64_t>(IntField(c, "num_attention_heads"), INT32_MAX));
  cfg.context_length =
      static_cast<int32_t>(std::min<int64_t>(IntField(c, "max_position_embeddings"), INT32_MAX));
  cfg.pad_token_id = 0;
  if (auto it = c.find("pad_token_id"); it != c.end() && it->is_number_integer()) {
    const int64_t id = it->get<int64_t>();
    if (id >= 0 && id < INT32_MAX) cfg.pad_token_id = static_cast<int32_t>(id);
  }
  cfg.encoder.layout = "sentence-transformers / Hugging Face ONNX export";
  ReadEncoderFolderInfo(cfg);
  if (cfg.context_length <= 0) cfg.context_length = cfg.encoder.max_length;
  return cfg;
}

GenaiConfig LoadModelFolderConfig(const fs::path& dir) {
  RefuseGgufModel(dir);  // a GGUF file, or a folder of one: say what ebb runs instead
  std::error_code ec;
  const bool is_dir = fs::is_directory(dir, ec);
  if (!is_dir || FileExists(dir / "genai_config.json", "genai_config.json")) {
    GenaiConfig cfg = LoadGenaiConfig(dir);
    if (cfg.is_encoder) {
      cfg.encoder.layout = "genai_config.json";
      ReadEncoderFolderInfo(cfg);
    }
    return cfg;
  }
  if (IsHfEncoderFolder(dir)) return LoadHfEncoderConfig(dir);
  std::string missing;
  auto add = [&](const std::string& what) { missing += (missing.empty() ? "" : ", ") + what; };
  if (FindOnnx(dir).empty()) add("model.onnx (or onnx/model.onnx, onnx/model_quantized.onnx)");
  if (!FileExists(dir / "tokenizer.json", "tokenizer.json")) add("tokenizer.json");
  if (!FileExists(dir / "config.json", "config.json")) add("config.json");
  throw Error(ErrorCode::NotFound,
              (dir / "genai_config.json").string() +
                  ": not found; a model folder needs genai_config.json (a decoder or an encoder, "
                  "as written by the ONNX Runtime model builder or tools/synth_model.py), or, "
                  "for an embedding model, a sentence-transformers / Hugging Face ONNX export, "
                  "which here lacks: " +
                  missing);
}

}  // namespace ebb::internal
