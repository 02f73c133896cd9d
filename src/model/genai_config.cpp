#include "model/genai_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "ebb/error.h"

namespace ebb::internal {
namespace {

using nlohmann::json;

// A JSON value for a message: invalid UTF-8 replaced (dump() would throw), cut to 200 bytes.
std::string Show(const json& v) {
  return EscapeForMessage(v.dump(-1, ' ', false, json::error_handler_t::replace), 200);
}

// Model types that are decoders with a KV cache, as the ORT model builder emits them.
constexpr const char* kDecoderTypes[] = {
    "gpt2",  "llama", "mistral", "phi",    "phi3",    "phi3v", "phi3small", "phimoe",   "qwen2",
    "qwen3", "gemma", "gemma2",  "gemma3", "granite", "olmo",  "chatglm",   "nemotron", "smollm3"};
constexpr const char* kEncoderTypes[] = {"bert", "roberta", "xlm-roberta", "nomic_bert"};

// Walks a JSON document and reports errors with the file and a JSON-pointer path.
class Reader {
 public:
  explicit Reader(std::filesystem::path file) : file_(std::move(file)) {}

  [[noreturn]] void Fail(const std::string& path, const std::string& what) const {
    throw Error(ErrorCode::InvalidArgument, EscapeForMessage(file_.string(), 1024) + ": " +
                                                EscapeForMessage(path) + ": " + what);
  }

  const json* Find(const json& obj, const std::string& key) const {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }

  const json& Object(const json& obj, const std::string& key, const std::string& path) const {
    const json* v = Find(obj, key);
    if (v == nullptr) Fail(path + "/" + key, "missing; this field is required");
    if (!v->is_object()) Fail(path + "/" + key, "expected an object, got " + Show(*v));
    return *v;
  }

  int32_t Int(const json& obj, const std::string& key, const std::string& path,
              std::optional<int32_t> fallback) const {
    const json* v = Find(obj, key);
    if (v == nullptr) {
      if (!fallback) Fail(path + "/" + key, "missing; this field is required");
      return *fallback;
    }
    if (!v->is_number_integer()) Fail(path + "/" + key, "expected an integer, got " + Show(*v));
    const int64_t x = v->get<int64_t>();
    if (x < INT32_MIN || x > INT32_MAX) {
      Fail(path + "/" + key, "out of range: " + Show(*v) + " (need -2147483648 to 2147483647)");
    }
    return static_cast<int32_t>(x);
  }

  float Float(const json& obj, const std::string& key, const std::string& path,
              float fallback) const {
    const json* v = Find(obj, key);
    if (v == nullptr) return fallback;
    if (!v->is_number()) Fail(path + "/" + key, "expected a number, got " + Show(*v));
    const double x = v->get<double>();
    if (!std::isfinite(x) || std::fabs(x) > 3.4e38) {
      Fail(path + "/" + key, "expected a finite number, got " + Show(*v));
    }
    return static_cast<float>(x);
  }

  bool Bool(const json& obj, const std::string& key, const std::string& path, bool fallback) const {
    const json* v = Find(obj, key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) Fail(path + "/" + key, "expected true or false, got " + Show(*v));
    return v->get<bool>();
  }

  std::string String(const json& obj, const std::string& key, const std::string& path,
                     std::optional<std::string> fallback) const {
    const json* v = Find(obj, key);
    if (v == nullptr) {
      if (!fallback) Fail(path + "/" + key, "missing; this field is required");
      return *fallback;
    }
    if (!v->is_string()) Fail(path + "/" + key, "expected a string, got " + Show(*v));
    return v->get<std::string>();
  }

  // ORT option values appear as strings, numbers or booleans in real configs.
  std::string OptionValue(const json& v, const std::string& path) const {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
    if (v.is_number()) return v.dump();
    Fail(path, "expected a string, number or boolean, got " + Show(v));
  }

  // The folder of the config file: relative paths in it are the folder's.
  std::filesystem::path dir() const { return std::filesystem::absolute(file_).parent_path(); }

 private:
  std::filesystem::path file_;
};

bool Contains(const auto& list, const std::string& s) {
  for (const char* t : list) {
    if (s == t) return true;
  }
  return false;
}

void ReadSessionOptions(const Reader& r, const json& so, const std::string& path,
                        GenaiConfig& cfg) {
  if (!so.is_object()) r.Fail(path, "expected an object, got " + Show(so));
  for (const auto& [key, value] : so.items()) {
    if (key == "provider_options") {
      // A list of {"<ep>": {k: v, ...}} objects, in priority order.
      if (!value.is_array()) r.Fail(path + "/provider_options", "expected a list");
      for (size_t i = 0; i < value.size(); ++i) {
        const std::string ip = path + "/provider_options/" + std::to_string(i);
        if (!value[i].is_object()) r.Fail(ip, "expected an object like {\"cuda\": {...}}");
        for (const auto& [ep, opts] : value[i].items()) {
          ProviderOptions po;
          po.name = ep;
          if (!opts.is_object()) r.Fail(ip + "/" + ep, "expected an object of options");
          for (const auto& [k, v] : opts.items()) {
            po.options.emplace_back(k, r.OptionValue(v, ip + "/" + ep + "/" + k));
          }
          cfg.provider_options.push_back(std::move(po));
        }
      }
    } else if (key == "custom_ops_library") {
      // onnxruntime-genai's key for an ORT custom-op library. A relative path is the model
      // folder's, so that a folder that ships its library can be moved as a whole.
      if (!value.is_string() || value.get<std::string>().empty()) {
        r.Fail(path + "/" + key, "expected the path of a shared library, got " + Show(value));
      }
      std::filesystem::path lib = value.get<std::string>();
      if (lib == "none") continue;  // as on the command line: no library
      if (lib.is_relative()) lib = r.dir() / lib;
      cfg.session_options.emplace_back(key, lib.lexically_normal().string());
    } else if (key == "log_id" || key == "log_severity_level") {
      // Session identification / logging hints of onnxruntime-genai; ebb has its own logging.
      continue;
    } else {
      cfg.session_options.emplace_back(key, r.OptionValue(value, path + "/" + key));
    }
  }
}

// nlohmann reports "number overflow parsing '1e400'" with no location: find the literal in the
// text and the key before it, as "field \"context_length\"" (or "a number" when not found).
std::string NumberOverflowField(const std::string& text, const std::string& message) {
  const auto q1 = message.find('\'');
  const auto q2 = q1 == std::string::npos ? q1 : message.find('\'', q1 + 1);
  if (q2 == std::string::npos || q2 == q1 + 1) return "a number";
  const std::string literal = message.substr(q1 + 1, q2 - q1 - 1);
  const auto at = text.find(literal);
  if (at == std::string::npos) return "a number";
  const auto colon = text.rfind(':', at);
  const auto close = colon == std::string::npos ? colon : text.rfind('"', colon);
  const auto open =
      close == std::string::npos || close == 0 ? std::string::npos : text.rfind('"', close - 1);
  if (open == std::string::npos) return "number " + EscapeForMessage(literal, 40);
  return "field \"" + EscapeForMessage(text.substr(open + 1, close - open - 1), 80) + "\" (" +
         EscapeForMessage(literal, 40) + ")";
}

// A token id field: -1 (absent) or an id below vocab_size.
void CheckTokenId(const Reader& r, const std::string& path, int32_t id, int32_t vocab_size) {
  if (id < -1 || id >= vocab_size) {
    r.Fail(path, "token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                     std::to_string(vocab_size - 1) +
                     ", model.vocab_size=" + std::to_string(vocab_size) + ")");
  }
}

}  // namespace

std::string LayerName(const std::string& pattern, int layer) {
  std::string out = pattern;
  const auto pos = out.find("%d");
  if (pos != std::string::npos) out.replace(pos, 2, std::to_string(layer));
  return out;
}

GenaiConfig ParseGenaiConfig(const std::string& text, const std::filesystem::path& config_path) {
  Reader r(config_path);
  json doc;
  CheckJsonDepth(text, config_path.string());
  try {
    doc = json::parse(text);
  } catch (const json::out_of_range& e) {
    // A number too large for a double (1e400): name the field it belongs to.
    throw Error(ErrorCode::InvalidArgument, EscapeForMessage(config_path.string(), 1024) + ": " +
                                                NumberOverflowField(text, e.what()) +
                                                ": number out of range (larger than 1.8e308)");
  } catch (const json::exception& e) {
    throw Error(ErrorCode::InvalidArgument, EscapeForMessage(config_path.string(), 1024) +
                                                ": not valid JSON (" + EscapeForMessage(e.what()) +
                                                "); fix or regenerate the file");
  }
  GenaiConfig cfg;
  cfg.config_path = config_path;
  cfg.dir = config_path.parent_path();
  if (!doc.is_object()) r.Fail("/", "expected a JSON object");
  const json& model = r.Object(doc, "model", "");
  cfg.model_type = r.String(model, "type", "/model", std::nullopt);
  if (Contains(kEncoderTypes, cfg.model_type)) {
    cfg.is_encoder = true;
  } else if (!Contains(kDecoderTypes, cfg.model_type)) {
    std::string known;
    for (const char* t : kDecoderTypes) known += std::string(known.empty() ? "" : ", ") + t;
    for (const char* t : kEncoderTypes) known += std::string(", ") + t;
    r.Fail("/model/type",
           "unknown model type \"" + EscapeForMessage(cfg.model_type) + "\"; supported: " + known);
  }
  // Sane bounds before anything is sized by them (a vocab_size of 1e9 once drove a load to
  // 7.8 GB before it failed): well above every published model (vocabularies reach about
  // 262k ids, contexts 10M tokens), far below what would exhaust memory by itself. The graph's
  // own logits width is checked against vocab_size after the session is created.
  constexpr int32_t kMaxVocab = 1 << 22, kMaxContext = 1 << 24;
  cfg.vocab_size = r.Int(model, "vocab_size", "/model", std::nullopt);
  if (cfg.vocab_size <= 0) r.Fail("/model/vocab_size", "must be positive");
  if (cfg.vocab_size > kMaxVocab) {
    r.Fail("/model/vocab_size", std::to_string(cfg.vocab_size) + " is above ebb's bound of " +
                                    std::to_string(kMaxVocab) +
                                    " ids (published models have at most ~262k); the config "
                                    "is corrupt or for another model");
  }
  cfg.context_length = r.Int(model, "context_length", "/model", std::nullopt);
  if (cfg.context_length <= 0) r.Fail("/model/context_length", "must be positive");
  if (cfg.context_length > kMaxContext) {
    r.Fail("/model/context_length", std::to_string(cfg.context_length) +
                                        " is above ebb's bound of " + std::to_string(kMaxContext) +
                                        " tokens; the config is corrupt or for another model");
  }
  cfg.bos_token_id = r.Int(model, "bos_token_id", "/model", -1);
  cfg.pad_token_id = r.Int(model, "pad_token_id", "/model", -1);
  if (const json* eos = r.Find(model, "eos_token_id")) {
    if (eos->is_array()) {
      for (size_t i = 0; i < eos->size(); ++i) {
        if (!(*eos)[i].is_number_integer()) {
          r.Fail("/model/eos_token_id/" + std::to_string(i), "expected an integer");
        }
        const int64_t id = (*eos)[i].get<int64_t>();
        if (id < 0 || id >= cfg.vocab_size) {
          r.Fail("/model/eos_token_id/" + std::to_string(i),
                 "token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                     std::to_string(cfg.vocab_size - 1) + ")");
        }
        cfg.eos_token_ids.push_back(static_cast<int32_t>(id));
      }
    } else {
      cfg.eos_token_ids.push_back(r.Int(model, "eos_token_id", "/model", -1));
      CheckTokenId(r, "/model/eos_token_id", cfg.eos_token_ids.back(), cfg.vocab_size);
    }
  }
  CheckTokenId(r, "/model/bos_token_id", cfg.bos_token_id, cfg.vocab_size);
  CheckTokenId(r, "/model/pad_token_id", cfg.pad_token_id, cfg.vocab_size);

  const std::string section = cfg.is_encoder && r.Find(model, "encoder") ? "encoder" : "decoder";
  const std::string sp = "/model/" + section;
  const json& dec = r.Object(model, section, "/model");
  const std::string filename = r.String(dec, "filename", sp, std::nullopt);
  if (filename.empty()) r.Fail(sp + "/filename", "must name the ONNX file");
  cfg.model_path = cfg.dir / filename;
  cfg.hidden_size = r.Int(dec, "hidden_size", sp, 0);
  cfg.num_hidden_layers = r.Int(dec, "num_hidden_layers", sp, cfg.is_encoder ? 0 : -1);
  if (!cfg.is_encoder) {
    if (cfg.num_hidden_layers <= 0) r.Fail(sp + "/num_hidden_layers", "must be positive");
    cfg.head_size = r.Int(dec, "head_size", sp, std::nullopt);
    if (cfg.head_size <= 0) r.Fail(sp + "/head_size", "must be positive");
    cfg.num_key_value_heads = r.Int(dec, "num_key_value_heads", sp, std::nullopt);
    if (cfg.num_key_value_heads <= 0) r.Fail(sp + "/num_key_value_heads", "must be positive");
    cfg.num_attention_heads = r.Int(dec, "num_attention_heads", sp, cfg.num_key_value_heads);
    if (cfg.num_attention_heads <= 0 || cfg.num_attention_heads % cfg.num_key_value_heads != 0) {
      r.Fail(sp + "/num_attention_heads",
             "inconsistent head counts: num_attention_heads=" +
                 std::to_string(cfg.num_attention_heads) +
                 " must be a positive multiple of num_key_value_heads=" +
                 std::to_string(cfg.num_key_value_heads));
    }
    // In 64 bits: both factors come from the file and their int product can overflow.
    const int64_t heads_x_size = static_cast<int64_t>(cfg.num_attention_heads) * cfg.head_size;
    if (cfg.hidden_size > 0 && cfg.hidden_size != heads_x_size && cfg.model_type != "gemma" &&
        cfg.model_type != "gemma2" && cfg.model_type != "gemma3" && cfg.model_type != "qwen3") {
      // Most families have hidden = heads * head_size; Gemma and Qwen3 decouple them.
      r.Fail(sp + "/hidden_size",
             "inconsistent: hidden_size=" + std::to_string(cfg.hidden_size) +
                 " but num_attention_heads*head_size=" + std::to_string(heads_x_size));
    }
  }

  if (const json* in = r.Find(dec, "inputs")) {
    const std::string ip = sp + "/inputs";
    cfg.io.input_ids = r.String(*in, "input_ids", ip, cfg.io.input_ids);
    cfg.io.attention_mask = r.String(*in, "attention_mask", ip, cfg.io.attention_mask);
    cfg.io.position_ids = r.String(*in, "position_ids", ip, cfg.io.position_ids);
    cfg.io.past_combined = r.String(*in, "past_names", ip, "");
    cfg.io.past_key = r.String(*in, "past_key_names", ip, cfg.io.past_key);
    cfg.io.past_value = r.String(*in, "past_value_names", ip, cfg.io.past_value);
  }
  if (cfg.is_encoder) {
    if (const json* in = r.Find(dec, "inputs")) {
      const std::string ip = sp + "/inputs";
      cfg.encoder_io.input_ids = r.String(*in, "input_ids", ip, cfg.encoder_io.input_ids);
      cfg.encoder_io.attention_mask =
          r.String(*in, "attention_mask", ip, cfg.encoder_io.attention_mask);
      cfg.encoder_io.token_type_ids =
          r.String(*in, "token_type_ids", ip, cfg.encoder_io.token_type_ids);
    }
    if (const json* out = r.Find(dec, "outputs")) {
      cfg.encoder_io.last_hidden_state =
          r.String(*out, "last_hidden_state", sp + "/outputs", cfg.encoder_io.last_hidden_state);
    }
  }
  if (const json* out = r.Find(dec, "outputs")) {
    const std::string op = sp + "/outputs";
    cfg.io.logits = r.String(*out, "logits", op, cfg.io.logits);
    cfg.io.present_combined = r.String(*out, "present_names", op, "");
    cfg.io.present_key = r.String(*out, "present_key_names", op, cfg.io.present_key);
    cfg.io.present_value = r.String(*out, "present_value_names", op, cfg.io.present_value);
  }
  if (cfg.io.past_combined.empty() != cfg.io.present_combined.empty()) {
    r.Fail(sp + "/inputs/past_names",
           "combined KV needs both inputs.past_names and outputs.present_names");
  }
  if (const json* so = r.Find(dec, "session_options")) {
    ReadSessionOptions(r, *so, sp + "/session_options", cfg);
  }
  if (const json* ro = r.Find(dec, "run_options")) {
    if (!ro->is_object()) r.Fail(sp + "/run_options", "expected an object");
    for (const auto& [k, v] : ro->items()) {
      cfg.run_options.emplace_back(k, r.OptionValue(v, sp + "/run_options/" + k));
    }
  }

  if (const json* s = r.Find(doc, "search")) {
    SearchDefaults& d = cfg.search;
    // Sampling fields are kept only when the file has them: they are the defaults of every
    // generator (GeneratorParams), between ebb's own defaults and the caller's values.
    if (s->contains("do_sample")) d.do_sample = r.Bool(*s, "do_sample", "/search", false);
    d.max_length = r.Int(*s, "max_length", "/search", d.max_length);
    if (s->contains("top_k")) d.top_k = r.Int(*s, "top_k", "/search", 0);
    if (s->contains("top_p")) d.top_p = r.Float(*s, "top_p", "/search", 1.0f);
    if (s->contains("temperature")) d.temperature = r.Float(*s, "temperature", "/search", 1.0f);
    if (s->contains("repetition_penalty")) {
      d.repetition_penalty = r.Float(*s, "repetition_penalty", "/search", 1.0f);
    }
    d.past_present_share_buffer =
        r.Bool(*s, "past_present_share_buffer", "/search", d.past_present_share_buffer);
    d.num_beams = r.Int(*s, "num_beams", "/search", d.num_beams);
    if (d.max_length < 0) r.Fail("/search/max_length", "must not be negative");
    if (d.num_beams > 1) {
      r.Fail("/search/num_beams", "beam search (num_beams=" + std::to_string(d.num_beams) +
                                      ") is not supported by ebb yet; set num_beams to 1");
    }
    const int32_t num_return = r.Int(*s, "num_return_sequences", "/search", 1);
    if (num_return > 1) {
      r.Fail("/search/num_return_sequences",
             "returning several sequences (num_return_sequences=" + std::to_string(num_return) +
                 ") is not supported by ebb yet; set it to 1");
    }
  }
  return cfg;
}

GenaiConfig LoadGenaiConfig(const std::filesystem::path& dir) {
  std::filesystem::path path = dir;
  std::error_code ec;
  // A folder (existing or not) gets the standard file name; a path to a .json file is used as is.
  if (std::filesystem::is_directory(dir, ec) || dir.extension() != ".json") {
    path = dir / "genai_config.json";
  }
  if (!FileExists(path, "genai_config.json")) {
    throw Error(ErrorCode::NotFound,
                path.string() +
                    ": not found; a model folder needs genai_config.json (as written "
                    "by the ONNX Runtime model builder or tools/synth_model.py)");
  }
  GenaiConfig cfg =
      ParseGenaiConfig(ReadRegularFile(path, kMaxConfigFileBytes, "genai_config.json"), path);
  if (!FileExists(cfg.model_path, "the model's ONNX file")) {
    throw Error(ErrorCode::NotFound,
                path.string() + ": " + (cfg.is_encoder ? "/model/encoder" : "/model/decoder") +
                    "/filename: " + cfg.model_path.string() + " does not exist");
  }
  return cfg;
}

}  // namespace ebb::internal
