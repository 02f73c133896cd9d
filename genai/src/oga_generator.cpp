// oga_generator.cpp — genai's generator params and generators over ebb::Generator.
//
// The generator owns its KV cache (ebb's rule): OgaDestroyGenerator returns it to the model's
// pool, bounded by kv_cache.retain_bytes, so a genai program that creates and destroys generators
// in a loop stays flat (docs/genai.md "Memory").
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "ebb/json.h"
#include "ebb/model_controls.h"
#include "ebb/stats.h"
#include "ebb_genai.h"
#include "oga_internal.h"

using json = nlohmann::json;

struct OgaGenerator {
  std::shared_ptr<ebb::Model> model;
  std::unique_ptr<ebb::Generator> gen;
  int32_t batch = 1;       // rows the caller appends (search batch_size)
  int32_t num_return = 1;  // rows per appended sequence (num_return_sequences)
  int32_t min_length = 0;
  bool terminated = false;           // SetRuntimeOption("terminate_session", "1")
  std::vector<int32_t> next_tokens;  // GetNextTokens' storage: valid until the next call
  std::map<std::string, std::shared_ptr<oga::TensorData>> inputs;  // what SetModelInput was given
};

namespace oga {
namespace {

// genai's documented search options and their defaults (genai's config.h), as numbers or bools.
const std::map<std::string, double>& NumberDefaults() {
  static const std::map<std::string, double> d = {{"batch_size", 1},
                                                  {"chunk_size", 0},
                                                  {"diversity_penalty", 0},
                                                  {"length_penalty", 1},
                                                  {"max_length", 0},
                                                  {"min_length", 0},
                                                  {"no_repeat_ngram_size", 0},
                                                  {"num_beams", 1},
                                                  {"num_return_sequences", 1},
                                                  {"random_seed", -1},
                                                  {"repetition_penalty", 1},
                                                  {"temperature", 1},
                                                  {"top_k", 50},
                                                  {"top_p", 0}};
  return d;
}

const std::map<std::string, bool>& BoolDefaults() {
  static const std::map<std::string, bool> d = {
      {"do_sample", false}, {"early_stopping", true}, {"past_present_share_buffer", false}};
  return d;
}

std::string Names(const auto& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k;
  return s;
}

bool IsInteger(const std::string& name) {
  return name != "diversity_penalty" && name != "length_penalty" && name != "repetition_penalty" &&
         name != "temperature" && name != "top_p";
}

// Checks one number against what ebb can honour; throws naming the option and the fix.
void CheckNumber(const std::string& name, double v) {
  if (!std::isfinite(v)) throw std::invalid_argument(name + " must be a finite number");
  if (IsInteger(name) && v != std::floor(v)) {
    throw std::invalid_argument(name + " must be a whole number, not " + std::to_string(v));
  }
  if (name == "num_beams" && v != 1) {
    throw std::invalid_argument(
        "num_beams " + std::to_string(static_cast<int64_t>(v)) +
        ": ebb has no beam search (it decodes greedily or by sampling, as llama.cpp and Ollama "
        "do); set num_beams 1, or do_sample with num_return_sequences for several answers");
  }
  const bool may_be_negative = name == "random_seed" || name == "diversity_penalty";
  if (!may_be_negative && v < 0) throw std::invalid_argument(name + " must not be negative");
  if ((name == "batch_size" || name == "num_return_sequences") && v < 1) {
    throw std::invalid_argument(name + " must be at least 1");
  }
}

void SetNumber(SearchOptions& s, const std::string& name, double v) {
  if (NumberDefaults().count(name) == 0) {
    const bool is_bool = BoolDefaults().count(name) != 0;
    throw std::invalid_argument("unknown search option \"" + name + "\"" +
                                (is_bool ? " as a number: set it with SetSearchBool"
                                         : "; the numbers are " + Names(NumberDefaults())));
  }
  CheckNumber(name, v);
  s.numbers[name] = v;
}

void SetBool(SearchOptions& s, const std::string& name, bool v) {
  if (BoolDefaults().count(name) == 0) {
    const bool is_number = NumberDefaults().count(name) != 0;
    throw std::invalid_argument("unknown search option \"" + name + "\"" +
                                (is_number ? " as a bool: set it with SetSearchNumber"
                                           : "; the bools are " + Names(BoolDefaults())));
  }
  s.bools[name] = v;
}

std::string Number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

SearchOptions DefaultSearch(const json& config_search) {
  SearchOptions s;
  s.numbers = NumberDefaults();
  s.bools = BoolDefaults();
  if (!config_search.is_object()) return s;
  for (const auto& [k, v] : config_search.items()) {
    try {
      if (v.is_boolean()) {
        SetBool(s, k, v.get<bool>());
      } else if (v.is_number()) {
        SetNumber(s, k, v.get<double>());
      } else {
        throw std::invalid_argument("must be a number or a bool");
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("genai_config.json search." + k + ": " + e.what());
    }
  }
  return s;
}

ebb::GeneratorParams ToEbbParams(const SearchOptions& s, const ebb::Model& model) {
  const auto num = [&](const char* k) { return s.numbers.at(k); };
  ebb::GeneratorParams p;
  const int32_t vocab = model.info().vocab_size;
  // Through Set(), so each value meets the option table's ranges as on every other surface.
  if (num("max_length") > 0) p.Set("max_length", Number(num("max_length")));
  p.Set("batch_size", Number(num("batch_size") * num("num_return_sequences")));
  p.Set("do_sample", s.bools.at("do_sample") ? "true" : "false");
  if (num("top_k") > vocab) {
    throw std::invalid_argument("top_k " + Number(num("top_k")) +
                                " is above the model's vocab_size " + std::to_string(vocab) +
                                "; use at most " + std::to_string(vocab));
  }
  p.Set("top_k", Number(num("top_k")));
  // genai: top_p 0 (its default) or 1 means no nucleus filter.
  const double top_p = num("top_p");
  p.Set("top_p", top_p <= 0 || top_p >= 1 ? "1" : Number(top_p));
  p.Set("temperature", Number(num("temperature")));
  p.Set("repetition_penalty", Number(num("repetition_penalty")));
  if (num("chunk_size") > 0) p.Set("prefill_chunk_size", Number(num("chunk_size")));
  if (num("random_seed") >= 0) {
    p.seed = static_cast<uint64_t>(num("random_seed"));
  } else {
    std::random_device rd;  // genai: -1 seeds from the device
    p.seed = (static_cast<uint64_t>(rd()) << 32) | rd();
  }
  if (!s.guidance_key.empty()) p.Set(s.guidance_key, s.guidance);
  return p;
}

}  // namespace oga

using oga::Guard;
using oga::NotNull;

// ---- Generator params

OgaResult* OGA_API_CALL OgaCreateGeneratorParams(const OgaModel* model, OgaGeneratorParams** out) {
  return Guard("OgaCreateGeneratorParams", [&] {
    NotNull(out, "out");
    *out = nullptr;
    NotNull(model, "model");
    *out = new OgaGeneratorParams{model->model, model->search};  // shares the model
  });
}

void OGA_API_CALL OgaDestroyGeneratorParams(OgaGeneratorParams* params) { delete params; }

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchNumber(OgaGeneratorParams* params,
                                                          const char* name, double value) {
  return Guard("OgaGeneratorParamsSetSearchNumber", [&] {
    NotNull(params, "params");
    NotNull(name, "name");
    oga::SetNumber(params->search, name, value);
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchBool(OgaGeneratorParams* params,
                                                        const char* name, bool value) {
  return Guard("OgaGeneratorParamsSetSearchBool", [&] {
    NotNull(params, "params");
    NotNull(name, "name");
    oga::SetBool(params->search, name, value);
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchNumber(const OgaGeneratorParams* params,
                                                          const char* name, double* value) {
  return Guard("OgaGeneratorParamsGetSearchNumber", [&] {
    NotNull(params, "params");
    NotNull(name, "name");
    NotNull(value, "value");
    auto it = params->search.numbers.find(name);
    if (it == params->search.numbers.end()) {
      throw std::invalid_argument(std::string("unknown search number \"") + name + "\"");
    }
    // max_length 0 means "the model's": report the length in force, as genai does.
    *value = it->second;
    if (std::string_view(name) == "max_length" && *value == 0) {
      *value = params->model->info().context_length;
    }
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchBool(const OgaGeneratorParams* params,
                                                        const char* name, bool* value) {
  return Guard("OgaGeneratorParamsGetSearchBool", [&] {
    NotNull(params, "params");
    NotNull(name, "name");
    NotNull(value, "value");
    auto it = params->search.bools.find(name);
    if (it == params->search.bools.end()) {
      throw std::invalid_argument(std::string("unknown search bool \"") + name + "\"");
    }
    *value = it->second;
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetGuidance(OgaGeneratorParams* params, const char* type,
                                                      const char* data, bool /*enable_ff_tokens*/) {
  // genai's types through llguidance: json_schema, regex, lark_grammar. ebb compiles the first
  // two itself (docs/structured_output.md) and takes GBNF grammars, not Lark. Forced tokens are
  // always on in ebb (batch 1), so enable_ff_tokens changes nothing.
  return Guard("OgaGeneratorParamsSetGuidance", [&] {
    NotNull(params, "params");
    NotNull(type, "type");
    NotNull(data, "data");
    const std::string t = type;
    std::string key;
    if (t == "json_schema") {
      key = "json_schema";
    } else if (t == "regex") {
      key = "regex";
    } else if (t == "lark_grammar") {
      throw std::invalid_argument(
          "guidance type \"lark_grammar\" is not supported by ebb: give the grammar in GBNF "
          "(llama.cpp's format) with type \"gbnf\", or use \"json_schema\" or \"regex\"");
    } else if (t == "gbnf" || t == "grammar") {
      key = "grammar";
    } else if (t.empty()) {
      params->search.guidance_key.clear();  // no guidance
      params->search.guidance.clear();
      return;
    } else {
      throw std::invalid_argument("guidance type \"" + t +
                                  "\" is not one of json_schema, regex, gbnf");
    }
    // Compiled when the generator is created (through the model's constraint cache, which
    // keeps it for the next generator); a keyword ebb cannot honour is named then.
    params->search.guidance_key = key;
    params->search.guidance = data;
  });
}

// ---- Generators

OgaResult* OGA_API_CALL OgaCreateGenerator(const OgaModel* model, const OgaGeneratorParams* params,
                                           OgaGenerator** out) {
  return Guard("OgaCreateGenerator", [&] {
    NotNull(out, "out");
    *out = nullptr;
    NotNull(model, "model");
    NotNull(params, "params");
    auto g = std::make_unique<OgaGenerator>();
    g->model = params->model;
    g->batch = static_cast<int32_t>(params->search.numbers.at("batch_size"));
    g->num_return = static_cast<int32_t>(params->search.numbers.at("num_return_sequences"));
    g->min_length = static_cast<int32_t>(params->search.numbers.at("min_length"));
    g->gen =
        std::make_unique<ebb::Generator>(g->model, oga::ToEbbParams(params->search, *g->model));
    *out = g.release();
  });
}

namespace {

// EBB_GENAI_LOG_STATS=1: each destroyed generator logs its model's memory stats (docs/genai.md).
bool LogStatsOnDestroy() {
  static const bool on = [] {
    const char* v = std::getenv("EBB_GENAI_LOG_STATS");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return on;
}

}  // namespace

void OGA_API_CALL OgaDestroyGenerator(OgaGenerator* generator) {
  if (generator == nullptr) return;
  std::shared_ptr<ebb::Model> model = generator->model;
  delete generator;  // the KV goes back here
  if (LogStatsOnDestroy()) {
    try {
      const std::string line = "ebb genai stats: " + ebb::ToJson(model->runtime().Stats()) + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    } catch (...) {
      // stats are best effort; destroying never fails
    }
  }
}

bool OGA_API_CALL OgaGenerator_IsDone(OgaGenerator* generator) {
  return generator != nullptr && generator->gen->done();
}

bool OGA_API_CALL OgaGenerator_IsSessionTerminated(const OgaGenerator* generator) {
  return generator != nullptr && generator->terminated;
}

namespace {

// The caller's rows, each repeated num_return_sequences times (genai's expansion), appended.
void AppendRows(OgaGenerator& g, const std::vector<std::vector<int32_t>>& rows) {
  if (static_cast<int32_t>(rows.size()) != g.batch) {
    throw std::invalid_argument(std::to_string(rows.size()) +
                                " sequences given; the params' batch_size is " +
                                std::to_string(g.batch));
  }
  if (g.batch == 1 && g.num_return == 1) {
    g.gen->AppendTokens(std::span<const int32_t>(rows[0]));
    return;
  }
  std::vector<std::vector<int32_t>> expanded;
  for (const auto& r : rows) {
    for (int32_t i = 0; i < g.num_return; ++i) expanded.push_back(r);
  }
  g.gen->AppendTokens(expanded);
}

void CheckTerminated(const OgaGenerator& g) {
  if (g.terminated) {
    throw std::runtime_error(
        "the session was terminated (SetRuntimeOption terminate_session=1); set it to 0 to "
        "continue");
  }
}

// The tensor of one ebb output (Generator::GetOutput), owning its bytes.
std::shared_ptr<oga::TensorData> OutputTensor(OgaGenerator& g, const char* name) {
  ebb::Generator::Output o = g.gen->GetOutput(name);
  auto t = std::make_shared<oga::TensorData>();
  t->type = o.element_type == "float16" ? OgaElementType_float16 : OgaElementType_float32;
  t->shape = std::move(o.shape);
  t->owned = std::move(o.data);
  t->data = t->owned.data();
  return t;
}

// input_ids as rows: int32 or int64, [batch, length] (or [length] for one row).
std::vector<std::vector<int32_t>> RowsOf(const oga::TensorData& t, int32_t batch) {
  if (t.type != OgaElementType_int32 && t.type != OgaElementType_int64) {
    throw std::invalid_argument("input_ids must be int32 or int64");
  }
  if (t.shape.empty() || t.shape.size() > 2) {
    throw std::invalid_argument("input_ids must be [batch_size, length]");
  }
  const size_t n = t.ElementCount();
  const size_t rows = t.shape.size() == 2 ? static_cast<size_t>(t.shape[0]) : 1;
  if (static_cast<int32_t>(rows) != batch) {
    throw std::invalid_argument("input_ids has " + std::to_string(rows) +
                                " rows; the params' batch_size is " + std::to_string(batch));
  }
  const size_t len = rows == 0 ? 0 : n / rows;
  std::vector<std::vector<int32_t>> out(rows);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < len; ++i) {
      const size_t k = r * len + i;
      out[r].push_back(t.type == OgaElementType_int32
                           ? static_cast<const int32_t*>(t.data)[k]
                           : static_cast<int32_t>(static_cast<const int64_t*>(t.data)[k]));
    }
  }
  return out;
}

void SetInput(OgaGenerator& g, const std::string& name, const std::shared_ptr<oga::TensorData>& t) {
  if (name != "input_ids") {
    throw std::invalid_argument(
        "model input \"" + name +
        "\": ebb feeds a decoder's inputs itself (input_ids, attention_mask, position_ids and "
        "the past KV); extra inputs belong to multimodal models, which ebb does not run. Append "
        "tokens with OgaGenerator_AppendTokens");
  }
  AppendRows(g, RowsOf(*t, g.batch));
  g.inputs[name] = t;
}

}  // namespace

OgaResult* OGA_API_CALL OgaGenerator_SetModelInput(OgaGenerator* generator, const char* name,
                                                   OgaTensor* tensor) {
  return Guard("OgaGenerator_SetModelInput", [&] {
    NotNull(generator, "generator");
    NotNull(name, "name");
    NotNull(tensor, "tensor");
    SetInput(*generator, name, tensor->t);
  });
}

OgaResult* OGA_API_CALL OgaGenerator_SetInputs(OgaGenerator* generator,
                                               const OgaNamedTensors* named_tensors) {
  return Guard("OgaGenerator_SetInputs", [&] {
    NotNull(generator, "generator");
    NotNull(named_tensors, "named_tensors");
    for (const auto& [name, t] : named_tensors->items) {
      if (name != "input_ids") SetInput(*generator, name, t);  // throws, naming it
    }
    auto it = named_tensors->items.find("input_ids");
    if (it != named_tensors->items.end()) SetInput(*generator, it->first, it->second);
  });
}

OgaResult* OGA_API_CALL OgaGenerator_AppendTokenSequences(OgaGenerator* generator,
                                                          const OgaSequences* p_sequences) {
  return Guard("OgaGenerator_AppendTokenSequences", [&] {
    NotNull(generator, "generator");
    NotNull(p_sequences, "sequences");
    CheckTerminated(*generator);
    AppendRows(*generator, p_sequences->rows);
  });
}

// genai: input_ids is [batch_size, length] flattened, every row the same length.
OgaResult* OGA_API_CALL OgaGenerator_AppendTokens(OgaGenerator* generator, const int32_t* input_ids,
                                                  size_t input_ids_count) {
  return Guard("OgaGenerator_AppendTokens", [&] {
    NotNull(generator, "generator");
    CheckTerminated(*generator);
    if (input_ids_count == 0)
      throw std::invalid_argument("input_ids_count is 0: nothing to append");
    NotNull(input_ids, "input_ids");
    const size_t batch = static_cast<size_t>(generator->batch);
    if (input_ids_count % batch != 0) {
      throw std::invalid_argument(std::to_string(input_ids_count) +
                                  " tokens do not split into batch_size " + std::to_string(batch) +
                                  " rows of equal length");
    }
    const size_t len = input_ids_count / batch;
    std::vector<std::vector<int32_t>> rows(batch);
    for (size_t r = 0; r < batch; ++r)
      rows[r].assign(input_ids + r * len, input_ids + (r + 1) * len);
    AppendRows(*generator, rows);
  });
}

size_t OGA_API_CALL OgaGenerator_TokenCount(const OgaGenerator* generator) {
  if (generator == nullptr || !generator->gen) return 0;
  try {
    return generator->gen->sequence(0).size();
  } catch (...) {
    return 0;
  }
}

OgaResult* OGA_API_CALL OgaGenerator_GenerateNextToken(OgaGenerator* generator) {
  return Guard("OgaGenerator_GenerateNextToken", [&] {
    NotNull(generator, "generator");
    CheckTerminated(*generator);
    OgaGenerator& g = *generator;
    if (g.min_length > 0 && !g.gen->done()) {
      // genai's min_length: no EOS before a row holds min_length tokens (prompt included).
      bool any_short = false;
      const int32_t rows = g.batch * g.num_return;
      for (int32_t r = 0; r < rows && !any_short; ++r) {
        any_short = static_cast<int32_t>(g.gen->sequence(r).size()) < g.min_length;
      }
      if (any_short) {
        g.gen->ComputeLogits();
        const auto cur = g.gen->GetLogits();
        std::vector<float> logits(cur.begin(), cur.end());
        const size_t vocab = static_cast<size_t>(g.model->info().vocab_size);
        for (int32_t r = 0; r < rows; ++r) {
          if (static_cast<int32_t>(g.gen->sequence(r).size()) >= g.min_length) continue;
          for (int32_t eos : g.model->info().eos_token_ids) {
            if (eos >= 0 && static_cast<size_t>(eos) < vocab) {
              logits[r * vocab + eos] = -std::numeric_limits<float>::infinity();
            }
          }
        }
        g.gen->SetLogits(logits);
      }
    }
    g.gen->GenerateNextToken();
  });
}

OgaResult* OGA_API_CALL OgaGenerator_GetNextTokens(const OgaGenerator* generator,
                                                   const int32_t** out, size_t* out_count) {
  return Guard("OgaGenerator_GetNextTokens", [&] {
    NotNull(generator, "generator");
    NotNull(out, "out");
    NotNull(out_count, "out_count");
    auto& g = const_cast<OgaGenerator&>(*generator);  // the storage is the handle's
    g.next_tokens = g.gen->GetNextTokens();
    *out = g.next_tokens.data();
    *out_count = g.next_tokens.size();
  });
}

// terminate_session is this generator's (genai's meaning); every other key is ebb's Tier 2 run
// option of the model (ModelControls::SetRunOption: the same keys as every surface).
OgaResult* OGA_API_CALL OgaGenerator_SetRuntimeOption(OgaGenerator* generator, const char* key,
                                                      const char* value) {
  return Guard("OgaGenerator_SetRuntimeOption", [&] {
    NotNull(generator, "generator");
    NotNull(key, "key");
    NotNull(value, "value");
    if (std::string_view(key) == "terminate_session") {
      const std::string_view v(value);
      if (v != "0" && v != "1") {
        throw std::invalid_argument(std::string("terminate_session takes \"0\" or \"1\", not \"") +
                                    value + "\"");
      }
      generator->terminated = v == "1";
      return;
    }
    generator->model->runtime().SetRunOption(key, value);
  });
}

OgaResult* OGA_API_CALL OgaGenerator_RewindTo(OgaGenerator* generator, size_t new_length) {
  return Guard("OgaGenerator_RewindTo", [&] {
    NotNull(generator, "generator");
    generator->gen->RewindTo(new_length);
  });
}

OgaResult* OGA_API_CALL OgaGenerator_GetInput(const OgaGenerator* generator, const char* name,
                                              OgaTensor** out) {
  return Guard("OgaGenerator_GetInput", [&] {
    NotNull(generator, "generator");
    NotNull(name, "name");
    NotNull(out, "out");
    *out = nullptr;
    auto it = generator->inputs.find(name);
    if (it == generator->inputs.end()) {
      throw std::invalid_argument(std::string("no input \"") + name +
                                  "\" was set on this generator (OgaGenerator_SetModelInput); ebb "
                                  "computes the decoder's other inputs itself");
    }
    *out = new OgaTensor{it->second};
  });
}

// ebb's Generator::GetOutput: "logits" ([batch, 1, vocab], the last position: ebb computes the
// LM head only there) or a KV output by the graph's name, copied from the generator's cache.
OgaResult* OGA_API_CALL OgaGenerator_GetOutput(const OgaGenerator* generator, const char* name,
                                               OgaTensor** out) {
  return Guard("OgaGenerator_GetOutput", [&] {
    NotNull(generator, "generator");
    NotNull(name, "name");
    NotNull(out, "out");
    *out = nullptr;
    *out = new OgaTensor{OutputTensor(const_cast<OgaGenerator&>(*generator), name)};
  });
}

OgaResult* OGA_API_CALL OgaGenerator_GetLogits(OgaGenerator* generator, OgaTensor** out) {
  return Guard("OgaGenerator_GetLogits", [&] {
    NotNull(generator, "generator");
    NotNull(out, "out");
    *out = nullptr;
    *out = new OgaTensor{OutputTensor(*generator, "logits")};
  });
}

OgaResult* OGA_API_CALL OgaGenerator_SetLogits(OgaGenerator* generator, OgaTensor* tensor) {
  return Guard("OgaGenerator_SetLogits", [&] {
    NotNull(generator, "generator");
    NotNull(tensor, "tensor");
    const oga::TensorData& t = *tensor->t;
    if (t.type != OgaElementType_float32) {
      throw std::invalid_argument("the logits must be float32");
    }
    generator->gen->SetLogits(
        std::span<const float>(static_cast<const float*>(t.data), t.ElementCount()));
  });
}

size_t OGA_API_CALL OgaGenerator_GetSequenceCount(const OgaGenerator* generator, size_t index) {
  if (generator == nullptr) return 0;
  try {
    return generator->gen->sequence(index).size();
  } catch (...) {
    return 0;
  }
}

const int32_t* OGA_API_CALL OgaGenerator_GetSequenceData(const OgaGenerator* generator,
                                                         size_t index) {
  if (generator == nullptr) return nullptr;
  try {
    return generator->gen->sequence(index).data();
  } catch (...) {
    return nullptr;
  }
}

// ---- ebb's additions (ebb_genai.h)

OgaResult* OGA_API_CALL EbbOgaModelStatsJson(const OgaModel* model, const char** out) {
  return Guard("EbbOgaModelStatsJson", [&] {
    NotNull(model, "model");
    NotNull(out, "out");
    *out = oga::CopyString(ebb::ToJson(model->model->runtime().Stats()));
  });
}

OgaResult* OGA_API_CALL EbbOgaModelShrink(const OgaModel* model) {
  return Guard("EbbOgaModelShrink", [&] {
    NotNull(model, "model");
    model->model->runtime().ShrinkArena();
  });
}
