"""onnxruntime_genai: genai's Python API over ebb's libonnxruntime-genai.so.

A drop-in for `import onnxruntime_genai as og` in text-generation programs, written in pure Python
with ctypes over the genai C API (ort_genai_c.h) that ebb's libonnxruntime-genai.so exports. The C
library is the one implementation of the semantics (search options, tokenizers, errors); this
module only converts arguments and results:

    import onnxruntime_genai as og
    model = og.Model("models/stories260k")
    tokenizer = og.Tokenizer(model)
    stream = tokenizer.create_stream()
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=64)
    generator = og.Generator(model, params)
    generator.append_tokens(tokenizer.encode("Once upon a time"))
    while not generator.is_done():
        generator.generate_next_token()
        print(stream.decode(generator.get_next_tokens()[0]), end="", flush=True)

Names, arguments and behaviour follow genai's own module (src/python/python.cpp, 0.16 line).

Contracts kept from genai:
  * A failed C call raises RuntimeError with the library's message (genai's C++ wrapper throws
    std::runtime_error, which its binding turns into RuntimeError); the OgaResult is freed first.
  * Arrays handed back (get_next_tokens, get_sequence, get_logits, get_output, encode, ...) are
    numpy copies that Python owns; the C objects they came from are destroyed at once.
  * Arrays handed in (Tensor, set_logits, set_model_input, NamedTensors) are copied into tensors
    the C library owns, so the caller may change or drop its array right after the call.
  * Every C object is destroyed when its Python object goes (CPython frees at the last
    reference), and an object keeps the objects it was made from: a Generator its Model and
    GeneratorParams, a Tokenizer its Model, a TokenizerStream its Tokenizer.
  * genai's objects are not thread-safe; each Python object serializes calls on itself with a
    lock, while the GIL is released during C calls so other threads keep running.

Where this module differs from genai's (and why):
  * append_tokens / decode / Tensor also take Python lists and any integer dtype (converted to
    int32 after a range check), and non-contiguous arrays (copied): genai's binding requires a
    contiguous int32 ndarray, a restriction of its binding, not of the API.
  * set_logits and set_model_input always copy the array (some genai releases lend the buffer to
    the C library instead: a lent buffer must outlive the generator's use of it, which a ctypes
    layer cannot promise).
  * Tensor.data() returns the address as an int (genai returns an int or, lately, a capsule).
  * apply_chat_template also takes the messages (and tools) as Python lists/dicts (JSON-encoded
    here), and template_kwargs= (OgaTokenizerApplyChatTemplateWithOptions, which genai's module
    does not expose).
  * Tensor has __array__, so np.asarray(tokenizer.encode_batch(...)) works.
  * Generator.is_session_terminated() is exposed (OgaGenerator_IsSessionTerminated).
  * Decoded text with invalid UTF-8 is decoded with U+FFFD replacements instead of raising.
  * is_cuda_available() and the other is_*_available() answer False: they are compile-time flags
    of genai's build with no C API behind them; with ebb, a provider is chosen when the model is
    created (Config.append_provider), and its absence is reported there.
  * Images, Audios, MultiModalProcessor, Adapters, Engine, Request, StreamingProcessor,
    Config.from_package_ep and the hardware-device Config methods call their C functions, which
    ebb's library answers with an error naming the function (ebb serves text generation).

Finding the library: see onnxruntime_genai._lib ($EBB_GENAI_LIBRARY first, then next to this
package, then a build tree, then the dynamic loader's search); `library_path` says which was used.
"""
from __future__ import annotations

import ctypes
import json
import numbers
import os
import threading
import warnings
from ctypes import POINTER, c_bool, c_char_p, c_double, c_int, c_int32, c_int64, c_size_t, c_void_p
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._lib import library_path  # noqa: F401  (which libonnxruntime-genai.so was loaded)

__version__ = "0.16.0+ebb"  # the genai line whose API this follows, built on ebb

__all__ = [
    "Config", "Model", "GeneratorParams", "Generator", "Tokenizer", "TokenizerStream", "Tensor",
    "NamedTensors", "Images", "Audios", "MultiModalProcessor", "Adapters", "Engine", "Request",
    "StreamingProcessor", "set_log_options", "set_log_callback", "set_current_gpu_device_id",
    "get_current_gpu_device_id", "is_cuda_available", "is_dml_available", "is_rocm_available",
    "is_webgpu_available", "is_qnn_available", "is_openvino_available",
    "register_execution_provider_library", "unregister_execution_provider_library",
    "library_path", "__version__",
]

_call = _lib.call
_fn = _lib.fn
_enc = _lib.encode

# OgaElementType (ort_genai_c.h; the values are ABI) <-> numpy dtypes. bfloat16 and string have no
# numpy dtype; tensors of those types cannot cross into numpy.
_OGA_FROM_DTYPE: Dict[np.dtype, int] = {
    np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4, np.dtype(np.int16): 5, np.dtype(np.int32): 6,
    np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10,
    np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13,
    np.dtype(np.complex64): 14, np.dtype(np.complex128): 15,
}
_DTYPE_FROM_OGA: Dict[int, np.dtype] = {v: k for k, v in _OGA_FROM_DTYPE.items()}
_OGA_TYPE_NAMES = {0: "undefined", 8: "string", 16: "bfloat16"}


class _NotFound(KeyError, RuntimeError):
    """A name that is not there: genai raises RuntimeError; Python code expects KeyError. Both."""

    def __str__(self) -> str:  # KeyError's str() quotes the message
        return str(self.args[0]) if self.args else ""


# ---- Handles

class _Handle:
    """Owns one C object: `_ptr` (the address, None once destroyed), destroyed with `_destroy`
    (an OgaDestroyX name) when the Python object goes. `_keep` holds the Python objects this one
    was made from, so they outlive it whatever order the program drops them in.

    After interpreter exit has started (_lib._at_exit called OgaShutdown), handles are left to
    the process's end: genai's library may have torn down its runtime by then."""

    _destroy: str = ""

    def __init__(self) -> None:
        self._ptr: Optional[int] = None
        self._lock = threading.RLock()
        self._keep: tuple = ()

    def _adopt(self, ptr: Optional[int], *keep: Any) -> None:
        if not ptr:
            raise RuntimeError(f"{type(self).__name__}: the library returned no object")
        self._ptr = ptr
        self._keep = keep

    @property
    def _h(self) -> int:
        if self._ptr is None:
            raise RuntimeError(f"{type(self).__name__} has been destroyed")
        return self._ptr

    def _release(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr and not _lib.finalizing:
            _fn(self._destroy)(ptr)

    def __del__(self) -> None:
        try:
            self._release()
        except Exception:  # noqa: BLE001 (interpreter teardown: nothing left to report to)
            pass


def _new(cls, ptr: int, *keep: Any):
    """A Python object of `cls` around a C object the library just created (no __init__)."""
    obj = cls.__new__(cls)
    _Handle.__init__(obj)
    obj._adopt(ptr, *keep)
    return obj


# ---- numpy <-> tensors

def _int32_array(tokens: Any, what: str = "tokens") -> np.ndarray:
    """`tokens` (ndarray, list, Tensor) as a C-contiguous int32 array. Other integer dtypes are
    converted when every value fits; anything else is a TypeError (a float array passed as token
    ids is a bug, not something to truncate)."""
    if isinstance(tokens, Tensor):
        tokens = tokens.as_numpy()
    arr = np.asarray(tokens)
    if arr.dtype != np.int32:
        if arr.size == 0:
            arr = arr.astype(np.int32)
        elif arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{what} must be integer token ids (int32), not dtype {arr.dtype}")
        else:
            info = np.iinfo(np.int32)
            if arr.min() < info.min or arr.max() > info.max:
                raise ValueError(f"{what}: a value does not fit in int32")
            arr = arr.astype(np.int32)
    return np.ascontiguousarray(arr)


def _int32_ptr(arr: np.ndarray):
    return arr.ctypes.data_as(POINTER(c_int32))


def _tensor_from_array(value: Any) -> int:
    """A new OgaTensor* holding a copy of `value` (the C library allocates and owns the storage:
    OgaCreateTensorFromBuffer with no buffer). The caller owns the handle."""
    arr = np.ascontiguousarray(np.asarray(value))
    if not arr.dtype.isnative:  # e.g. big-endian data read from a file
        arr = arr.astype(arr.dtype.newbyteorder("="))
    oga_type = _OGA_FROM_DTYPE.get(arr.dtype)
    if oga_type is None:
        raise RuntimeError(f"Unsupported numpy type {arr.dtype}")
    shape = (c_int64 * max(arr.ndim, 1))(*arr.shape)
    out = c_void_p()
    _call("OgaCreateTensorFromBuffer", None, shape, arr.ndim, oga_type, ctypes.byref(out))
    try:
        if arr.nbytes:
            data = c_void_p()
            _call("OgaTensorGetData", out, ctypes.byref(data))
            ctypes.memmove(data, arr.ctypes.data, arr.nbytes)
    except BaseException:
        _fn("OgaDestroyTensor")(out)
        raise
    return out.value


def _tensor_shape(ptr: int) -> List[int]:
    rank = c_size_t()
    _call("OgaTensorGetShapeRank", ptr, ctypes.byref(rank))
    dims = (c_int64 * max(rank.value, 1))()
    _call("OgaTensorGetShape", ptr, dims, rank.value)
    return [int(dims[i]) for i in range(rank.value)]


def _tensor_type(ptr: int) -> int:
    t = c_int()
    _call("OgaTensorGetType", ptr, ctypes.byref(t))
    return t.value


def _tensor_to_numpy(ptr: int) -> np.ndarray:
    """A numpy copy of the tensor at `ptr` (which stays the caller's)."""
    oga_type = _tensor_type(ptr)
    dtype = _DTYPE_FROM_OGA.get(oga_type)
    if dtype is None:
        name = _OGA_TYPE_NAMES.get(oga_type, str(oga_type))
        raise RuntimeError(f"Unsupported onnx type: tensor element type {name} has no numpy dtype")
    shape = _tensor_shape(ptr)
    out = np.empty(shape, dtype=dtype)
    if out.nbytes:
        data = c_void_p()
        _call("OgaTensorGetData", ptr, ctypes.byref(data))
        if not data.value:
            raise RuntimeError("tensor has no data")
        ctypes.memmove(out.ctypes.data, data, out.nbytes)
    return out


def _take_tensor(ptr: Optional[int], what: str) -> np.ndarray:
    """Copies a tensor the library handed over and destroys it."""
    if not ptr:
        raise RuntimeError(f"{what}: the library returned no tensor")
    try:
        return _tensor_to_numpy(ptr)
    finally:
        _fn("OgaDestroyTensor")(ptr)


def _take_string_array(ptr: int) -> List[str]:
    """The strings of an OgaStringArray the caller owns, then destroys it."""
    try:
        n = c_size_t()
        _call("OgaStringArrayGetCount", ptr, ctypes.byref(n))
        items = []
        for i in range(n.value):
            s = c_void_p()
            _call("OgaStringArrayGetString", ptr, i, ctypes.byref(s))
            items.append(_lib.borrow_string(s.value))
        return items
    finally:
        _fn("OgaDestroyStringArray")(ptr)


def _string_array(strings: Iterable[Any]) -> int:
    """A new OgaStringArray* of `strings` (the caller destroys it)."""
    arr, _backing = _lib.c_strings(list(strings))
    out = c_void_p()
    _call("OgaCreateStringArrayFromStrings", arr, len(_backing), ctypes.byref(out))
    return out.value


# ---- Tensors

class Tensor(_Handle):
    """An OgaTensor holding a copy of a numpy array (genai: og.Tensor(array)).

    The C library owns the storage; `as_numpy()` (and np.asarray(tensor)) returns a copy."""

    _destroy = "OgaDestroyTensor"

    def __init__(self, array: Any) -> None:
        super().__init__()
        self._adopt(_tensor_from_array(array))

    def shape(self) -> List[int]:
        """The tensor's dimensions."""
        with self._lock:
            return _tensor_shape(self._h)

    def type(self) -> int:
        """The element type as genai's OgaElementType value (1 float32, 6 int32, 7 int64, ...)."""
        with self._lock:
            return _tensor_type(self._h)

    def data(self) -> int:
        """The address of the tensor's data (valid while this Tensor lives)."""
        with self._lock:
            data = c_void_p()
            _call("OgaTensorGetData", self._h, ctypes.byref(data))
            return data.value or 0

    def as_numpy(self) -> np.ndarray:
        """A numpy copy of the tensor."""
        with self._lock:
            return _tensor_to_numpy(self._h)

    def __array__(self, dtype=None, copy=None):
        a = self.as_numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"onnxruntime_genai.Tensor(shape={self.shape()}, type={self.type()})"


class NamedTensors(_Handle):
    """Named input tensors (OgaNamedTensors) for Generator.set_inputs: a mapping of name ->
    Tensor. Setting an array stores a copy; the C object shares tensor storage with its entries,
    so a Tensor set here may be dropped afterwards."""

    _destroy = "OgaDestroyNamedTensors"

    def __init__(self) -> None:
        super().__init__()
        out = c_void_p()
        _call("OgaCreateNamedTensors", ctypes.byref(out))
        self._adopt(out.value)

    def _get(self, name: str) -> Optional[int]:
        out = c_void_p()
        _call("OgaNamedTensorsGet", self._h, _enc(name, "name"), ctypes.byref(out))
        return out.value

    def __getitem__(self, name: str) -> Tensor:
        with self._lock:
            ptr = self._get(name)
        if not ptr:
            raise _NotFound(f"Tensor with name: {name} not found.")
        return _new(Tensor, ptr, self)

    def __setitem__(self, name: str, value: Any) -> None:
        tensor = value if isinstance(value, Tensor) else Tensor(value)
        with self._lock, tensor._lock:
            _call("OgaNamedTensorsSet", self._h, _enc(name, "name"), tensor._h)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        with self._lock:
            ptr = self._get(name)
        if ptr:
            _fn("OgaDestroyTensor")(ptr)
        return bool(ptr)

    def __delitem__(self, name: str) -> None:
        with self._lock:
            _call("OgaNamedTensorsDelete", self._h, _enc(name, "name"))

    def __len__(self) -> int:
        with self._lock:
            n = c_size_t()
            _call("OgaNamedTensorsCount", self._h, ctypes.byref(n))
            return n.value

    def keys(self) -> List[str]:
        """The names, as a list."""
        with self._lock:
            out = c_void_p()
            _call("OgaNamedTensorsGetNames", self._h, ctypes.byref(out))
            return _take_string_array(out.value)

    def __iter__(self):
        return iter(self.keys())


# ---- Configs and models

class Config(_Handle):
    """A model folder's genai_config.json, to change before creating a Model from it (genai:
    og.Config(path)). Changes do not affect models already created."""

    _destroy = "OgaDestroyConfig"

    def __init__(self, config_path: Union[str, os.PathLike]) -> None:
        super().__init__()
        out = c_void_p()
        _call("OgaCreateConfig", _enc(config_path, "config_path"), ctypes.byref(out))
        self._adopt(out.value)
        # Buffers given to add_model_data, kept until removed: genai's library reads them when
        # the model is created (ebb's copies them; keeping them costs nothing and is safe for both).
        self._model_data: Dict[str, bytes] = {}

    @staticmethod
    def from_package_ep(config_path: Union[str, os.PathLike], ep: str) -> "Config":
        """A config from a model package's variant for execution provider `ep` (genai; ebb's
        library reports this as unsupported)."""
        out = c_void_p()
        _call("OgaCreateConfigFromPackageEp", _enc(config_path, "config_path"),
              _enc(ep, "ep") if ep else None, ctypes.byref(out))
        cfg = _new(Config, out.value)
        cfg._model_data = {}
        return cfg

    def append_provider(self, provider: str) -> None:
        """Adds an execution provider (after clear_providers, to choose the list)."""
        with self._lock:
            _call("OgaConfigAppendProvider", self._h, _enc(provider, "provider"))

    def set_provider_option(self, provider: str, key: str, value: str) -> None:
        """Sets one option of `provider` (which it also appends, as genai does)."""
        with self._lock:
            _call("OgaConfigSetProviderOption", self._h, _enc(provider, "provider"),
                  _enc(key, "key"), _enc(value, "value"))

    def clear_providers(self) -> None:
        """Removes every provider: the model runs on CPU unless one is appended."""
        with self._lock:
            _call("OgaConfigClearProviders", self._h)

    def add_model_data(self, model_filename: str, model_data: Any) -> None:
        """Supplies the bytes of the file `model_filename` names in genai_config.json from memory
        (bytes or any buffer)."""
        try:
            data = model_data if isinstance(model_data, bytes) else bytes(memoryview(model_data))
        except TypeError:
            raise RuntimeError("Unsupported input type. Expected bytes or buffer.") from None
        with self._lock:
            _call("OgaConfigAddModelData", self._h, _enc(model_filename, "model_filename"),
                  data, len(data))
            self._model_data[model_filename] = data

    def remove_model_data(self, model_filename: str) -> None:
        """Forgets bytes given by add_model_data."""
        with self._lock:
            _call("OgaConfigRemoveModelData", self._h, _enc(model_filename, "model_filename"))
            self._model_data.pop(model_filename, None)

    def overlay(self, json: str) -> None:  # noqa: A002 (genai's parameter name)
        """Merges a JSON document into the config (RFC 7386 merge patch)."""
        with self._lock:
            _call("OgaConfigOverlay", self._h, _enc(json, "json"))

    def set_decoder_provider_options_hardware_device_type(self, provider: str,
                                                          hardware_device_type: str) -> None:
        with self._lock:
            _call("OgaConfigSetDecoderProviderOptionsHardwareDeviceType", self._h,
                  _enc(provider, "provider"), _enc(hardware_device_type, "hardware_device_type"))

    def set_decoder_provider_options_hardware_device_id(self, provider: str,
                                                        hardware_device_id: int) -> None:
        with self._lock:
            _call("OgaConfigSetDecoderProviderOptionsHardwareDeviceId", self._h,
                  _enc(provider, "provider"), int(hardware_device_id))

    def set_decoder_provider_options_hardware_vendor_id(self, provider: str,
                                                        hardware_vendor_id: int) -> None:
        with self._lock:
            _call("OgaConfigSetDecoderProviderOptionsHardwareVendorId", self._h,
                  _enc(provider, "provider"), int(hardware_vendor_id))

    def clear_decoder_provider_options_hardware_device_type(self, provider: str) -> None:
        with self._lock:
            _call("OgaConfigClearDecoderProviderOptionsHardwareDeviceType", self._h,
                  _enc(provider, "provider"))

    def clear_decoder_provider_options_hardware_device_id(self, provider: str) -> None:
        with self._lock:
            _call("OgaConfigClearDecoderProviderOptionsHardwareDeviceId", self._h,
                  _enc(provider, "provider"))

    def clear_decoder_provider_options_hardware_vendor_id(self, provider: str) -> None:
        with self._lock:
            _call("OgaConfigClearDecoderProviderOptionsHardwareVendorId", self._h,
                  _enc(provider, "provider"))


class Model(_Handle):
    """A loaded model (genai: og.Model(path) or og.Model(config))."""

    _destroy = "OgaDestroyModel"

    def __init__(self, config: Union["Config", str, os.PathLike]) -> None:
        super().__init__()
        out = c_void_p()
        if isinstance(config, Config):
            with config._lock:
                _call("OgaCreateModelFromConfig", config._h, ctypes.byref(out))
        else:
            _call("OgaCreateModel", _enc(config, "config_path"), ctypes.byref(out))
        self._adopt(out.value)

    def _string(self, name: str) -> str:
        with self._lock:
            out = c_void_p()
            _call(name, self._h, ctypes.byref(out))
            return _lib.take_string(out.value)

    @property
    def type(self) -> str:
        """genai_config.json's model.type ("llama", "gpt2", ...)."""
        return self._string("OgaModelGetType")

    @property
    def device_type(self) -> str:
        """The device the model is running on."""
        return self._string("OgaModelGetDeviceType")

    def create_multimodal_processor(self) -> "MultiModalProcessor":
        return MultiModalProcessor(self)

    def create_streaming_processor(self) -> "StreamingProcessor":
        return StreamingProcessor(self)


# ---- Generator parameters and generators

# The search options genai's get_search_options() reports (its src/python/python.cpp); which are
# bools is fixed by genai's config (struct Search).
_SEARCH_NUMBERS = ("batch_size", "chunk_size", "diversity_penalty", "length_penalty", "max_length",
                   "min_length", "no_repeat_ngram_size", "num_beams", "num_return_sequences",
                   "random_seed", "repetition_penalty", "temperature", "top_k", "top_p")
_SEARCH_BOOLS = ("do_sample", "early_stopping", "past_present_share_buffer")
_SEARCH_ORDER = ("batch_size", "chunk_size", "diversity_penalty", "do_sample", "early_stopping",
                 "length_penalty", "max_length", "min_length", "no_repeat_ngram_size", "num_beams",
                 "num_return_sequences", "past_present_share_buffer", "random_seed",
                 "repetition_penalty", "temperature", "top_k", "top_p")


class GeneratorParams(_Handle):
    """Search options for generators of one model (genai: og.GeneratorParams(model)). Starts
    from the model's genai_config.json "search" section; keeps the model alive."""

    _destroy = "OgaDestroyGeneratorParams"

    def __init__(self, model: Model) -> None:
        super().__init__()
        if not isinstance(model, Model):
            raise TypeError(f"GeneratorParams(model): expected a Model, not {type(model).__name__}")
        out = c_void_p()
        with model._lock:
            _call("OgaCreateGeneratorParams", model._h, ctypes.byref(out))
        self._adopt(out.value, model)
        self._model = model

    def set_search_options(self, **options: Union[bool, int, float]) -> None:
        """Sets search options by name (max_length=..., do_sample=..., top_k=..., ...): a bool
        goes to OgaGeneratorParamsSetSearchBool, an int or float to ...SetSearchNumber, as in
        genai (which option takes which, and its range, is the C library's to check)."""
        with self._lock:
            for name, value in options.items():
                if isinstance(value, (bool, np.bool_)):
                    _call("OgaGeneratorParamsSetSearchBool", self._h, _enc(name), bool(value))
                elif isinstance(value, (numbers.Integral, numbers.Real)):
                    _call("OgaGeneratorParamsSetSearchNumber", self._h, _enc(name), float(value))
                else:
                    raise RuntimeError(f"Unknown search option type, can be float/bool/int:{name}")

    def get_search_options(self) -> Dict[str, Union[bool, float]]:
        """The search options in force, as genai reports them (numbers as float)."""
        out: Dict[str, Union[bool, float]] = {}
        with self._lock:
            for name in _SEARCH_ORDER:
                if name in _SEARCH_BOOLS:
                    b = c_bool()
                    _call("OgaGeneratorParamsGetSearchBool", self._h, _enc(name), ctypes.byref(b))
                    out[name] = bool(b.value)
                else:
                    d = c_double()
                    _call("OgaGeneratorParamsGetSearchNumber", self._h, _enc(name), ctypes.byref(d))
                    out[name] = float(d.value)
        return out

    def set_guidance(self, type: str, data: str,  # noqa: A002 (genai's parameter name)
                     enable_ff_tokens: bool = False) -> None:
        """Constrained decoding ("json_schema", "regex", "lark_grammar"); ebb's library reports it
        as unsupported."""
        with self._lock:
            _call("OgaGeneratorParamsSetGuidance", self._h, _enc(type, "type"), _enc(data, "data"),
                  bool(enable_ff_tokens))

    def try_graph_capture_with_max_batch_size(self, max_batch_size: int) -> None:
        """Deprecated in genai (a no-op that warns); kept for old programs."""
        warnings.warn("try_graph_capture_with_max_batch_size is deprecated and has no effect",
                      DeprecationWarning, stacklevel=2)


class Generator(_Handle):
    """One generation (genai: og.Generator(model, params)): append tokens, then
    generate_next_token() until is_done(). Keeps its model and params alive."""

    _destroy = "OgaDestroyGenerator"

    def __init__(self, model: Model, params: GeneratorParams) -> None:
        super().__init__()
        if not isinstance(model, Model):
            raise TypeError("Generator(model, params): expected a Model, not "
                            f"{type(model).__name__}")
        if not isinstance(params, GeneratorParams):
            raise TypeError("Generator(model, params): expected GeneratorParams, not "
                            f"{type(params).__name__}")
        out = c_void_p()
        with params._lock:
            _call("OgaCreateGenerator", model._h, params._h, ctypes.byref(out))
        self._adopt(out.value, model, params)

    def is_done(self) -> bool:
        """Whether every sequence has ended (EOS or max_length)."""
        with self._lock:
            return bool(_fn("OgaGenerator_IsDone")(self._h))

    def is_session_terminated(self) -> bool:
        """Whether the session was terminated (OgaGenerator_IsSessionTerminated)."""
        with self._lock:
            return bool(_fn("OgaGenerator_IsSessionTerminated")(self._h))

    def append_tokens(self, tokens: Any) -> None:
        """Appends token ids: 1-D for batch 1, or 2-D [batch_size, n] (rows in order; the batch
        size is the params'). A numpy array, a list or a Tensor of int32."""
        arr = _int32_array(tokens)
        with self._lock:
            _call("OgaGenerator_AppendTokens", self._h, _int32_ptr(arr), arr.size)

    def generate_next_token(self) -> None:
        """Runs the model once and picks the next token of every sequence."""
        with self._lock:
            _call("OgaGenerator_GenerateNextToken", self._h)

    def get_next_tokens(self) -> np.ndarray:
        """The tokens the last step picked, one per sequence (int32 copy)."""
        with self._lock:
            data = c_void_p()
            n = c_size_t()
            _call("OgaGenerator_GetNextTokens", self._h, ctypes.byref(data), ctypes.byref(n))
            return _copy_int32(data.value, n.value)

    def get_sequence(self, index: int) -> np.ndarray:
        """All tokens of sequence `index`, prompt included (int32 copy)."""
        index = int(index)
        if index < 0:
            raise IndexError(f"sequence index {index} is negative")
        with self._lock:
            n = _fn("OgaGenerator_GetSequenceCount")(self._h, index)
            data = _fn("OgaGenerator_GetSequenceData")(self._h, index)
            return _copy_int32(data, n)

    def token_count(self) -> int:
        """How many tokens each sequence holds."""
        with self._lock:
            return int(_fn("OgaGenerator_TokenCount")(self._h))

    def rewind_to(self, new_length: int) -> None:
        """Drops tokens so that each sequence holds `new_length` (then append_tokens again)."""
        new_length = int(new_length)
        if new_length < 0:
            raise ValueError(f"rewind_to: new_length {new_length} is negative")
        with self._lock:
            _call("OgaGenerator_RewindTo", self._h, new_length)

    def get_logits(self) -> np.ndarray:
        """The logits the next token will be picked from (float32 copy)."""
        with self._lock:
            out = c_void_p()
            _call("OgaGenerator_GetLogits", self._h, ctypes.byref(out))
            return _take_tensor(out.value, "get_logits")

    def set_logits(self, logits: Any) -> None:
        """Replaces those logits: a float32 array (or Tensor) of get_logits()'s size, copied. A
        list is taken as float32; an array keeps its dtype (the C library checks it)."""
        if isinstance(logits, Tensor):
            with self._lock, logits._lock:
                _call("OgaGenerator_SetLogits", self._h, logits._h)
            return
        arr = logits if isinstance(logits, np.ndarray) else np.asarray(logits, dtype=np.float32)
        ptr = _tensor_from_array(arr)
        try:
            with self._lock:
                _call("OgaGenerator_SetLogits", self._h, ptr)
        finally:
            _fn("OgaDestroyTensor")(ptr)

    def get_output(self, name: str) -> np.ndarray:
        """The model output `name` of the last run (copy)."""
        with self._lock:
            out = c_void_p()
            _call("OgaGenerator_GetOutput", self._h, _enc(name, "name"), ctypes.byref(out))
            return _take_tensor(out.value, "get_output")

    def get_input(self, name: str) -> np.ndarray:
        """The model input `name` (copy)."""
        with self._lock:
            out = c_void_p()
            _call("OgaGenerator_GetInput", self._h, _enc(name, "name"), ctypes.byref(out))
            return _take_tensor(out.value, "get_input")

    def set_model_input(self, name: str, value: Any) -> None:
        """Sets a model input from an array (copied) or a Tensor."""
        if isinstance(value, Tensor):
            with self._lock, value._lock:
                _call("OgaGenerator_SetModelInput", self._h, _enc(name, "name"), value._h)
            return
        ptr = _tensor_from_array(value)
        try:
            with self._lock:
                _call("OgaGenerator_SetModelInput", self._h, _enc(name, "name"), ptr)
        finally:
            _fn("OgaDestroyTensor")(ptr)

    def set_inputs(self, named_tensors: NamedTensors) -> None:
        """Sets extra model inputs from a NamedTensors."""
        with self._lock, named_tensors._lock:
            _call("OgaGenerator_SetInputs", self._h, named_tensors._h)

    def set_runtime_option(self, key: str, value: str) -> None:
        """Sets a runtime option (genai: "terminate_session" = "1"/"0")."""
        with self._lock:
            _call("OgaGenerator_SetRuntimeOption", self._h, _enc(key, "key"), _enc(value, "value"))

    def set_active_adapter(self, adapters: "Adapters", adapter_name: str) -> None:
        with self._lock, adapters._lock:
            _call("OgaSetActiveAdapter", self._h, adapters._h, _enc(adapter_name, "adapter_name"))


def _copy_int32(ptr: Optional[int], n: int) -> np.ndarray:
    out = np.empty(n, dtype=np.int32)
    if n:
        if not ptr:
            raise RuntimeError("the library returned no data")
        ctypes.memmove(out.ctypes.data, ptr, n * 4)
    return out


# ---- Tokenizers

class Tokenizer(_Handle):
    """The model's tokenizer (genai: og.Tokenizer(model)); keeps the model alive."""

    _destroy = "OgaDestroyTokenizer"

    def __init__(self, model: Model) -> None:
        super().__init__()
        if not isinstance(model, Model):
            raise TypeError(f"Tokenizer(model): expected a Model, not {type(model).__name__}")
        out = c_void_p()
        with model._lock:
            _call("OgaCreateTokenizer", model._h, ctypes.byref(out))
        self._adopt(out.value, model)

    def _int(self, name: str) -> int:
        with self._lock:
            v = c_int32()
            _call(name, self._h, ctypes.byref(v))
            return int(v.value)

    @property
    def bos_token_id(self) -> int:
        return self._int("OgaTokenizerGetBosTokenId")

    @property
    def pad_token_id(self) -> int:
        return self._int("OgaTokenizerGetPadTokenId")

    @property
    def eos_token_ids(self) -> np.ndarray:
        """Every id that ends a sequence (int32 copy)."""
        with self._lock:
            data = c_void_p()
            n = c_size_t()
            _call("OgaTokenizerGetEosTokenIds", self._h, ctypes.byref(data), ctypes.byref(n))
            return _copy_int32(data.value, n.value)

    def update_options(self, **options: Any) -> None:
        """Sets tokenizer options (add_special_tokens=..., skip_special_tokens=...). Values are
        passed as strings, as genai does; bools become "true"/"false" (Python's str(True) is
        "True", which a C parser of JSON-style booleans would not accept)."""
        keys = [_enc(k) for k in options]
        values = [_enc(("true" if v else "false") if isinstance(v, (bool, np.bool_)) else str(v))
                  for v in options.values()]
        karr = (c_char_p * max(len(keys), 1))(*keys)
        varr = (c_char_p * max(len(values), 1))(*values)
        with self._lock:
            _call("OgaUpdateTokenizerOptions", self._h, karr, varr, len(keys))

    def encode(self, text: str) -> np.ndarray:
        """The token ids of `text` (int32)."""
        seqs = c_void_p()
        _call("OgaCreateSequences", ctypes.byref(seqs))
        try:
            with self._lock:
                _call("OgaTokenizerEncode", self._h, _enc(text, "text"), seqs)
            n = _fn("OgaSequencesGetSequenceCount")(seqs, 0)
            return _copy_int32(_fn("OgaSequencesGetSequenceData")(seqs, 0), n)
        finally:
            _fn("OgaDestroySequences")(seqs)

    def decode(self, tokens: Any) -> str:
        """The text of token ids (1-D)."""
        arr = _int32_array(tokens)
        with self._lock:
            out = c_void_p()
            _call("OgaTokenizerDecode", self._h, _int32_ptr(arr), arr.size, ctypes.byref(out))
            return _lib.take_string(out.value)

    def encode_batch(self, texts: Sequence[str]) -> Tensor:
        """The ids of several texts as one int32 Tensor [len(texts), longest] (shorter rows padded
        as the C library pads them). Pass it to Generator.append_tokens or decode_batch, or
        np.asarray() it."""
        if isinstance(texts, str):
            raise TypeError("encode_batch takes a list of strings; use encode for one")
        arr, backing = _lib.c_strings(texts)
        with self._lock:
            out = c_void_p()
            _call("OgaTokenizerEncodeBatch", self._h, arr, len(backing), ctypes.byref(out))
        return _new(Tensor, out.value)

    def decode_batch(self, tokens: Any) -> List[str]:
        """The texts of a 2-D batch of ids (a Tensor from encode_batch, or an array)."""
        tensor = tokens if isinstance(tokens, Tensor) else Tensor(_int32_array(tokens))
        with self._lock, tensor._lock:
            out = c_void_p()
            _call("OgaTokenizerDecodeBatch", self._h, tensor._h, ctypes.byref(out))
        return _take_string_array(out.value)

    def to_token_id(self, text: str) -> int:
        """The id of the single token `text`."""
        with self._lock:
            v = c_int32()
            _call("OgaTokenizerToTokenId", self._h, _enc(text, "text"), ctypes.byref(v))
            return int(v.value)

    def apply_chat_template(self, messages: Any, *, template_str: Optional[str] = None,
                            tools: Any = None, add_generation_prompt: bool = True,
                            template_kwargs: Any = None) -> str:
        """Renders a conversation with a chat template (genai's signature: messages, then
        keyword-only template_str, tools, add_generation_prompt).

        messages: a JSON string of [{"role": ..., "content": ...}, ...] as in genai, or the list
        itself. template_str: a Jinja template; None uses the tokenizer's own. tools: a JSON
        string or list. template_kwargs (ebb's extension, OgaTokenizerApplyChatTemplateWithOptions):
        a dict (or JSON string) of extra template variables, e.g. {"enable_thinking": False}."""
        def as_json(v: Any) -> Optional[bytes]:
            if v is None:
                return None
            return _enc(v if isinstance(v, (str, bytes)) else json.dumps(v))

        out = c_void_p()
        tmpl = None if template_str is None else _enc(template_str, "template_str")
        with self._lock:
            if template_kwargs is None:
                _call("OgaTokenizerApplyChatTemplate", self._h, tmpl, as_json(messages),
                      as_json(tools), bool(add_generation_prompt), ctypes.byref(out))
            else:
                _call("OgaTokenizerApplyChatTemplateWithOptions", self._h, tmpl, as_json(messages),
                      as_json(tools), as_json(template_kwargs), bool(add_generation_prompt),
                      ctypes.byref(out))
        return _lib.take_string(out.value)

    def create_stream(self) -> "TokenizerStream":
        """A decoder for one token at a time (keeps this tokenizer alive)."""
        with self._lock:
            out = c_void_p()
            _call("OgaCreateTokenizerStream", self._h, ctypes.byref(out))
        return _new(TokenizerStream, out.value, self)


class TokenizerStream(_Handle):
    """Decodes one token at a time, holding back bytes until they form whole characters (genai:
    tokenizer.create_stream())."""

    _destroy = "OgaDestroyTokenizerStream"

    def __init__(self, *_args: Any) -> None:
        raise TypeError("TokenizerStream is made by Tokenizer.create_stream()")

    def decode(self, token: int) -> str:
        """The text `token` adds (possibly "")."""
        with self._lock:
            out = c_void_p()
            _call("OgaTokenizerStreamDecode", self._h, int(token), ctypes.byref(out))
            return _lib.borrow_string(out.value)  # the stream keeps owning it


# ---- What ebb does not support. Each constructor calls its C function, whose error names it.

class Images(_Handle):
    """Images for a multimodal processor (genai). ebb's library reports it as unsupported."""

    _destroy = "OgaDestroyImages"

    def __init__(self, *_args: Any) -> None:
        raise TypeError("use Images.open(*paths) or Images.open_bytes(*datas)")

    @staticmethod
    def open(*image_paths: str) -> "Images":
        return _new(Images, _load_media("OgaLoadImages", image_paths, "Image paths"))

    @staticmethod
    def open_bytes(*image_datas: bytes) -> "Images":
        return _new(Images,
                    _load_media_bytes("OgaLoadImagesFromBuffers", image_datas, "Image data"))


class Audios(_Handle):
    """Audio for a multimodal processor (genai). ebb's library reports it as unsupported."""

    _destroy = "OgaDestroyAudios"

    def __init__(self, *_args: Any) -> None:
        raise TypeError("use Audios.open(*paths) or Audios.open_bytes(*datas)")

    @staticmethod
    def open(*audio_paths: str) -> "Audios":
        return _new(Audios, _load_media("OgaLoadAudios", audio_paths, "Audio paths"))

    @staticmethod
    def open_bytes(*audio_datas: bytes) -> "Audios":
        return _new(Audios,
                    _load_media_bytes("OgaLoadAudiosFromBuffers", audio_datas, "Audio data"))


def _load_media(fn_name: str, paths: Sequence[Any], what: str) -> int:
    if not all(isinstance(p, str) for p in paths):
        raise RuntimeError(f"{what} must be strings.")
    arr = _string_array(paths)
    try:
        out = c_void_p()
        _call(fn_name, arr, ctypes.byref(out))
        return out.value
    finally:
        _fn("OgaDestroyStringArray")(arr)


def _load_media_bytes(fn_name: str, datas: Sequence[Any], what: str) -> int:
    if not all(isinstance(d, bytes) for d in datas):
        raise RuntimeError(f"{what} must be bytes.")
    n = len(datas)
    ptrs = (c_void_p * max(n, 1))(*[ctypes.cast(c_char_p(d), c_void_p) for d in datas])
    sizes = (c_size_t * max(n, 1))(*[len(d) for d in datas])
    out = c_void_p()
    _call(fn_name, ptrs, sizes, n, ctypes.byref(out))
    return out.value


class MultiModalProcessor(_Handle):
    """genai's image/audio preprocessor (model.create_multimodal_processor()). ebb's library
    reports it as unsupported."""

    _destroy = "OgaDestroyMultiModalProcessor"

    def __init__(self, model: Model) -> None:
        super().__init__()
        out = c_void_p()
        with model._lock:
            _call("OgaCreateMultiModalProcessor", model._h, ctypes.byref(out))
        self._adopt(out.value, model)

    def __call__(self, prompt: Any = None, images: Optional[Images] = None,
                 audios: Optional[Audios] = None) -> NamedTensors:
        out = c_void_p()
        img = images._h if images is not None else None
        aud = audios._h if audios is not None else None
        with self._lock:
            if isinstance(prompt, str):
                _call("OgaProcessorProcessImagesAndAudios", self._h, _enc(prompt), img, aud,
                      ctypes.byref(out))
            else:
                if prompt is not None and not isinstance(prompt, list):
                    raise RuntimeError("Unsupported type for prompts. Prompts must be a string or "
                                       "a list of strings.")
                arr = _string_array(prompt or [])
                try:
                    _call("OgaProcessorProcessImagesAndAudiosAndPrompts", self._h, arr, img, aud,
                          ctypes.byref(out))
                finally:
                    _fn("OgaDestroyStringArray")(arr)
        return _new(NamedTensors, out.value)

    def create_stream(self) -> TokenizerStream:
        with self._lock:
            out = c_void_p()
            _call("OgaCreateTokenizerStreamFromProcessor", self._h, ctypes.byref(out))
        return _new(TokenizerStream, out.value, self)

    def decode(self, tokens: Any) -> str:
        arr = _int32_array(tokens)
        with self._lock:
            out = c_void_p()
            _call("OgaProcessorDecode", self._h, _int32_ptr(arr), arr.size, ctypes.byref(out))
            return _lib.take_string(out.value)


class Adapters(_Handle):
    """LoRA adapters (genai: og.Adapters(model)). ebb's library reports it as unsupported."""

    _destroy = "OgaDestroyAdapters"

    def __init__(self, model: Model) -> None:
        super().__init__()
        out = c_void_p()
        with model._lock:
            _call("OgaCreateAdapters", model._h, ctypes.byref(out))
        self._adopt(out.value, model)

    def load(self, adapter_file_path: str, adapter_name: str) -> None:
        with self._lock:
            _call("OgaLoadAdapter", self._h, _enc(adapter_file_path), _enc(adapter_name))

    def unload(self, adapter_name: str) -> None:
        with self._lock:
            _call("OgaUnloadAdapter", self._h, _enc(adapter_name))


class Request(_Handle):
    """A request for genai's Engine (og.Request(params)). ebb's library reports it as
    unsupported."""

    _destroy = "OgaDestroyRequest"

    def __init__(self, params: GeneratorParams) -> None:
        super().__init__()
        out = c_void_p()
        with params._lock:
            _call("OgaCreateRequest", params._h, ctypes.byref(out))
        self._adopt(out.value, params)
        self._opaque: Any = None

    def add_tokens(self, tokens: Any) -> None:
        arr = _int32_array(tokens)
        seqs = c_void_p()
        _call("OgaCreateSequences", ctypes.byref(seqs))
        try:
            _call("OgaAppendTokenSequence", _int32_ptr(arr), arr.size, seqs)
            with self._lock:
                _call("OgaRequestAddTokens", self._h, seqs)
        finally:
            _fn("OgaDestroySequences")(seqs)

    def _bool(self, name: str) -> bool:
        with self._lock:
            b = c_bool()
            _call(name, self._h, ctypes.byref(b))
            return bool(b.value)

    def has_unseen_tokens(self) -> bool:
        return self._bool("OgaRequestHasUnseenTokens")

    def is_done(self) -> bool:
        return self._bool("OgaRequestIsDone")

    def get_unseen_token(self) -> int:
        with self._lock:
            v = c_int32()
            _call("OgaRequestGetUnseenToken", self._h, ctypes.byref(v))
            return int(v.value)

    def set_opaque_data(self, opaque_data: Any) -> None:
        """Attaches any Python object (kept referenced by this Request)."""
        with self._lock:
            ptr = id(opaque_data) if opaque_data is not None else None
            _call("OgaRequestSetOpaqueData", self._h, ptr)
            self._opaque = opaque_data

    def get_opaque_data(self) -> Any:
        return self._opaque


class Engine(_Handle):
    """genai's batching engine (og.Engine(model)). ebb's library reports it as unsupported."""

    _destroy = "OgaDestroyEngine"

    def __init__(self, model: Model) -> None:
        super().__init__()
        out = c_void_p()
        with model._lock:
            _call("OgaCreateEngine", model._h, ctypes.byref(out))
        self._adopt(out.value, model)
        self._requests: Dict[int, Request] = {}  # C handle -> Python object, for step()

    def add_request(self, request: Request) -> None:
        with self._lock:
            _call("OgaEngineAddRequest", self._h, request._h)
            self._requests[request._h] = request

    def remove_request(self, request: Request) -> None:
        with self._lock:
            _call("OgaEngineRemoveRequest", self._h, request._h)
            self._requests.pop(request._h, None)

    def step(self) -> Optional[Request]:
        with self._lock:
            out = c_void_p()
            _call("OgaEngineStep", self._h, ctypes.byref(out))
            return self._requests.get(out.value) if out.value else None

    def has_pending_requests(self) -> bool:
        with self._lock:
            b = c_bool()
            _call("OgaEngineHasPendingRequests", self._h, ctypes.byref(b))
            return bool(b.value)


class StreamingProcessor(_Handle):
    """genai's streaming audio front end (og.StreamingProcessor(model)). ebb's library reports it
    as unsupported."""

    _destroy = "OgaDestroyStreamingProcessor"

    def __init__(self, model: Model) -> None:
        super().__init__()
        out = c_void_p()
        with model._lock:
            _call("OgaCreateStreamingProcessor", model._h, ctypes.byref(out))
        self._adopt(out.value, model)

    def process(self, audio_chunk: Any) -> Optional[NamedTensors]:
        arr = np.ascontiguousarray(audio_chunk, dtype=np.float32).reshape(-1)
        with self._lock:
            out = c_void_p()
            _call("OgaStreamingProcessorProcess", self._h, arr.ctypes.data, arr.size,
                  ctypes.byref(out))
        return _new(NamedTensors, out.value) if out.value else None

    def flush(self) -> Optional[NamedTensors]:
        with self._lock:
            out = c_void_p()
            _call("OgaStreamingProcessorFlush", self._h, ctypes.byref(out))
        return _new(NamedTensors, out.value) if out.value else None

    def set_option(self, key: str, value: str) -> None:
        with self._lock:
            _call("OgaStreamingProcessorSetOption", self._h, _enc(key), _enc(value))

    def get_option(self, key: str) -> str:
        with self._lock:
            out = c_void_p()
            _call("OgaStreamingProcessorGetOption", self._h, _enc(key), ctypes.byref(out))
            return _lib.take_string(out.value)


# ---- Process-wide functions

def set_log_options(**options: Union[bool, str]) -> None:
    """Log settings: bools (enabled=True, generate_next_token=True, ...) go to OgaSetLogBool,
    strings (filename="...") to OgaSetLogString, as in genai."""
    for name, value in options.items():
        if isinstance(value, (bool, np.bool_)):
            _call("OgaSetLogBool", _enc(name), bool(value))
        elif isinstance(value, str):
            _call("OgaSetLogString", _enc(name), _enc(value))
        else:
            raise RuntimeError(f"Unknown log option type, can be bool/string:{name}")


_log_callback_ref: Optional[Any] = None  # the C trampoline must live while the library holds it


def set_log_callback(callback: Optional[Callable[[str], Any]]) -> None:
    """Sends log lines to `callback(str)` instead of stderr/the log file; None restores them.
    The callback may run on the library's own threads (ctypes takes the GIL for it); an exception
    it raises is printed and otherwise ignored."""
    global _log_callback_ref
    if callback is None:
        _call("OgaSetLogCallback", _lib.LOG_CALLBACK())  # a null function pointer
        _log_callback_ref = None
        return
    if not callable(callback):
        raise TypeError("set_log_callback: callback must be callable or None")

    def trampoline(message: Optional[int], length: int) -> None:
        text = ctypes.string_at(message, length).decode("utf-8", "replace") if message else ""
        callback(text)

    ref = _lib.LOG_CALLBACK(trampoline)
    _call("OgaSetLogCallback", ref)
    _log_callback_ref = ref  # replaced only after the library holds the new one


def set_current_gpu_device_id(device_id: int) -> None:
    _call("OgaSetCurrentGpuDeviceId", int(device_id))


def get_current_gpu_device_id() -> int:
    v = c_int()
    _call("OgaGetCurrentGpuDeviceId", ctypes.byref(v))
    return int(v.value)


def is_cuda_available() -> bool:
    """False: a compile-time flag of genai's build with no C API behind it (module docstring)."""
    return False


def is_dml_available() -> bool:
    return False


def is_rocm_available() -> bool:
    return False


def is_webgpu_available() -> bool:
    return False


def is_qnn_available() -> bool:
    return False


def is_openvino_available() -> bool:
    return False


def register_execution_provider_library(registration_name: str, path: str) -> None:
    """genai: loads a plug-in execution provider library. ebb's library logs that it loads
    none (ebb runs the providers built into its ONNX Runtime)."""
    _fn("OgaRegisterExecutionProviderLibrary")(_enc(registration_name), _enc(path))


def unregister_execution_provider_library(registration_name: str) -> None:
    _fn("OgaUnregisterExecutionProviderLibrary")(_enc(registration_name))
