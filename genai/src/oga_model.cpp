// oga_model.cpp — genai's configs and models over ebb::LoadModel.
//
// A genai config is the folder's genai_config.json plus the caller's changes. ebb loads the folder
// itself (it reads genai_config.json), so each change becomes the ebb load option that means the
// same thing: providers -> execution_provider, provider options -> provider_options.<ep>.<key>,
// an overlay's model.decoder.session_options / run_options -> session_options.* / run_options.*,
// its "search" section -> the generator defaults, and an "ebb" section -> ebb's model options
// (docs/genai.md). An overlay that changes anything else under "model" is refused when the model
// is created, naming the field, rather than silently not applied.
#include <fstream>
#include <random>
#include <sstream>

#include "ebb/options.h"
#include "ebb/runtime.h"
#include "oga_internal.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace oga {
namespace {

json ReadConfigFile(const fs::path& dir) {
  const fs::path file = dir / "genai_config.json";
  std::ifstream in(file);
  if (!in) {
    throw ebb::Error(ebb::ErrorCode::NotFound,
                     "no genai_config.json in " + dir.string() +
                         ": pass the model folder (genai_config.json, the ONNX decoder and "
                         "tokenizer.json)");
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw ebb::Error(ebb::ErrorCode::InvalidArgument,
                     file.string() + " is not valid JSON: " + e.what());
  }
}

// A JSON scalar as the option string ebb's Set() parses.
std::string OptionText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

// "ebb": {"kv_cache": {"mode": "dynamic"}, "memory.limit": "1GiB"} -> Set("kv_cache.mode", ...).
void ApplyEbbSection(const json& section, const std::string& prefix, ebb::ModelOptions& opts) {
  if (!section.is_object()) {
    throw ebb::Error(ebb::ErrorCode::InvalidArgument,
                     "genai_config.json \"ebb\"" + (prefix.empty() ? "" : "." + prefix) +
                         " must be an object of ebb model options (docs/options.md)");
  }
  for (const auto& [k, v] : section.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    // provider_options.<ep> and session/run option maps nest one level deeper.
    if (v.is_object()) {
      ApplyEbbSection(v, key, opts);
    } else {
      opts.Set(key, OptionText(v));
    }
  }
}

// genai's provider names ("cuda", "dml", "WebGPU", "QNN") as ebb's execution_provider.
std::string EbbProviderName(std::string name) {
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// genai_config's provider_options: [{"cuda": {"k": "v"}}, ...] as (name, options) in order.
std::vector<std::pair<std::string, json>> ConfigProviders(const json& cfg) {
  std::vector<std::pair<std::string, json>> out;
  const json* po = nullptr;
  if (cfg.contains("model") && cfg["model"].contains("decoder") &&
      cfg["model"]["decoder"].contains("session_options") &&
      cfg["model"]["decoder"]["session_options"].contains("provider_options")) {
    po = &cfg["model"]["decoder"]["session_options"]["provider_options"];
  }
  if (po == nullptr || !po->is_array()) return out;
  for (const auto& entry : *po) {
    if (!entry.is_object()) continue;
    for (const auto& [name, opts] : entry.items()) out.emplace_back(name, opts);
  }
  return out;
}

json& ConfigProviderList(json& cfg) {
  json& po = cfg["model"]["decoder"]["session_options"]["provider_options"];
  if (!po.is_array()) po = json::array();
  return po;
}

// The "model" section with the parts ebb maps to load options removed: what must equal the
// file's for the folder ebb loads to mean the same model.
json ModelFieldsEbbReadsFromDisk(json cfg) {
  if (!cfg.contains("model")) return json::object();
  json m = cfg["model"];
  if (m.contains("decoder")) {
    m["decoder"].erase("session_options");
    m["decoder"].erase("run_options");
  }
  return m;
}

// The first field path where `a` and `b` differ ("" when equal).
std::string FirstDifference(const json& a, const json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      if (!b.contains(k)) return path + "." + k;
      std::string d = FirstDifference(v, b[k], path + "." + k);
      if (!d.empty()) return d;
    }
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) return path + "." + k;
    }
    return "";
  }
  return a == b ? "" : path;
}

// A folder that mirrors `dir` (symlinks) with the in-memory files written over it, for
// OgaConfigAddModelData. ebb loads models from files; the bytes go to a private temporary
// folder that is removed with the model (docs/genai.md).
fs::path MaterializeModelData(const OgaConfig& c) {
  std::random_device rd;
  const fs::path tmp =
      fs::temp_directory_path() / ("ebb-genai-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(tmp);
  fs::permissions(tmp, fs::perms::owner_all, fs::perm_options::replace);
  for (const auto& entry : fs::directory_iterator(c.dir)) {
    const auto name = entry.path().filename().string();
    if (c.model_data.count(name) != 0) continue;
    fs::create_symlink(fs::absolute(entry.path()), tmp / name);
  }
  for (const auto& [name, bytes] : c.model_data) {
    std::ofstream out(tmp / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("could not write " + (tmp / name).string());
  }
  return tmp;
}

OgaModel* CreateModel(const OgaConfig& c) {
  ebb::ModelOptions opts;
  const json file_cfg = ReadConfigFile(c.dir);
  const std::string diff = FirstDifference(ModelFieldsEbbReadsFromDisk(c.json),
                                           ModelFieldsEbbReadsFromDisk(file_cfg), "model");
  if (!diff.empty()) {
    throw ebb::Error(ebb::ErrorCode::InvalidArgument,
                     "the overlay changes " + diff +
                         ", which ebb reads from the folder's genai_config.json; overlays may set "
                         "\"search\", model.decoder.session_options, model.decoder.run_options "
                         "and \"ebb\" (edit the file for the rest)");
  }
  const json& dec = c.json.contains("model") && c.json["model"].contains("decoder")
                        ? c.json["model"]["decoder"]
                        : json::object();
  const json& file_dec = file_cfg.contains("model") && file_cfg["model"].contains("decoder")
                             ? file_cfg["model"]["decoder"]
                             : json::object();
  // Session and run options that differ from the file's (the file's ebb reads itself).
  for (const char* section : {"session_options", "run_options"}) {
    if (!dec.contains(section) || !dec[section].is_object()) continue;
    for (const auto& [k, v] : dec[section].items()) {
      if (k == "provider_options" || k == "log_id") continue;
      if (file_dec.contains(section) && file_dec[section].contains(k) &&
          file_dec[section][k] == v) {
        continue;
      }
      opts.Set(std::string(section) + "." + k, OptionText(v));
    }
  }
  // Providers: the caller's list, else the config's (with its options, which ebb also reads).
  std::vector<std::string> providers;
  if (c.providers) {
    providers = *c.providers;
  }
  for (const auto& [name, po] : ConfigProviders(c.json)) {
    if (!c.providers) providers.push_back(name);
    if (!po.is_object()) continue;
    for (const auto& [k, v] : po.items()) {
      opts.Set("provider_options." + EbbProviderName(name) + "." + k, OptionText(v));
    }
  }
  if (c.providers) {
    // ebb runs one provider: the first that is not the CPU (genai falls back to the CPU for
    // what a provider cannot run; ebb's providers run whole graphs).
    std::string ep = "cpu";
    for (const auto& p : providers) {
      if (EbbProviderName(p) != "cpu") {
        ep = EbbProviderName(p);
        break;
      }
    }
    opts.Set("execution_provider", ep);
  }
  if (c.json.contains("ebb")) ApplyEbbSection(c.json["ebb"], "", opts);

  auto m = std::make_unique<OgaModel>();
  if (c.model_data.empty()) {
    m->model = ebb::LoadModel(c.dir, opts);
  } else {
    // The folder goes when the last holder of the model does (params, generators and
    // tokenizers share this control block through the aliasing constructor).
    struct Holder {
      fs::path dir;
      std::shared_ptr<ebb::Model> model;
      ~Holder() {
        model.reset();
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    };
    auto h = std::make_shared<Holder>();
    h->dir = MaterializeModelData(c);
    h->model = ebb::LoadModel(h->dir, opts);
    m->model = std::shared_ptr<ebb::Model>(h, h->model.get());
  }
  if (m->model->info().is_encoder) {
    throw ebb::Error(ebb::ErrorCode::InvalidArgument,
                     c.dir.string() +
                         " is an encoder (embeddings); genai's API generates text: "
                         "use ebb's Embed API for encoders (docs/embeddings.md)");
  }
  m->search = DefaultSearch(c.json.contains("search") ? c.json["search"] : json::object());
  m->type = m->model->info().type;
  m->device = opts.execution_provider.empty() ? "cpu" : opts.execution_provider;
  if (!c.providers) {
    for (const auto& [name, po] : ConfigProviders(c.json)) {
      if (EbbProviderName(name) != "cpu") {
        m->device = EbbProviderName(name);
        break;
      }
    }
  }
  return m.release();
}

}  // namespace
}  // namespace oga

using oga::Guard;
using oga::NotNull;

OgaResult* OGA_API_CALL OgaCreateConfig(const char* config_path, OgaConfig** out) {
  return Guard("OgaCreateConfig", [&] {
    NotNull(out, "out");
    *out = nullptr;
    NotNull(config_path, "config_path");
    fs::path dir(config_path);
    // genai takes the folder; a path to genai_config.json itself is accepted too.
    if (fs::is_regular_file(dir) && dir.filename() == "genai_config.json") dir = dir.parent_path();
    auto c = std::make_unique<OgaConfig>();
    c->json = oga::ReadConfigFile(dir);
    c->dir = dir;
    *out = c.release();
  });
}

void OGA_API_CALL OgaDestroyConfig(OgaConfig* config) { delete config; }

OgaResult* OGA_API_CALL OgaConfigClearProviders(OgaConfig* config) {
  return Guard("OgaConfigClearProviders", [&] {
    NotNull(config, "config");
    config->providers = std::vector<std::string>{};
    oga::ConfigProviderList(config->json) = json::array();
  });
}

OgaResult* OGA_API_CALL OgaConfigAppendProvider(OgaConfig* config, const char* provider) {
  return Guard("OgaConfigAppendProvider", [&] {
    NotNull(config, "config");
    NotNull(provider, "provider");
    if (!config->providers) {
      config->providers = std::vector<std::string>{};
      for (const auto& [name, po] : oga::ConfigProviders(config->json)) {
        config->providers->push_back(name);
      }
    }
    for (const auto& p : *config->providers) {
      if (p == provider) return;  // genai: appending a listed provider changes nothing
    }
    config->providers->push_back(provider);
    oga::ConfigProviderList(config->json).push_back(json{{provider, json::object()}});
  });
}

OgaResult* OGA_API_CALL OgaConfigSetProviderOption(OgaConfig* config, const char* provider,
                                                   const char* key, const char* value) {
  return Guard("OgaConfigSetProviderOption", [&] {
    NotNull(config, "config");
    NotNull(provider, "provider");
    NotNull(key, "key");
    NotNull(value, "value");
    // Checked now, so the error names this call rather than OgaCreateModelFromConfig.
    ebb::ModelOptions probe;
    probe.Set(std::string("provider_options.") + oga::EbbProviderName(provider) + "." + key, value);
    json& list = oga::ConfigProviderList(config->json);
    for (auto& entry : list) {
      if (entry.is_object() && entry.contains(provider)) {
        entry[provider][key] = value;
        return;
      }
    }
    list.push_back(json{{provider, json{{key, value}}}});  // genai adds the provider
    if (config->providers) config->providers->push_back(provider);
  });
}

OgaResult* OGA_API_CALL OgaConfigAddModelData(OgaConfig* config, const char* model_filename,
                                              const void* model_data, size_t model_data_length) {
  return Guard("OgaConfigAddModelData", [&] {
    NotNull(config, "config");
    NotNull(model_filename, "model_filename");
    NotNull(model_data, "model_data");
    const fs::path name(model_filename);
    if (name.has_parent_path() || name.empty() || name == "." || name == "..") {
      throw std::invalid_argument(std::string("model_filename \"") + model_filename +
                                  "\" must be a file name in the model folder, without a path");
    }
    const auto* p = static_cast<const uint8_t*>(model_data);
    config->model_data[name.string()].assign(p, p + model_data_length);
  });
}

OgaResult* OGA_API_CALL OgaConfigRemoveModelData(OgaConfig* config, const char* model_filename) {
  return Guard("OgaConfigRemoveModelData", [&] {
    NotNull(config, "config");
    NotNull(model_filename, "model_filename");
    if (config->model_data.erase(model_filename) == 0) {
      throw std::invalid_argument(std::string("no model data named \"") + model_filename +
                                  "\" was added (OgaConfigAddModelData)");
    }
  });
}

// genai's overlay: a JSON object merged into the config (objects merge key by key; other values
// replace). Checked when the model is created (see the file comment).
OgaResult* OGA_API_CALL OgaConfigOverlay(OgaConfig* config, const char* json_text) {
  return Guard("OgaConfigOverlay", [&] {
    NotNull(config, "config");
    NotNull(json_text, "json");
    json patch;
    try {
      patch = json::parse(json_text);
    } catch (const json::exception& e) {
      throw std::invalid_argument(std::string("the overlay is not valid JSON: ") + e.what());
    }
    if (!patch.is_object()) throw std::invalid_argument("the overlay must be a JSON object");
    json merged = config->json;
    merged.merge_patch(patch);
    if (merged.contains("ebb")) {
      ebb::ModelOptions probe;  // a bad ebb key fails here, naming it
      oga::ApplyEbbSection(merged["ebb"], "", probe);
    }
    if (merged.contains("search")) oga::DefaultSearch(merged["search"]);
    config->json = std::move(merged);
  });
}

OgaResult* OGA_API_CALL OgaCreateModel(const char* config_path, OgaModel** out) {
  return Guard("OgaCreateModel", [&] {
    NotNull(out, "out");
    *out = nullptr;
    NotNull(config_path, "config_path");
    OgaConfig* c = nullptr;
    if (OgaResult* r = OgaCreateConfig(config_path, &c)) {
      std::string msg = r->message.substr(std::string("OgaCreateConfig: ").size());
      OgaDestroyResult(r);
      throw std::runtime_error(msg);
    }
    std::unique_ptr<OgaConfig> owned(c);
    *out = oga::CreateModel(*owned);
  });
}

OgaResult* OGA_API_CALL OgaCreateModelFromConfig(const OgaConfig* config, OgaModel** out) {
  return Guard("OgaCreateModelFromConfig", [&] {
    NotNull(out, "out");
    *out = nullptr;
    NotNull(config, "config");
    *out = oga::CreateModel(*config);
  });
}

OgaResult* OGA_API_CALL OgaModelGetType(const OgaModel* model, const char** out) {
  return Guard("OgaModelGetType", [&] {
    NotNull(model, "model");
    NotNull(out, "out");
    *out = oga::CopyString(model->type);
  });
}

OgaResult* OGA_API_CALL OgaModelGetDeviceType(const OgaModel* model, const char** out) {
  return Guard("OgaModelGetDeviceType", [&] {
    NotNull(model, "model");
    NotNull(out, "out");
    *out = oga::CopyString(model->device);
  });
}

// The handle goes; the model itself lives while a params object, generator or tokenizer holds it.
void OGA_API_CALL OgaDestroyModel(OgaModel* model) { delete model; }
