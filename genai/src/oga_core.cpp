// oga_core.cpp — genai's process-wide functions (results, strings, logging, shutdown, GPU device
// id), sequences, string arrays, tensors and named tensors, and the helpers of oga_internal.h.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>

#include "ebb/log.h"
#include "oga_internal.h"

namespace oga {

namespace {

// genai's log settings (OgaSetLogBool / OgaSetLogString / OgaSetLogCallback). One per process,
// as genai's; guarded because ebb logs from its own threads too.
struct LogState {
  std::mutex mu;
  bool enabled = false;
  std::map<std::string, bool> flags;
  std::string filename;
  void (*callback)(const char*, size_t) = nullptr;
};

LogState& Logs() {
  static LogState* s = new LogState;  // never destroyed: ebb's threads may log at exit
  return *s;
}

// Writes one line to the callback, else the file, else stderr (genai's order).
void Emit(LogState& s, std::string_view line) {
  std::string text(line);
  text += '\n';
  if (s.callback != nullptr) {
    s.callback(text.data(), text.size());
    return;
  }
  if (!s.filename.empty()) {
    std::ofstream f(s.filename, std::ios::app);
    f << text;
    return;
  }
  std::fwrite(text.data(), 1, text.size(), stderr);
}

// Routes ebb's own log lines through genai's settings while logging is enabled, so a genai
// program's callback sees ebb's warnings (an option ignored, a budget hit) too.
void RouteEbbLogs(bool on) {
  if (!on) {
    ebb::SetLogCallback(nullptr);
    return;
  }
  ebb::SetLogCallback([](ebb::LogLevel, std::string_view line) {
    LogState& s = Logs();
    std::lock_guard<std::mutex> lock(s.mu);
    Emit(s, line);
  });
}

// The bool settings genai documents (ort_genai_c.h, OgaSetLogBool). ebb logs its own events; the
// per-step dumps genai offers (model_input_values, ...) are accepted and have no output here
// (docs/genai.md says so).
const std::set<std::string>& KnownLogBools() {
  static const std::set<std::string> k = {"enabled",
                                          "ansi_tags",
                                          "warning",
                                          "generate_next_token",
                                          "append_next_tokens",
                                          "hit_eos",
                                          "hit_max_length",
                                          "model_input_values",
                                          "model_output_shapes",
                                          "model_output_values",
                                          "model_logits",
                                          "continuous_decoding",
                                          "ort_lib",
                                          "value_stats"};
  return k;
}

template <class T>
T* Out(T** out, const char* what) {
  NotNull(out, what);
  *out = nullptr;
  return nullptr;
}

}  // namespace

size_t ElementSize(OgaElementType t) {
  switch (t) {
    case OgaElementType_float32:
    case OgaElementType_int32:
    case OgaElementType_uint32:
      return 4;
    case OgaElementType_uint8:
    case OgaElementType_int8:
    case OgaElementType_bool:
      return 1;
    case OgaElementType_uint16:
    case OgaElementType_int16:
    case OgaElementType_float16:
    case OgaElementType_bfloat16:
      return 2;
    case OgaElementType_int64:
    case OgaElementType_uint64:
    case OgaElementType_float64:
    case OgaElementType_complex64:
      return 8;
    case OgaElementType_complex128:
      return 16;
    default:
      return 0;
  }
}

size_t TensorData::ElementCount() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t TensorData::Bytes() const { return ElementCount() * ElementSize(type); }

// The result handed out when even a result cannot be allocated; never freed (OgaDestroyResult
// knows it by its address, so a real result that happens to say "out of memory" is still freed).
OgaResult* OutOfMemoryResult() {
  static OgaResult oom{"out of memory"};
  return &oom;
}

OgaResult* Fail(std::string message) {
  try {
    return new OgaResult{std::move(message)};
  } catch (...) {
    return OutOfMemoryResult();
  }
}

void NotNull(const void* p, const char* what) {
  if (p == nullptr) throw std::invalid_argument(std::string(what) + " is null");
}

const char* CopyString(std::string_view s) {
  char* p = new char[s.size() + 1];
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

OgaResult* Unsupported(const char* fn, std::string_view instead) {
  return Fail(std::string(fn) +
              " is not supported by ebb's onnxruntime-genai: " + std::string(instead));
}

void Log(std::string_view message) {
  LogState& s = Logs();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.enabled) return;
  Emit(s, message);
}

}  // namespace oga

using oga::Guard;
using oga::NotNull;

// ---- Process-wide

// ebb's runtime keeps no library-wide ORT state that a program must tear down in order (the ORT
// environment lives as long as the process, and models free themselves when their last handle
// goes): shutting down stops routing ebb's logs and is otherwise a no-op. Calling genai again
// afterwards works, as genai allows.
void OGA_API_CALL OgaShutdown() {
  auto& s = oga::Logs();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.enabled) oga::RouteEbbLogs(false);
  s.enabled = false;
}

const char* OGA_API_CALL OgaResultGetError(const OgaResult* result) {
  return result == nullptr ? nullptr : result->message.c_str();
}

void OGA_API_CALL OgaDestroyResult(OgaResult* result) {
  if (result == nullptr || result == oga::OutOfMemoryResult()) return;
  delete result;
}

void OGA_API_CALL OgaDestroyString(const char* s) { delete[] s; }

OgaResult* OGA_API_CALL OgaSetLogBool(const char* name, bool value) {
  return Guard("OgaSetLogBool", [&] {
    NotNull(name, "name");
    if (oga::KnownLogBools().count(name) == 0) {
      std::string known;
      for (const auto& k : oga::KnownLogBools()) known += (known.empty() ? "" : ", ") + k;
      throw std::invalid_argument(std::string("unknown log setting \"") + name +
                                  "\"; known: " + known);
    }
    auto& s = oga::Logs();
    std::lock_guard<std::mutex> lock(s.mu);
    s.flags[name] = value;
    if (std::string_view(name) == "enabled" && s.enabled != value) {
      s.enabled = value;
      oga::RouteEbbLogs(value);
    }
  });
}

OgaResult* OGA_API_CALL OgaSetLogString(const char* name, const char* value) {
  return Guard("OgaSetLogString", [&] {
    NotNull(name, "name");
    if (std::string_view(name) != "filename") {
      throw std::invalid_argument(std::string("unknown log setting \"") + name +
                                  "\"; the string setting is \"filename\"");
    }
    auto& s = oga::Logs();
    std::lock_guard<std::mutex> lock(s.mu);
    s.filename = value == nullptr ? "" : value;  // "" or null: back to stderr
  });
}

OgaResult* OGA_API_CALL OgaSetLogCallback(void (*callback)(const char* string, size_t length)) {
  return Guard("OgaSetLogCallback", [&] {
    auto& s = oga::Logs();
    std::lock_guard<std::mutex> lock(s.mu);
    s.callback = callback;  // null: back to the file or stderr
  });
}

// ebb picks the device through the provider (OgaConfigAppendProvider) and its options
// ("device_id" in provider_options); this id is kept for programs that read it back.
namespace {
int g_device_id = 0;
}

OgaResult* OGA_API_CALL OgaSetCurrentGpuDeviceId(int device_id) {
  return Guard("OgaSetCurrentGpuDeviceId", [&] {
    if (device_id < 0) {
      throw std::invalid_argument("device_id " + std::to_string(device_id) + " is negative");
    }
    g_device_id = device_id;
  });
}

OgaResult* OGA_API_CALL OgaGetCurrentGpuDeviceId(int* device_id) {
  return Guard("OgaGetCurrentGpuDeviceId", [&] {
    NotNull(device_id, "device_id");
    *device_id = g_device_id;
  });
}

// ---- Sequences

OgaResult* OGA_API_CALL OgaCreateSequences(OgaSequences** out) {
  return Guard("OgaCreateSequences", [&] {
    oga::Out(out, "out");
    *out = new OgaSequences;
  });
}

void OGA_API_CALL OgaDestroySequences(OgaSequences* sequences) { delete sequences; }

size_t OGA_API_CALL OgaSequencesCount(const OgaSequences* sequences) {
  return sequences == nullptr ? 0 : sequences->rows.size();
}

OgaResult* OGA_API_CALL OgaAppendTokenSequence(const int32_t* token_ptr, size_t token_cnt,
                                               OgaSequences* sequences) {
  return Guard("OgaAppendTokenSequence", [&] {
    NotNull(sequences, "sequences");
    if (token_cnt > 0) NotNull(token_ptr, "token_ptr");
    sequences->rows.emplace_back(token_ptr, token_ptr + token_cnt);
  });
}

OgaResult* OGA_API_CALL OgaAppendTokenToSequence(int32_t token, OgaSequences* sequences,
                                                 size_t sequence_index) {
  return Guard("OgaAppendTokenToSequence", [&] {
    NotNull(sequences, "sequences");
    // genai: an index one past the end starts a new sequence.
    if (sequence_index > sequences->rows.size()) {
      throw std::out_of_range("sequence_index " + std::to_string(sequence_index) +
                              " is past the end (" + std::to_string(sequences->rows.size()) +
                              " sequences)");
    }
    if (sequence_index == sequences->rows.size()) sequences->rows.emplace_back();
    sequences->rows[sequence_index].push_back(token);
  });
}

size_t OGA_API_CALL OgaSequencesGetSequenceCount(const OgaSequences* sequences,
                                                 size_t sequence_index) {
  if (sequences == nullptr || sequence_index >= sequences->rows.size()) return 0;
  return sequences->rows[sequence_index].size();
}

const int32_t* OGA_API_CALL OgaSequencesGetSequenceData(const OgaSequences* sequences,
                                                        size_t sequence_index) {
  if (sequences == nullptr || sequence_index >= sequences->rows.size()) return nullptr;
  return sequences->rows[sequence_index].data();
}

// ---- String arrays

OgaResult* OGA_API_CALL OgaCreateStringArray(OgaStringArray** out) {
  return Guard("OgaCreateStringArray", [&] {
    oga::Out(out, "out");
    *out = new OgaStringArray;
  });
}

OgaResult* OGA_API_CALL OgaCreateStringArrayFromStrings(const char* const* strs, size_t count,
                                                        OgaStringArray** out) {
  return Guard("OgaCreateStringArrayFromStrings", [&] {
    oga::Out(out, "out");
    if (count > 0) NotNull(strs, "strs");
    auto a = std::make_unique<OgaStringArray>();
    for (size_t i = 0; i < count; ++i) {
      NotNull(strs[i], "strs[i]");
      a->items.emplace_back(strs[i]);
    }
    *out = a.release();
  });
}

void OGA_API_CALL OgaDestroyStringArray(OgaStringArray* string_array) { delete string_array; }

OgaResult* OGA_API_CALL OgaStringArrayAddString(OgaStringArray* string_array, const char* str) {
  return Guard("OgaStringArrayAddString", [&] {
    NotNull(string_array, "string_array");
    NotNull(str, "str");
    string_array->items.emplace_back(str);
  });
}

OgaResult* OGA_API_CALL OgaStringArrayGetCount(const OgaStringArray* string_array, size_t* out) {
  return Guard("OgaStringArrayGetCount", [&] {
    NotNull(string_array, "string_array");
    NotNull(out, "out");
    *out = string_array->items.size();
  });
}

// The string belongs to the array (valid until it is destroyed), as in genai.
OgaResult* OGA_API_CALL OgaStringArrayGetString(const OgaStringArray* string_array, size_t index,
                                                const char** out) {
  return Guard("OgaStringArrayGetString", [&] {
    NotNull(string_array, "string_array");
    NotNull(out, "out");
    if (index >= string_array->items.size()) {
      throw std::out_of_range("index " + std::to_string(index) + " is past the end (" +
                              std::to_string(string_array->items.size()) + " strings)");
    }
    *out = string_array->items[index].c_str();
  });
}

// ---- Tensors

// data given: the tensor views the caller's buffer (which must outlive every use, genai's rule);
// data null: the tensor allocates and owns zeroed storage of the shape's size.
OgaResult* OGA_API_CALL OgaCreateTensorFromBuffer(void* data, const int64_t* shape_dims,
                                                  size_t shape_dims_count,
                                                  OgaElementType element_type, OgaTensor** out) {
  return Guard("OgaCreateTensorFromBuffer", [&] {
    oga::Out(out, "out");
    if (shape_dims_count > 0) NotNull(shape_dims, "shape_dims");
    if (oga::ElementSize(element_type) == 0) {
      throw std::invalid_argument("element_type " + std::to_string(element_type) +
                                  " has no fixed size (string and undefined are not supported)");
    }
    auto t = std::make_shared<oga::TensorData>();
    t->type = element_type;
    for (size_t i = 0; i < shape_dims_count; ++i) {
      if (shape_dims[i] < 0) {
        throw std::invalid_argument("shape_dims[" + std::to_string(i) + "] is negative");
      }
      t->shape.push_back(shape_dims[i]);
    }
    if (data != nullptr) {
      t->data = data;
    } else {
      t->owned.assign(t->Bytes(), 0);
      t->data = t->owned.data();
    }
    *out = new OgaTensor{std::move(t)};
  });
}

void OGA_API_CALL OgaDestroyTensor(OgaTensor* tensor) { delete tensor; }

OgaResult* OGA_API_CALL OgaTensorGetType(OgaTensor* tensor, OgaElementType* out) {
  return Guard("OgaTensorGetType", [&] {
    NotNull(tensor, "tensor");
    NotNull(out, "out");
    *out = tensor->t->type;
  });
}

OgaResult* OGA_API_CALL OgaTensorGetShapeRank(OgaTensor* tensor, size_t* out) {
  return Guard("OgaTensorGetShapeRank", [&] {
    NotNull(tensor, "tensor");
    NotNull(out, "out");
    *out = tensor->t->shape.size();
  });
}

OgaResult* OGA_API_CALL OgaTensorGetShape(OgaTensor* tensor, int64_t* shape_dims,
                                          size_t shape_dims_count) {
  return Guard("OgaTensorGetShape", [&] {
    NotNull(tensor, "tensor");
    if (shape_dims_count != tensor->t->shape.size()) {
      throw std::invalid_argument("shape_dims_count " + std::to_string(shape_dims_count) +
                                  " is not the tensor's rank " +
                                  std::to_string(tensor->t->shape.size()));
    }
    if (shape_dims_count > 0) NotNull(shape_dims, "shape_dims");
    std::copy(tensor->t->shape.begin(), tensor->t->shape.end(), shape_dims);
  });
}

OgaResult* OGA_API_CALL OgaTensorGetData(OgaTensor* tensor, void** out) {
  return Guard("OgaTensorGetData", [&] {
    NotNull(tensor, "tensor");
    NotNull(out, "out");
    *out = tensor->t->data;
  });
}

// ---- Named tensors

OgaResult* OGA_API_CALL OgaCreateNamedTensors(OgaNamedTensors** out) {
  return Guard("OgaCreateNamedTensors", [&] {
    oga::Out(out, "out");
    *out = new OgaNamedTensors;
  });
}

void OGA_API_CALL OgaDestroyNamedTensors(OgaNamedTensors* named_tensors) { delete named_tensors; }

OgaResult* OGA_API_CALL OgaNamedTensorsGet(OgaNamedTensors* named_tensors, const char* name,
                                           OgaTensor** out) {
  return Guard("OgaNamedTensorsGet", [&] {
    NotNull(named_tensors, "named_tensors");
    NotNull(name, "name");
    oga::Out(out, "out");
    auto it = named_tensors->items.find(name);
    if (it != named_tensors->items.end()) *out = new OgaTensor{it->second};
    // genai: a missing name gives *out == nullptr and no error.
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsSet(OgaNamedTensors* named_tensors, const char* name,
                                           OgaTensor* tensor) {
  return Guard("OgaNamedTensorsSet", [&] {
    NotNull(named_tensors, "named_tensors");
    NotNull(name, "name");
    NotNull(tensor, "tensor");
    named_tensors->items[name] = tensor->t;  // shared: the caller may destroy its handle
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsDelete(OgaNamedTensors* named_tensors, const char* name) {
  return Guard("OgaNamedTensorsDelete", [&] {
    NotNull(named_tensors, "named_tensors");
    NotNull(name, "name");
    named_tensors->items.erase(name);
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsCount(const OgaNamedTensors* named_tensors, size_t* out) {
  return Guard("OgaNamedTensorsCount", [&] {
    NotNull(named_tensors, "named_tensors");
    NotNull(out, "out");
    *out = named_tensors->items.size();
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsGetNames(const OgaNamedTensors* named_tensors,
                                                OgaStringArray** out) {
  return Guard("OgaNamedTensorsGetNames", [&] {
    NotNull(named_tensors, "named_tensors");
    oga::Out(out, "out");
    auto a = std::make_unique<OgaStringArray>();
    for (const auto& [name, t] : named_tensors->items) a->items.push_back(name);
    *out = a.release();
  });
}
