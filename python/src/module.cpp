// _ebb: the pybind11 extension behind the Python package `ebb` (python/ebb/__init__.py).
// A surface: it uses only the public C++ API (include/ebb/).
//
// The GIL is released while ebb works (load, generate, shrink, unload, generator steps), so
// Python threads generate concurrently. Ctrl-C: generate() checks for signals from its text
// callback (GIL re-acquired), cancels the request's CancelToken, and raises KeyboardInterrupt
// after ebb::Generate has returned (the request's KV is freed by then). stream() pulls an
// ebb::Generation on the caller's thread (no helper thread), the GIL released for each step,
// checking for signals between pieces.
//
// Threads (docs/python.md "Threads"): every object may be shared by Python threads.
//  - Thread-safe in C++, called directly: Runtime, Model (generate, chat, stream, embed),
//    ModelControls, Tokenizer (include/ebb/runtime.h, model.h, model_controls.h, tokenizer.h,
//    embedding.h, generation.h). _Runtime's own state (next_id, loading) is guarded by the GIL.
//  - One thread at a time in C++, serialised here: Generator (ebb::Generator, generator.h) and
//    _Stream (ebb::Generation, generation.h) hold a per-object std::mutex across each call into
//    the C++ object, so concurrent calls from threads run one after another, never at once (two
//    ORT Runs on one KV cache corrupt it).
//  - Lock order, the one rule that keeps this deadlock-free: an object's mutex is taken only
//    with the GIL released (py::gil_scoped_release first, then the lock), and the GIL is never
//    taken while it is held (results are copied into C++ values under the mutex and turned into
//    Python objects after it is released). So a thread waiting for the mutex lets other Python
//    threads run, and the holder never waits for the GIL: no cycle.
//  - NumPy is imported, and pybind11's NumPy API (a C++ function-local static) initialised, in
//    PYBIND11_MODULE. Done lazily by the first get_logits(), the import ran inside the static's
//    guard and let other threads take the GIL; a second thread's first get_logits() then waited
//    on the guard holding the GIL: a deadlock.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ebb/chat_template.h"
#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/json.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/service.h"
#include "ebb/stats.h"
#include "ebb/tokenizer.h"
#include "ebb/version.h"

namespace py = pybind11;

namespace {

// ---- Exceptions -----------------------------------------------------------------------------

PyObject* g_error = nullptr;
PyObject* g_errors[8] = {};

PyObject* ErrorClass(ebb::ErrorCode code) {
  const int i = static_cast<int>(code);
  return (i >= 0 && i < 8 && g_errors[i] != nullptr) ? g_errors[i] : g_error;
}

void RegisterExceptions(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc("ebb.Error", "Base class of ebb's errors.",
                                      PyExc_RuntimeError, nullptr);
  m.add_object("Error", py::handle(g_error));
  const std::pair<ebb::ErrorCode, const char*> codes[] = {
      {ebb::ErrorCode::InvalidArgument, "InvalidArgument"},
      {ebb::ErrorCode::NotFound, "NotFound"},
      {ebb::ErrorCode::ResourceExhausted, "ResourceExhausted"},
      {ebb::ErrorCode::FailedPrecondition, "FailedPrecondition"},
      {ebb::ErrorCode::Cancelled, "Cancelled"},
      {ebb::ErrorCode::DeadlineExceeded, "DeadlineExceeded"},
      {ebb::ErrorCode::Unavailable, "Unavailable"},
      {ebb::ErrorCode::Internal, "Internal"},
  };
  for (const auto& [code, name] : codes) {
    const std::string full = std::string("ebb.") + name;
    py::dict attrs;
    attrs["code"] = std::string(ebb::ErrorCodeName(code));
    PyObject* cls = PyErr_NewException(full.c_str(), g_error, attrs.ptr());
    g_errors[static_cast<int>(code)] = cls;
    m.add_object(name, py::handle(cls));
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ebb::Error& e) {
      PyErr_SetString(ErrorClass(e.code()), e.what());
    }
  });
}

// ---- Argument types -------------------------------------------------------------------------
// A wrong type is a TypeError naming the argument and the type it takes, never pybind11's
// "Unable to cast Python instance of type ... to C++ type 'std::__cxx11::basic_string...'".

[[noreturn]] void ThrowArgType(const std::string& what, const char* expected, const py::handle& v) {
  std::string got = Py_TYPE(v.ptr())->tp_name;
  if (v.is_none()) got = "None";
  throw py::type_error(what + " must be " + expected + ", not " + got);
}

// `v` as T, or TypeError naming `what` and `expected`.
template <typename T>
T Arg(const py::handle& v, const std::string& what, const char* expected) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!py::isinstance<py::str>(v)) ThrowArgType(what, expected, v);  // not bytes either
  }
  try {
    return v.cast<T>();
  } catch (const py::cast_error&) {
    ThrowArgType(what, expected, v);
  }
}

py::dict DictArg(const py::handle& v, const std::string& what) {
  if (!py::isinstance<py::dict>(v)) ThrowArgType(what, "a dict", v);
  return py::reinterpret_borrow<py::dict>(v);
}

// A str, or an os.PathLike as os.fspath gives it; TypeError for anything else (None included).
std::string PathArg(const py::handle& v, const std::string& what, const char* expected) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (!v.is_none() && PyObject_HasAttrString(v.ptr(), "__fspath__") == 1) {
    return Arg<std::string>(py::module_::import("os").attr("fspath")(v), what, expected);
  }
  ThrowArgType(what, expected, v);
}

// A key of the dict argument `what` (option names are str).
std::string KeyArg(const py::handle& k, const std::string& what) {
  return Arg<std::string>(k, "the keys of " + what, "str");
}

// ---- Options --------------------------------------------------------------------------------

// Python value -> option string: True/False -> "true"/"false", numbers and str as written.
// `what` names the argument in the TypeError of any other type.
std::string OptionValue(const py::handle& v, const std::string& what = "an option value") {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) {
    return py::str(v).cast<std::string>();
  }
  ThrowArgType(what, "a str, int, float or bool", v);
}

// Each key/value of the dict argument `what` ("options", "session_options", ...).
template <typename F>
void ForEachOption(const py::handle& d, const std::string& what, F&& f) {
  for (const auto& [k, v] : DictArg(d, what)) {
    const std::string key = KeyArg(k, what);
    f(key, OptionValue(v, what + "['" + key + "']"));
  }
}

// A request option's value: OptionValue, plus logit_bias as a dict {token id: bias}, passed on
// as the JSON object the option takes, so that GeneratorParams::Set checks ids and biases (one
// check for every surface). `what` names the argument in an error.
std::string RequestOptionValue(const std::string& key, const py::handle& v,
                               const std::string& what) {
  if (key != "logit_bias" || !py::isinstance<py::dict>(v)) return OptionValue(v, what);
  try {
    return py::module_::import("json")
        .attr("dumps")(v, py::arg("allow_nan") = false)
        .cast<std::string>();
  } catch (const py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError)) throw;
    throw ebb::Error(ebb::ErrorCode::InvalidArgument,
                     what + ": " + py::repr(v).cast<std::string>() +
                         " is not a dict of token id (int) -> bias (a number from -100 to 100)");
  }
}

// One of the library's JSON values (the text of ebb/json.h, parsed here: this surface uses only
// the public API) as Python objects (dict, list, str, int, float, bool, None). Object keys keep
// the value's order.
using Json = nlohmann::ordered_json;
py::object FromJsonValue(const Json& j) {
  using V = Json::value_t;
  switch (j.type()) {
    case V::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = FromJsonValue(v);
      return d;
    }
    case V::array: {
      py::list l;
      for (const auto& v : j) l.append(FromJsonValue(v));
      return l;
    }
    case V::string:
      // Invalid UTF-8 (a path) is replaced, as the text forms do.
      return py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
          j.get_ref<const std::string&>().data(),
          static_cast<py::ssize_t>(j.get_ref<const std::string&>().size()), "replace"));
    case V::boolean:
      return py::bool_(j.get<bool>());
    case V::number_integer:
      return py::int_(j.get<int64_t>());
    case V::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case V::number_float:
      return py::float_(j.get<double>());
    default:
      return py::none();
  }
}

// The text ebb::ToJson/ebb::InfoJson returned, as Python objects.
py::object FromJson(const std::string& text) { return FromJsonValue(Json::parse(text)); }

// Builds a request from Python inputs and keyword options.
ebb::GenerateRequest MakeRequest(const py::dict& kwargs) {
  ebb::GenerateRequest req;
  for (const auto& [k, v] : kwargs) {
    const std::string key = KeyArg(k, "the request options");
    if (v.is_none()) continue;
    // Every key goes through GenerateRequest::Set (the option table's names and checks, as on
    // the CLI and over HTTP); Python types are converted to the text it takes first.
    if (key == "max_new_tokens") {
      req.Set(key, std::to_string(Arg<int64_t>(v, "max_new_tokens", "an int")));
    } else if (key == "stop") {
      req.stop.clear();
      if (py::isinstance<py::str>(v)) {
        req.Set(key, v.cast<std::string>());
      } else {
        for (const std::string& s :
             Arg<std::vector<std::string>>(v, "stop", "a str or a list of str")) {
          req.Set(key, s);
        }
      }
    } else if (key == "add_generation_prompt") {
      if (!py::isinstance<py::bool_>(v)) ThrowArgType(key, "a bool", v);
      req.Set(key, v.cast<bool>() ? "true" : "false");
    } else if (key == "options") {
      for (const auto& [ok, ov] : DictArg(v, "options")) {
        const std::string okey = KeyArg(ok, "options");
        req.Set(okey, RequestOptionValue(okey, ov, "options['" + okey + "']"));
      }
    } else {
      req.Set(key, RequestOptionValue(key, v, key));
    }
  }
  return req;
}

// One token's log-probabilities, as the library's value names them (TokenLogprobsJson).
py::dict LogprobsDict(const ebb::Tokenizer* tok, const ebb::TokenLogprobs& lp) {
  return FromJson(ebb::ToJson(lp, tok)).cast<py::dict>();
}

// A token-id list: ints (or objects with __index__, such as NumPy integers), not floats or
// bools, which would silently run another token. `what` names the argument.
std::vector<int32_t> TokenIds(const py::handle& input, const std::string& what) {
  if (py::isinstance<py::str>(input) || !py::isinstance<py::sequence>(input)) {
    ThrowArgType(what, "a list of int token ids", input);
  }
  std::vector<int32_t> ids;
  size_t i = 0;
  for (const auto& item : py::reinterpret_borrow<py::sequence>(input)) {
    const std::string at = what + "[" + std::to_string(i++) + "]";
    if (py::isinstance<py::bool_>(item) || PyIndex_Check(item.ptr()) == 0) {
      ThrowArgType(at, "an int token id", item);
    }
    const int64_t id = py::reinterpret_steal<py::int_>(PyNumber_Index(item.ptr())).cast<int64_t>();
    if (id < INT32_MIN || id > INT32_MAX) {
      throw ebb::Error(ebb::ErrorCode::InvalidArgument,
                       at + ": " + std::to_string(id) + " is not a token id (int32)");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

void SetInput(ebb::GenerateRequest& req, const py::object& input) {
  if (py::isinstance<py::str>(input)) {
    req.prompt = input.cast<std::string>();
  } else {
    if (input.is_none()) ThrowArgType("prompt", "a str or a list of int token ids", input);
    req.input_ids = {TokenIds(input, "prompt")};
  }
}

std::vector<ebb::ChatMessage> Messages(const py::handle& messages) {
  if (py::isinstance<py::str>(messages) || !py::isinstance<py::sequence>(messages)) {
    ThrowArgType("messages", "a list of {'role': str, 'content': str} dicts", messages);
  }
  std::vector<ebb::ChatMessage> out;
  size_t i = 0;
  for (const auto& item : py::reinterpret_borrow<py::sequence>(messages)) {
    const std::string at = "messages[" + std::to_string(i++) + "]";
    if (!py::isinstance<py::dict>(item)) ThrowArgType(at, "a dict with 'role' and 'content'", item);
    const py::dict d = py::reinterpret_borrow<py::dict>(item);
    if (!d.contains("role") || !d.contains("content")) {
      throw ebb::Error(ebb::ErrorCode::InvalidArgument, at + " needs 'role' and 'content', got " +
                                                            py::repr(item).cast<std::string>());
    }
    out.push_back({Arg<std::string>(d["role"], at + "['role']", "a str"),
                   Arg<std::string>(d["content"], at + "['content']", "a str")});
  }
  return out;
}

// Row 0 of the library's one value of the result (ebb::ToJson(GenerateResult)), with the
// error as the exception object the in-process call would raise.
py::dict ResultDict(const ebb::GenerateResult& r, const ebb::Tokenizer* tok, bool logprobs) {
  // A result without rows (none were run) reads as one empty row, as it always has.
  const ebb::GenerateResult* src = &r;
  ebb::GenerateResult padded;
  if (r.rows.empty()) {
    padded = r;
    padded.rows.emplace_back();
    src = &padded;
  }
  const Json v = Json::parse(ebb::ToJson(*src, tok, logprobs));
  const Json& row = v["rows"][0];
  py::dict d;
  for (const char* k : {"text", "logprobs", "ids", "prompt_ids", "finish_reason"}) {
    d[k] = FromJsonValue(row[k]);
  }
  d["usage"] = FromJsonValue(v["usage"]);
  d["max_length"] = FromJsonValue(v["max_length"]);
  if (r.error) {
    d["error"] = py::reinterpret_borrow<py::object>(ErrorClass(r.error->code()))(r.error->what());
  } else {
    d["error"] = py::none();
  }
  return d;
}

// Runs Generate on this thread with the GIL released. KeyboardInterrupt (or any pending signal
// exception) seen from the text callback cancels the request and is raised once Generate has
// returned, with the generator and its KV gone.
py::dict RunGenerate(const std::shared_ptr<ebb::Model>& model, ebb::GenerateRequest req,
                     const py::object& on_text) {
  std::optional<py::error_already_set> pending;
  ebb::CancelToken cancel = req.cancel;
  auto callback = [&](size_t row, std::string_view piece) {
    if (row != 0 || pending) return;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      pending.emplace();  // fetches the exception (KeyboardInterrupt)
      cancel.Cancel();
      return;
    }
    if (!on_text.is_none()) {
      try {
        on_text(py::str(piece.data(), piece.size()));
      } catch (py::error_already_set& e) {
        pending.emplace(std::move(e));
        cancel.Cancel();
      }
    }
  };
  ebb::GenerateResult result;
  {
    py::gil_scoped_release release;
    result = ebb::Generate(model, req, callback);
  }
  if (pending) throw *pending;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  return ResultDict(result, model->tokenizer(), req.params.logprobs || req.params.top_logprobs > 0);
}

// ---- Streaming ------------------------------------------------------------------------------

// A Generation (ebb/generation.h) pulled by the Python iterator: no thread. Each next() runs
// decode steps with the GIL released until row 0 has text, so other Python threads run
// meanwhile; signals (Ctrl-C) are checked between steps' pieces with the GIL held. The request
// is started at construction (errors before the first token raise there, from stream()).
class Stream {
 public:
  Stream(std::shared_ptr<ebb::Model> model, ebb::GenerateRequest req)
      : model_(std::move(model)), logprobs_(req.params.logprobs || req.params.top_logprobs > 0) {
    py::gil_scoped_release release;
    generation_.emplace(ebb::Generation::Start(model_, std::move(req)));
  }
  ~Stream() {
    // Frees the KV of an unfinished generation; the GIL may be held (a dropped iterator).
    std::lock_guard<std::mutex> lock(mu_);
    generation_.reset();
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The next piece; StopIteration at the end (then result() holds the result). A pending
  // signal (KeyboardInterrupt) ends the request, KV freed, and raises.
  std::string Next() {
    while (true) {
      std::optional<ebb::GenerationPiece> piece;
      {
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(mu_);  // another thread may be in close()
        if (generation_) {
          piece = generation_->Next();
          if (!piece) {
            result_ = generation_->Finish();
            generation_.reset();
          }
        }
      }
      if (PyErr_CheckSignals() != 0) {
        py::error_already_set interrupt;
        Close();
        throw interrupt;
      }
      if (!piece) throw py::stop_iteration();
      if (piece->row == 0 && !piece->text.empty()) return std::move(piece->text);
    }
  }

  // Ends the request if it is running (its KV is freed before this returns); the result then
  // says "cancelled". Safe to call twice and from another thread than next()'s.
  void Close() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    if (!generation_) return;
    result_ = generation_->Finish();
    generation_.reset();
  }

  py::object Result() {
    std::optional<ebb::GenerateResult> result;
    {
      py::gil_scoped_release release;  // the lock order: GIL released, then mu_
      std::lock_guard<std::mutex> lock(mu_);
      result = result_;
    }
    if (!result) return py::none();
    return ResultDict(*result, model_->tokenizer(), logprobs_);
  }

 private:
  std::shared_ptr<ebb::Model> model_;
  bool logprobs_;  // the request asked for logprobs
  // Held for one Next() step, a Close() or a Result() copy; taken with the GIL released, never
  // held while waiting for the GIL. (~Stream takes it with the GIL held: no call is running then.)
  std::mutex mu_;
  std::optional<ebb::Generation> generation_;  // guarded by mu_; empty once finished
  std::optional<ebb::GenerateResult> result_;  // guarded by mu_
};

// ---- Wrappers -------------------------------------------------------------------------------

struct PyRuntime {
  std::shared_ptr<ebb::Runtime> rt;
  // Guarded by the GIL (read and written only with it held).
  int next_id = 0;
  // Ids of loads running now (the GIL released): AutoId skips them, so two threads loading the
  // same folder at once get two ids rather than the second failing on the first's id.
  std::set<std::string> loading;
};

struct PyModel {
  std::shared_ptr<ebb::Runtime> rt;  // keeps the runtime alive while a model handle lives
  std::shared_ptr<ebb::Model> model;

  bool Loaded() const { return rt->Contains(model->id()) && rt->Get(model->id()) == model; }
  void Unload(bool force) {
    py::gil_scoped_release release;
    rt->Unload(model->id(), force);
  }
};

struct PyHandle {
  std::shared_ptr<ebb::Model> model;
  ebb::ModelControls& h() { return model->runtime(); }
};

struct PyTokenizer {
  std::shared_ptr<ebb::Model> model;  // owns the tokenizer
  const ebb::Tokenizer* tok;
};

// ebb::Generator is used by one thread at a time (generator.h); Python threads may share this
// object, so every method goes through Call: calls are serialised on `mu`, never raced.
struct PyGenerator {
  std::shared_ptr<ebb::Model> model;
  std::mutex mu;
  std::unique_ptr<ebb::Generator> gen;  // guarded by mu; null once closed

  // f(generator) with the GIL released and `mu` held (the lock order: GIL released first). f
  // must not touch Python objects: it returns C++ values, converted after `mu` is released.
  template <typename F>
  auto Call(F&& f) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu);
    if (!gen) throw ebb::Error(ebb::ErrorCode::FailedPrecondition, "the generator was closed");
    return f(*gen);
  }
};

// The token ids of a prefix to pin: a str (encoded as generate() encodes a prompt, with BOS),
// a list of int token ids, or a list of chat messages (rendered with the model's chat template
// without the generation prompt, as chat() with more messages after them starts).
std::vector<int32_t> PrefixIds(const ebb::Model& model, const py::object& prefix) {
  ebb::GenerateRequest req;
  if (py::isinstance<py::str>(prefix)) {
    req.prompt = prefix.cast<std::string>();
  } else if (py::isinstance<py::sequence>(prefix) && !py::isinstance<py::bytes>(prefix) &&
             !py::isinstance<py::dict>(prefix)) {
    const auto seq = py::reinterpret_borrow<py::sequence>(prefix);
    if (seq.size() > 0 && py::isinstance<py::dict>(seq[0])) {
      req.messages = Messages(prefix);
      req.add_generation_prompt = false;
    } else {
      return TokenIds(prefix, "prefix");
    }
  } else {
    ThrowArgType("prefix", "a str, a list of int token ids or a list of chat messages", prefix);
  }
  py::gil_scoped_release release;
  return ebb::EncodeInput(model, req).at(0);
}

// ebb::InfoJson is the one form of a model's info (C ABI, service, Python): converting it here
// keeps the fields from drifting apart, as a hand-copied list did.
py::dict InfoDict(const ebb::Model& m) { return FromJson(ebb::InfoJson(m)).cast<py::dict>(); }

std::string AutoId(PyRuntime& r, const std::string& path) {
  std::string base = std::filesystem::path(path).lexically_normal().filename().string();
  if (base.empty()) base = std::filesystem::path(path).lexically_normal().parent_path().filename();
  std::string clean;
  for (char c : base) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == ':';
    clean += ok ? c : '_';
  }
  if (clean.empty() || clean.size() > 100) clean = "model";
  std::string id = clean;
  while (r.rt->Contains(id) || r.loading.contains(id)) {
    id = clean + "-" + std::to_string(++r.next_id);
  }
  return id;
}

// Imports NumPy and initialises pybind11's NumPy API now, with the GIL held and no other thread
// in this module yet. Lazily, the first get_logits() did both inside a C++ static's guard while
// the import let other threads take the GIL: a second thread's first get_logits() then waited
// on the guard with the GIL held, a deadlock (issue 39). Without NumPy, `import ebb` fails here
// with an ImportError that says so.
void InitNumpy() {
  try {
    py::module_::import("numpy");
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    // A std::exception: PYBIND11_MODULE raises its text as the ImportError (an
    // error_already_set would read "initialization failed", the reason only in __cause__).
    throw std::runtime_error(
        "ebb needs NumPy (Generator.get_logits returns a NumPy array); install it (python3 -m "
        "pip install numpy, or apt install python3-numpy). Importing it said: " +
        std::string(e.what()));
  }
  (void)py::dtype::of<float>();  // pybind11's npy_api::get(): its static is initialised here
  (void)py::array_t<float>(1);   // and the array type get_logits returns is created once
}

}  // namespace

PYBIND11_MODULE(_ebb, m) {
  m.doc() = "ebb: a local LLM runtime with bounded, controllable, visible memory (C++ core).";
  InitNumpy();
  RegisterExceptions(m);
  m.def("version", &ebb::Version, "ebb's version.");
  // The running `ebb service` (ebb/service.h): ebb.connect() finds it with the library's rule
  // (pid and start time), as `ebb ps` does.
  m.def("service_state_directory", [] { return ebb::ServiceStateDirectory().string(); });
  m.def(
      "find_running_service",
      [](const std::optional<std::string>& dir) -> py::object {
        const auto s =
            ebb::FindRunningService(dir ? std::filesystem::path(*dir) : std::filesystem::path());
        if (!s) return py::none();
        py::dict d;
        d["pid"] = s->pid;
        d["url"] = s->url;
        d["log"] = s->log;
        d["started_unix_ms"] = s->started_unix_ms;
        d["api_key"] = s->api_key;
        d["state_file"] = s->state_file.string();
        return d;
      },
      py::arg("dir") = py::none());
  m.def("ort_version", &ebb::OrtVersion, "The ONNX Runtime version loaded.");
  m.def("available_providers", &ebb::AvailableProviders,
        "Execution providers of the loaded ONNX Runtime.");
  m.def(
      "parse_byte_size", [](const std::string& s) { return ebb::ParseByteSize(s, "size"); },
      "Parses '2GiB', '512MiB' or plain bytes.");
  m.def(
      "option_table",
      [] {
        py::list out;
        for (const ebb::OptionSpec& s : ebb::OptionTable()) {
          py::dict d;
          d["key"] = std::string(s.key);
          d["type"] = std::string(ebb::OptionTypeName(s.type));
          d["unit"] = std::string(s.unit);
          d["default"] = std::string(s.default_value);
          d["values"] = std::string(s.values);
          d["aliases"] = std::string(s.aliases);  // "ORT_SEQUENTIAL=sequential|..."
          d["doc"] = std::string(s.doc);
          out.append(d);
        }
        return out;
      },
      "The option table (docs/options.md) as a list of dicts.");

  py::class_<PyRuntime>(m, "_Runtime")
      .def(py::init([](const py::object& memory_limit, const py::object& arena,
                       const py::object& options) {
             ebb::RuntimeOptions o;
             if (!memory_limit.is_none()) {
               o.Set("memory.limit", OptionValue(memory_limit, "memory_limit"));
             }
             if (!arena.is_none()) {
               ForEachOption(arena, "arena", [&](std::string key, const std::string& v) {
                 if (key != "arena_extend_strategy" && !key.starts_with("arena.")) {
                   key = "arena." + key;
                 }
                 o.Set(key, v);
               });
             }
             if (!options.is_none()) {
               ForEachOption(options, "options",
                             [&](const std::string& k, const std::string& v) { o.Set(k, v); });
             }
             auto r = std::make_unique<PyRuntime>();
             r->rt = std::make_shared<ebb::Runtime>(o);
             return r;
           }),
           py::arg("memory_limit") = py::none(), py::arg("arena") = py::none(),
           py::arg("options") = py::none())
      .def(
          "load",
          [](PyRuntime& r, const py::object& path_arg, const py::object& id,
             const py::object& session_options, const py::object& provider_options,
             const py::object& run_options, const py::object& options,
             const py::object& chat_template) {
            // A folder is a str or an os.PathLike; None (or anything else) is not a path to
            // look for genai_config.json under.
            const std::string path =
                PathArg(path_arg, "path", "a str or os.PathLike (a model folder)");
            ebb::ModelOptions o;
            if (!session_options.is_none()) {
              ForEachOption(session_options, "session_options",
                            [&](const std::string& k, const std::string& v) {
                              o.Set("session_options." + k, v);
                            });
            }
            if (!provider_options.is_none()) {
              for (const auto& [ep, kv] : DictArg(provider_options, "provider_options")) {
                const std::string name = KeyArg(ep, "provider_options");
                ForEachOption(kv, "provider_options['" + name + "']",
                              [&](const std::string& k, const std::string& v) {
                                o.Set("provider_options." + name + "." + k, v);
                              });
              }
            }
            if (!run_options.is_none()) {
              ForEachOption(run_options, "run_options",
                            [&](const std::string& k, const std::string& v) {
                              o.Set("run_options." + k, v);
                            });
            }
            if (!options.is_none()) {
              ForEachOption(options, "options",
                            [&](const std::string& k, const std::string& v) { o.Set(k, v); });
            }
            if (!chat_template.is_none()) {
              o.Set("chat_template",
                    PathArg(chat_template, "chat_template",
                            "a str or os.PathLike (a Jinja file, or the template text)"));
            }
            const std::string model_id =
                id.is_none() ? AutoId(r, path) : Arg<std::string>(id, "id", "a str or None");
            auto pm = std::make_unique<PyModel>();
            pm->rt = r.rt;
            // Reserved while the load runs; erased with the GIL held again (declared before
            // the release, so destroyed after it), on an exception too.
            struct Reservation {
              PyRuntime& r;
              std::string id;
              bool mine;
              ~Reservation() {
                if (mine) r.loading.erase(id);
              }
            } reservation{r, model_id, r.loading.insert(model_id).second};
            {
              py::gil_scoped_release release;
              pm->model = r.rt->Load(model_id, path, o);
            }
            return pm;
          },
          py::arg("path"), py::arg("id") = py::none(), py::arg("session_options") = py::none(),
          py::arg("provider_options") = py::none(), py::arg("run_options") = py::none(),
          py::arg("options") = py::none(), py::arg("chat_template") = py::none())
      .def("get",
           [](PyRuntime& r, const std::string& id) {
             auto pm = std::make_unique<PyModel>();
             pm->rt = r.rt;
             pm->model = r.rt->Get(id);
             return pm;
           })
      .def(
          "unload",
          [](PyRuntime& r, const std::string& id, bool force) {
            py::gil_scoped_release release;
            r.rt->Unload(id, force);
          },
          py::arg("id"), py::arg("force") = false)
      .def("stats", [](PyRuntime& r) { return FromJson(ebb::ToJson(r.rt->Stats())); })
      .def("models", [](PyRuntime& r) { return FromJson(ebb::ToJson(r.rt->List())); })
      .def_property(
          "memory_limit", [](PyRuntime& r) { return r.rt->memory_limit(); },
          [](PyRuntime& r, const py::object& v) {
            ebb::RuntimeOptions o;
            o.Set("memory.limit", OptionValue(v, "memory_limit"));
            r.rt->SetMemoryLimit(o.memory_limit_bytes);
          });

  py::class_<PyHandle>(m, "ModelControls", "Tier 2 controls of one model (no reload).")
      .def(
          "shrink_arena",
          [](PyHandle& h) {
            py::gil_scoped_release release;
            h.h().ShrinkArena();
          },
          "Shrink now (ORT arena, KV pool, heap).")
      .def(
          "release_weights",
          [](PyHandle& h) {
            ebb::WeightsRelease r;
            {
              py::gil_scoped_release release;
              r = h.h().ReleaseWeights();
            }
            return FromJson(ebb::ToJson(r));
          },
          "Hand back the resident pages of file-backed weights (a dict: released, reason, "
          "resident_before_bytes, resident_after_bytes).")
      .def(
          "pin_prefix",
          [](PyHandle& h, const py::object& prefix) {
            const std::vector<int32_t> ids = PrefixIds(*h.model, prefix);
            ebb::PrefixPin pin;
            {
              py::gil_scoped_release release;
              pin = h.h().PinPrefix(ids);
            }
            return FromJson(ebb::ToJson(pin));
          },
          py::arg("prefix"),
          "Keep a prefix in the model's prefix cache until unpin_prefix (prefilled now where "
          "not cached; whole blocks of 16 tokens). prefix: a str (encoded as generate() encodes "
          "a prompt), a list of int token ids, or chat messages (rendered without the "
          "generation prompt). A dict: tokens, pinned_tokens, pinned_bytes, pinned. "
          "FailedPrecondition when prefix_cache.max_bytes is 0.")
      .def(
          "unpin_prefix",
          [](PyHandle& h, const py::object& prefix) {
            const std::vector<int32_t> ids = PrefixIds(*h.model, prefix);
            return FromJson(ebb::ToJson(h.h().UnpinPrefix(ids)));
          },
          py::arg("prefix"),
          "Unpin a prefix given as to pin_prefix; the dict's 'pinned' is True when it was "
          "pinned (and now is not), False when it was not.")
      .def(
          "drop_prefix_cache",
          [](PyHandle& h) {
            py::gil_scoped_release release;
            return h.h().DropPrefixCache();
          },
          "Drop every unpinned block of the prefix cache now; returns the bytes freed.")
      .def(
          "shrink_after_next_run", [](PyHandle& h) { h.h().ShrinkAfterNextRun(); },
          "Shrink once, at the end of the next request.")
      .def(
          "shrink_every", [](PyHandle& h, uint32_t n) { h.h().ShrinkEvery(n); }, py::arg("n"),
          "Shrink after every n-th request; 0 turns it off.")
      .def(
          "shrink_above",
          [](PyHandle& h, const py::object& bytes) {
            h.h().ShrinkAbove(
                py::isinstance<py::str>(bytes)
                    ? ebb::ParseByteSize(bytes.cast<std::string>(), "shrink_above")
                    : Arg<uint64_t>(bytes, "rss_bytes", "an int of bytes or a size str ('2GiB')"));
          },
          py::arg("rss_bytes"), "Shrink after a request that ends with RSS above this; 0: off.")
      .def(
          "set_option",
          [](PyHandle& h, const std::string& k, const py::object& v) {
            h.h().SetRunOption(k, OptionValue(v, "value"));
          },
          py::arg("key"), py::arg("value"), "Set an ORT run option for every later Run().")
      .def(
          "clear_option", [](PyHandle& h, const std::string& k) { h.h().ClearRunOption(k); },
          py::arg("key"))
      .def(
          "options", [](PyHandle& h) { return h.h().Options(); }, "The run options in force.")
      .def(
          "stats", [](PyHandle& h) { return FromJson(ebb::ToJson(h.h().Stats())); },
          "This model's memory statistics (same fields as the JSON stats).");

  py::class_<PyTokenizer>(m, "Tokenizer")
      .def(
          "encode",
          [](PyTokenizer& t, const std::string& text, bool add_special_tokens) {
            return t.tok->Encode(text, add_special_tokens);
          },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](PyTokenizer& t, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            return t.tok->Decode(ids, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def_property_readonly("vocab_size", [](PyTokenizer& t) { return t.tok->vocab_size(); })
      .def_property_readonly("eos_id", [](PyTokenizer& t) { return t.tok->eos_id(); })
      .def_property_readonly("bos_id", [](PyTokenizer& t) { return t.tok->bos_id(); });

  // Every method runs the C++ generator through PyGenerator::Call: serialised per generator.
  py::class_<PyGenerator>(m, "Generator",
                          "Token-level generation with its own KV cache. Threads may share it: "
                          "its calls are serialised (one at a time).")
      .def(
          "append_tokens",
          [](PyGenerator& g, const std::vector<int32_t>& ids) {
            g.Call([&](ebb::Generator& gen) { gen.AppendTokens(std::span<const int32_t>(ids)); });
          },
          py::arg("ids"))
      .def("generate_next_token",
           [](PyGenerator& g) { g.Call([](ebb::Generator& gen) { gen.GenerateNextToken(); }); })
      .def("is_done",
           [](PyGenerator& g) { return g.Call([](ebb::Generator& gen) { return gen.done(); }); })
      .def_property_readonly("sequence",
                             [](PyGenerator& g) {
                               return g.Call([](ebb::Generator& gen) {
                                 std::span<const int32_t> s = gen.sequence(0);
                                 return std::vector<int32_t>(s.begin(), s.end());
                               });
                             })
      .def("get_sequence",
           [](PyGenerator& g) {
             return g.Call([](ebb::Generator& gen) {
               std::span<const int32_t> s = gen.sequence(0);
               return std::vector<int32_t>(s.begin(), s.end());
             });
           })
      .def("get_next_tokens",
           [](PyGenerator& g) {
             return g.Call([](ebb::Generator& gen) { return gen.GetNextTokens(); });
           })
      .def("get_next_logprobs",
           [](PyGenerator& g) {
             const std::vector<ebb::TokenLogprobs> lps =
                 g.Call([](ebb::Generator& gen) { return gen.GetNextLogprobs(); });
             py::list rows;
             for (const ebb::TokenLogprobs& lp : lps) {
               rows.append(LogprobsDict(g.model->tokenizer(), lp));
             }
             return rows;
           })
      .def(
          "get_logits",
          [](PyGenerator& g) {
            // Copied under the lock; the array then owns the copy (no second copy).
            auto logits = std::make_unique<std::vector<float>>(g.Call([](ebb::Generator& gen) {
              std::span<const float> s = gen.GetLogits();
              return std::vector<float>(s.begin(), s.end());
            }));
            const auto n = static_cast<py::ssize_t>(logits->size());
            const float* data = logits->data();
            py::capsule owner(logits.get(),
                              [](void* p) { delete static_cast<std::vector<float>*>(p); });
            logits.release();  // owned by the capsule now
            return py::array_t<float>(n, data, owner);
          },
          "Logits of the last position (a NumPy float32 copy, [batch * vocab]).")
      .def(
          "rewind",
          [](PyGenerator& g, size_t n) { g.Call([n](ebb::Generator& gen) { gen.RewindTo(n); }); },
          py::arg("length"))
      .def_property_readonly("max_length",
                             [](PyGenerator& g) {
                               return g.Call([](ebb::Generator& gen) { return gen.max_length(); });
                             })
      .def("stats",
           [](PyGenerator& g) {
             const ebb::GeneratorStats s = g.Call([](ebb::Generator& gen) { return gen.Stats(); });
             return FromJson(ebb::ToJson(s));
           })
      .def(
          "close",
          [](PyGenerator& g) {
            py::gil_scoped_release release;  // the lock order: GIL released, then mu
            std::lock_guard<std::mutex> lock(g.mu);
            g.gen.reset();  // after a call running on another thread has returned
          },
          "Frees the generator's KV cache now (after a call running on another thread).");

  py::class_<Stream>(m, "_Stream")
      .def("next", &Stream::Next)
      .def("close", &Stream::Close)
      .def("result", &Stream::Result);

  py::class_<PyModel>(m, "_Model")
      .def_property_readonly("id", [](PyModel& pm) { return pm.model->id(); })
      .def_property_readonly("info", [](PyModel& pm) { return InfoDict(*pm.model); })
      .def_property_readonly("loaded", &PyModel::Loaded)
      .def_property_readonly("runtime", [](PyModel& pm) { return PyHandle{pm.model}; })
      .def_property_readonly("tokenizer",
                             [](PyModel& pm) -> py::object {
                               const ebb::Tokenizer* t = pm.model->tokenizer();
                               if (t == nullptr) return py::none();
                               return py::cast(PyTokenizer{pm.model, t});
                             })
      .def("unload", &PyModel::Unload, py::arg("force") = false)
      .def("_generate",
           [](PyModel& pm, const py::object& input, const py::object& on_text,
              const py::kwargs& kwargs) {
             ebb::GenerateRequest req = MakeRequest(kwargs);
             SetInput(req, input);
             return RunGenerate(pm.model, std::move(req), on_text);
           })
      .def("_chat",
           [](PyModel& pm, const py::object& messages, const py::object& on_text,
              const py::kwargs& kwargs) {
             ebb::GenerateRequest req = MakeRequest(kwargs);
             req.messages = Messages(messages);
             return RunGenerate(pm.model, std::move(req), on_text);
           })
      .def("_stream",
           [](PyModel& pm, const py::object& input, const py::kwargs& kwargs) {
             ebb::GenerateRequest req = MakeRequest(kwargs);
             SetInput(req, input);
             return std::make_unique<Stream>(pm.model, std::move(req));
           })
      .def("_stream_chat",
           [](PyModel& pm, const py::object& messages, const py::kwargs& kwargs) {
             ebb::GenerateRequest req = MakeRequest(kwargs);
             req.messages = Messages(messages);
             return std::make_unique<Stream>(pm.model, std::move(req));
           })
      .def(
          "_embed",
          [](PyModel& pm, const py::object& input, const py::object& options) {
            // input: a str, a list of str, or a list of token-id lists; options: embed.* keys.
            ebb::EmbedRequest req;
            if (py::isinstance<py::str>(input)) {
              req.texts.push_back(input.cast<std::string>());
            } else {
              if (!py::isinstance<py::sequence>(input)) {
                ThrowArgType("input", "a str, a list of str or a list of token-id lists", input);
              }
              size_t i = 0;
              for (const auto& item : py::reinterpret_borrow<py::sequence>(input)) {
                if (py::isinstance<py::str>(item)) {
                  req.texts.push_back(item.cast<std::string>());
                } else {
                  req.input_ids.push_back(TokenIds(item, "input[" + std::to_string(i) + "]"));
                }
                ++i;
              }
            }
            if (!options.is_none()) {
              ForEachOption(options, "options",
                            [&](const std::string& k, const std::string& v) { req.Set(k, v); });
            }
            ebb::EmbedResult r;
            {
              py::gil_scoped_release release;
              r = ebb::Embed(pm.model, req);
            }
            py::dict d;
            d["embeddings"] = r.embeddings;
            py::dict usage;
            usage["prompt_tokens"] = r.usage.prompt_tokens;
            usage["total_tokens"] = r.usage.total_tokens;
            d["usage"] = usage;
            return d;
          },
          py::arg("input"), py::arg("options") = py::none())
      .def(
          "render_chat",
          [](PyModel& pm, const py::object& messages, bool add_generation_prompt) {
            return pm.model->chat_template().Render(Messages(messages), add_generation_prompt);
          },
          py::arg("messages"), py::arg("add_generation_prompt") = true)
      .def("generator", [](PyModel& pm, const py::kwargs& kwargs) {
        ebb::GeneratorParams params;
        for (const auto& [k, v] : kwargs) {
          const std::string key = k.cast<std::string>();
          if (key == "options") {
            for (const auto& [ok, ov] : DictArg(v, "options")) {
              const std::string okey = KeyArg(ok, "options");
              params.Set(okey, RequestOptionValue(okey, ov, "options['" + okey + "']"));
            }
          } else if (!v.is_none()) {
            params.Set(key, RequestOptionValue(key, v, key));
          }
        }
        auto g = std::make_unique<PyGenerator>();
        g->model = pm.model;
        {
          py::gil_scoped_release release;
          g->gen = std::make_unique<ebb::Generator>(pm.model, params);
        }
        return g;
      });
}
