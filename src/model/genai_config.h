// Loads an onnxruntime-genai model folder's genai_config.json into a typed, validated struct.
//
// Errors: every problem throws ebb::Error naming the file and the JSON field, e.g.
//   "/m/genai_config.json: /model/decoder/num_key_value_heads: expected an integer, got "x"".
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ort/provider_options.h"

namespace ebb::internal {

// Names of the graph's inputs and outputs, as the config spells them. Empty means "not used".
// KV names contain "%d" for the layer index.
struct DecoderIoNames {
  std::string input_ids = "input_ids";
  std::string attention_mask = "attention_mask";
  std::string position_ids = "position_ids";
  std::string past_key = "past_key_values.%d.key";
  std::string past_value = "past_key_values.%d.value";
  std::string past_combined;  // gpt2 style "past_%d": [2, batch, heads, seq, head_size]
  std::string logits = "logits";
  std::string present_key = "present.%d.key";
  std::string present_value = "present.%d.value";
  std::string present_combined;  // "present_%d"
};

// An encoder's graph names (genai_config.json model.encoder.inputs/outputs, or the standard names
// of a sentence-transformers / HF ONNX export). token_type_ids is fed only when the graph has it.
struct EncoderIoNames {
  std::string input_ids = "input_ids";
  std::string attention_mask = "attention_mask";
  std::string token_type_ids = "token_type_ids";
  std::string last_hidden_state = "last_hidden_state";
};

// What an encoder folder says about pooling and length (1_Pooling/config.json,
// sentence_bert_config.json, tokenizer_config.json, config.json).
struct EncoderFolderInfo {
  std::string layout;  // "genai_config.json" or "sentence-transformers / Hugging Face ONNX export"
  // 1_Pooling/config.json's mode (a PoolingName: "mean", "cls", "last", "max", "mean_sqrt_len",
  // "weightedmean"); empty: no such file. A config ebb cannot follow (no mode set, or several,
  // which sentence-transformers concatenates) is described in pooling_unsupported.
  std::string pooling;
  std::string pooling_unsupported;
  std::filesystem::path pooling_config;
  // The default of embed.normalize: modules.json, when the folder has one, lists a
  // sentence_transformers.models.Normalize module (true) or not (false); no modules.json: true.
  bool normalize_default = true;
  std::string normalize_source;   // e.g. "modules.json lists no Normalize module"; "" : no file
  int32_t max_length = 0;         // tokens, special tokens included
  std::string max_length_source;  // the file and field it came from
};

// `search` defaults from the config: the defaults of every generator. Unset: the file does not
// say, and ebb's own default applies. Users' generator params override them.
struct SearchDefaults {
  std::optional<bool> do_sample;
  int32_t max_length = 0;  // 0: use context_length
  std::optional<int32_t> top_k;
  std::optional<float> top_p;
  std::optional<float> temperature;
  std::optional<float> repetition_penalty;
  bool past_present_share_buffer = false;
  int32_t num_beams = 1;
};

struct GenaiConfig {
  std::filesystem::path dir;          // the model folder
  std::filesystem::path config_path;  // dir / "genai_config.json"
  std::string model_type;             // "gpt2", "llama", "phi3", "bert", ...
  bool is_encoder = false;            // bert-style embedding model (no KV cache)
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  int32_t bos_token_id = -1;
  int32_t pad_token_id = -1;
  std::vector<int32_t> eos_token_ids;

  std::filesystem::path model_path;  // dir / decoder.filename (or encoder.filename)
  int32_t head_size = 0;
  int32_t hidden_size = 0;
  int32_t num_attention_heads = 0;
  int32_t num_key_value_heads = 0;
  int32_t num_hidden_layers = 0;
  DecoderIoNames io;
  EncoderIoNames encoder_io;  // encoders only
  EncoderFolderInfo encoder;  // encoders only

  // Session options from the config, in file order (string values; typed later).
  std::vector<std::pair<std::string, std::string>> session_options;
  std::vector<ProviderOptions> provider_options;
  std::vector<std::pair<std::string, std::string>> run_options;
  SearchDefaults search;
};

// Reads and validates `dir/genai_config.json`. `dir` may also be the path of the JSON file.
GenaiConfig LoadGenaiConfig(const std::filesystem::path& dir);

// Parses config text; `config_path` is used for messages and to resolve relative file names.
GenaiConfig ParseGenaiConfig(const std::string& text, const std::filesystem::path& config_path);

// Whether `dir` holds a sentence-transformers / HF ONNX export of an encoder: an ONNX file
// (model.onnx, onnx/model.onnx or onnx/model_quantized.onnx), tokenizer.json and config.json.
bool IsHfEncoderFolder(const std::filesystem::path& dir);
// Reads such a folder into a GenaiConfig (is_encoder, model_path, vocab and hidden sizes, the
// maximum length, pooling). Throws ebb::Error naming the file and field.
GenaiConfig LoadHfEncoderConfig(const std::filesystem::path& dir);
// Fills cfg.encoder's pooling and max_length from the folder's optional files (both layouts).
void ReadEncoderFolderInfo(GenaiConfig& cfg);
// Whether `dir` looks like a model folder of either layout (genai_config.json, config.json or one
// of the ONNX files IsHfEncoderFolder accepts), for listings (a models dir): the one detector, so
// a folder that loads is listed. Unreadable entries count as absent (never throws).
bool LooksLikeModelFolder(const std::filesystem::path& dir);
// Loads `dir` as either layout: genai_config.json when present, else a sentence-transformers /
// HF encoder export; NotFound naming what each layout misses when neither fits.
GenaiConfig LoadModelFolderConfig(const std::filesystem::path& dir);

// Replaces "%d" in a KV name pattern with the layer index.
std::string LayerName(const std::string& pattern, int layer);

}  // namespace ebb::internal
