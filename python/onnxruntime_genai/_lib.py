"""Finding and calling libonnxruntime-genai.so (genai's C API, ort_genai_c.h) through ctypes.

Everything native goes through this module: where the library is found, the C signatures, how a
failed call becomes a Python exception, and how strings the library returns are copied and freed.
The classes in __init__.py only decide which function to call.

Where the library is found (the first that loads wins; docs in __init__.py):
  1. $EBB_GENAI_LIBRARY, a full path. When it is set and does not load, that is the error: a
     path named on purpose is never silently replaced by another library.
  2. This package's folder (onnxruntime_genai/libonnxruntime-genai.so): a wheel ships it there.
  3. A build tree: <build>/genai/libonnxruntime-genai.so when the package was copied into
     <build>/python/onnxruntime_genai (as CMake assembles `ebb` in <build>/python/ebb), then
     <repo>/build/{debug,release,relwithdebinfo}/genai/ when it is imported from python/ in a
     checkout. Sanitizer and fuzz builds are not tried: their libraries cannot load into an
     uninstrumented python3.
  4. The dynamic loader's own search: ctypes.util.find_library("onnxruntime-genai"), then the
     plain name libonnxruntime-genai.so (LD_LIBRARY_PATH, the ld.so cache).
The library's own dependencies (libebb.so, ONNX Runtime) are found through its RUNPATH, as for
any program linked against it.

Calls: the library is loaded with ctypes.CDLL, which releases the GIL during every call, so other
Python threads run while a token is generated. genai's objects are not thread-safe (one thread
at a time each); __init__.py therefore holds a per-object lock around calls on one object.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, c_bool, c_char_p, c_double, c_int, c_int32, c_int64,
                    c_size_t, c_uint32, c_void_p)
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

LIBRARY_NAME = "libonnxruntime-genai.so"
ENV_VAR = "EBB_GENAI_LIBRARY"
# Build folders tried under <repo>/build, in this order (see the module docstring).
_BUILD_CONFIGS = ("debug", "release", "relwithdebinfo")


def candidate_paths() -> List[Tuple[str, str]]:
    """The places tried after $EBB_GENAI_LIBRARY, in order: (how it was found, path or name)."""
    here = Path(__file__).resolve().parent
    out: List[Tuple[str, str]] = [("next to the package", str(here / LIBRARY_NAME))]
    # <build>/python/onnxruntime_genai -> <build>/genai/ (a CMake build folder: CMakeCache.txt)
    build = here.parent.parent
    if (build / "CMakeCache.txt").is_file():
        out.append(("the build tree holding the package", str(build / "genai" / LIBRARY_NAME)))
    # <repo>/python/onnxruntime_genai -> <repo>/build/<config>/genai/
    repo = here.parent.parent
    for cfg in _BUILD_CONFIGS:
        out.append((f"build/{cfg}", str(repo / "build" / cfg / "genai" / LIBRARY_NAME)))
    found = ctypes.util.find_library("onnxruntime-genai")
    if found:
        out.append(("ctypes.util.find_library", found))
    out.append(("the dynamic loader's search path", LIBRARY_NAME))
    return out


def _load() -> Tuple[ctypes.CDLL, str]:
    """Loads the library (see the module docstring for the order); ImportError naming every place
    tried, and why each failed, when none loads."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        try:
            return ctypes.CDLL(explicit), explicit
        except OSError as e:
            raise ImportError(
                f"onnxruntime_genai: ${ENV_VAR}={explicit!r} does not load: {e}") from e
    tried = []
    for how, path in candidate_paths():
        is_file_path = os.sep in path
        if is_file_path and not os.path.exists(path):
            tried.append(f"  {path} ({how}): not there")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"  {path} ({how}): {e}")
    raise ImportError(
        f"onnxruntime_genai: cannot find {LIBRARY_NAME} (ebb's onnxruntime-genai C library). "
        f"Set ${ENV_VAR} to its full path (in a build tree: <build>/genai/{LIBRARY_NAME}). "
        "Tried:\n" + "\n".join(tried))


lib, library_path = _load()

# ---- Signatures. Handles are c_void_p (opaque); OgaResult* is c_void_p so that ctypes hands back
# None on success and the address on failure.
_R = c_void_p  # OgaResult*
_P = c_void_p  # any Oga handle
_PP = POINTER(c_void_p)
_STR = c_char_p

LOG_CALLBACK = CFUNCTYPE(None, c_void_p, c_size_t)  # void (*)(const char*, size_t)

_SIGNATURES: Dict[str, Tuple[object, Tuple[object, ...]]] = {
    # process-wide
    "OgaShutdown": (None, ()),
    "OgaResultGetError": (c_void_p, (_R,)),
    "OgaDestroyResult": (None, (_R,)),
    "OgaDestroyString": (None, (c_void_p,)),
    "OgaSetLogBool": (_R, (_STR, c_bool)),
    "OgaSetLogString": (_R, (_STR, _STR)),
    "OgaSetLogCallback": (_R, (LOG_CALLBACK,)),
    "OgaSetCurrentGpuDeviceId": (_R, (c_int,)),
    "OgaGetCurrentGpuDeviceId": (_R, (POINTER(c_int),)),
    # sequences
    "OgaCreateSequences": (_R, (_PP,)),
    "OgaDestroySequences": (None, (_P,)),
    "OgaSequencesCount": (c_size_t, (_P,)),
    "OgaAppendTokenSequence": (_R, (POINTER(c_int32), c_size_t, _P)),
    "OgaSequencesGetSequenceCount": (c_size_t, (_P, c_size_t)),
    "OgaSequencesGetSequenceData": (c_void_p, (_P, c_size_t)),
    # string arrays
    "OgaCreateStringArray": (_R, (_PP,)),
    "OgaCreateStringArrayFromStrings": (_R, (POINTER(c_char_p), c_size_t, _PP)),
    "OgaDestroyStringArray": (None, (_P,)),
    "OgaStringArrayAddString": (_R, (_P, _STR)),
    "OgaStringArrayGetCount": (_R, (_P, POINTER(c_size_t))),
    "OgaStringArrayGetString": (_R, (_P, c_size_t, _PP)),
    # configs and models
    "OgaCreateConfig": (_R, (_STR, _PP)),
    "OgaCreateConfigFromPackageEp": (_R, (_STR, _STR, _PP)),
    "OgaConfigClearProviders": (_R, (_P,)),
    "OgaConfigAppendProvider": (_R, (_P, _STR)),
    "OgaConfigSetProviderOption": (_R, (_P, _STR, _STR, _STR)),
    "OgaConfigAddModelData": (_R, (_P, _STR, c_void_p, c_size_t)),
    "OgaConfigRemoveModelData": (_R, (_P, _STR)),
    "OgaConfigOverlay": (_R, (_P, _STR)),
    "OgaConfigSetDecoderProviderOptionsHardwareDeviceType": (_R, (_P, _STR, _STR)),
    "OgaConfigSetDecoderProviderOptionsHardwareDeviceId": (_R, (_P, _STR, c_uint32)),
    "OgaConfigSetDecoderProviderOptionsHardwareVendorId": (_R, (_P, _STR, c_uint32)),
    "OgaConfigClearDecoderProviderOptionsHardwareDeviceType": (_R, (_P, _STR)),
    "OgaConfigClearDecoderProviderOptionsHardwareDeviceId": (_R, (_P, _STR)),
    "OgaConfigClearDecoderProviderOptionsHardwareVendorId": (_R, (_P, _STR)),
    "OgaDestroyConfig": (None, (_P,)),
    "OgaCreateModel": (_R, (_STR, _PP)),
    "OgaCreateModelFromConfig": (_R, (_P, _PP)),
    "OgaModelGetType": (_R, (_P, _PP)),
    "OgaModelGetDeviceType": (_R, (_P, _PP)),
    "OgaDestroyModel": (None, (_P,)),
    # generator params
    "OgaCreateGeneratorParams": (_R, (_P, _PP)),
    "OgaDestroyGeneratorParams": (None, (_P,)),
    "OgaGeneratorParamsSetSearchNumber": (_R, (_P, _STR, c_double)),
    "OgaGeneratorParamsSetSearchBool": (_R, (_P, _STR, c_bool)),
    "OgaGeneratorParamsGetSearchNumber": (_R, (_P, _STR, POINTER(c_double))),
    "OgaGeneratorParamsGetSearchBool": (_R, (_P, _STR, POINTER(c_bool))),
    "OgaGeneratorParamsSetGuidance": (_R, (_P, _STR, _STR, c_bool)),
    # generators
    "OgaCreateGenerator": (_R, (_P, _P, _PP)),
    "OgaDestroyGenerator": (None, (_P,)),
    "OgaGenerator_IsDone": (c_bool, (_P,)),
    "OgaGenerator_IsSessionTerminated": (c_bool, (_P,)),
    "OgaGenerator_SetModelInput": (_R, (_P, _STR, _P)),
    "OgaGenerator_SetInputs": (_R, (_P, _P)),
    "OgaGenerator_AppendTokens": (_R, (_P, POINTER(c_int32), c_size_t)),
    "OgaGenerator_TokenCount": (c_size_t, (_P,)),
    "OgaGenerator_GenerateNextToken": (_R, (_P,)),
    "OgaGenerator_GetNextTokens": (_R, (_P, _PP, POINTER(c_size_t))),
    "OgaGenerator_SetRuntimeOption": (_R, (_P, _STR, _STR)),
    "OgaGenerator_RewindTo": (_R, (_P, c_size_t)),
    "OgaGenerator_GetInput": (_R, (_P, _STR, _PP)),
    "OgaGenerator_GetOutput": (_R, (_P, _STR, _PP)),
    "OgaGenerator_GetLogits": (_R, (_P, _PP)),
    "OgaGenerator_SetLogits": (_R, (_P, _P)),
    "OgaGenerator_GetSequenceCount": (c_size_t, (_P, c_size_t)),
    "OgaGenerator_GetSequenceData": (c_void_p, (_P, c_size_t)),
    # tokenizers
    "OgaCreateTokenizer": (_R, (_P, _PP)),
    "OgaDestroyTokenizer": (None, (_P,)),
    "OgaUpdateTokenizerOptions": (_R, (_P, POINTER(c_char_p), POINTER(c_char_p), c_size_t)),
    "OgaTokenizerGetBosTokenId": (_R, (_P, POINTER(c_int32))),
    "OgaTokenizerGetEosTokenIds": (_R, (_P, _PP, POINTER(c_size_t))),
    "OgaTokenizerGetPadTokenId": (_R, (_P, POINTER(c_int32))),
    "OgaTokenizerEncode": (_R, (_P, _STR, _P)),
    "OgaTokenizerEncodeBatch": (_R, (_P, POINTER(c_char_p), c_size_t, _PP)),
    "OgaTokenizerDecodeBatch": (_R, (_P, _P, _PP)),
    "OgaTokenizerToTokenId": (_R, (_P, _STR, POINTER(c_int32))),
    "OgaTokenizerDecode": (_R, (_P, POINTER(c_int32), c_size_t, _PP)),
    "OgaTokenizerApplyChatTemplate": (_R, (_P, _STR, _STR, _STR, c_bool, _PP)),
    "OgaTokenizerApplyChatTemplateWithOptions": (_R, (_P, _STR, _STR, _STR, _STR, c_bool, _PP)),
    "OgaCreateTokenizerStream": (_R, (_P, _PP)),
    "OgaDestroyTokenizerStream": (None, (_P,)),
    "OgaTokenizerStreamDecode": (_R, (_P, c_int32, _PP)),
    # tensors and named tensors
    "OgaCreateTensorFromBuffer": (_R, (c_void_p, POINTER(c_int64), c_size_t, c_int, _PP)),
    "OgaDestroyTensor": (None, (_P,)),
    "OgaTensorGetType": (_R, (_P, POINTER(c_int))),
    "OgaTensorGetShapeRank": (_R, (_P, POINTER(c_size_t))),
    "OgaTensorGetShape": (_R, (_P, POINTER(c_int64), c_size_t)),
    "OgaTensorGetData": (_R, (_P, _PP)),
    "OgaCreateNamedTensors": (_R, (_PP,)),
    "OgaDestroyNamedTensors": (None, (_P,)),
    "OgaNamedTensorsGet": (_R, (_P, _STR, _PP)),
    "OgaNamedTensorsSet": (_R, (_P, _STR, _P)),
    "OgaNamedTensorsDelete": (_R, (_P, _STR)),
    "OgaNamedTensorsCount": (_R, (_P, POINTER(c_size_t))),
    "OgaNamedTensorsGetNames": (_R, (_P, _PP)),
    # what ebb does not support: each returns a result naming itself
    "OgaLoadImages": (_R, (_P, _PP)),
    "OgaLoadImagesFromBuffers": (_R, (POINTER(c_void_p), POINTER(c_size_t), c_size_t, _PP)),
    "OgaDestroyImages": (None, (_P,)),
    "OgaLoadAudios": (_R, (_P, _PP)),
    "OgaLoadAudiosFromBuffers": (_R, (POINTER(c_void_p), POINTER(c_size_t), c_size_t, _PP)),
    "OgaDestroyAudios": (None, (_P,)),
    "OgaCreateMultiModalProcessor": (_R, (_P, _PP)),
    "OgaDestroyMultiModalProcessor": (None, (_P,)),
    "OgaProcessorProcessImagesAndAudios": (_R, (_P, _STR, _P, _P, _PP)),
    "OgaProcessorProcessImagesAndAudiosAndPrompts": (_R, (_P, _P, _P, _P, _PP)),
    "OgaProcessorDecode": (_R, (_P, POINTER(c_int32), c_size_t, _PP)),
    "OgaCreateTokenizerStreamFromProcessor": (_R, (_P, _PP)),
    "OgaCreateAdapters": (_R, (_P, _PP)),
    "OgaDestroyAdapters": (None, (_P,)),
    "OgaLoadAdapter": (_R, (_P, _STR, _STR)),
    "OgaUnloadAdapter": (_R, (_P, _STR)),
    "OgaSetActiveAdapter": (_R, (_P, _P, _STR)),
    "OgaCreateEngine": (_R, (_P, _PP)),
    "OgaDestroyEngine": (None, (_P,)),
    "OgaEngineStep": (_R, (_P, _PP)),
    "OgaEngineHasPendingRequests": (_R, (_P, POINTER(c_bool))),
    "OgaEngineAddRequest": (_R, (_P, _P)),
    "OgaEngineRemoveRequest": (_R, (_P, _P)),
    "OgaCreateRequest": (_R, (_P, _PP)),
    "OgaDestroyRequest": (None, (_P,)),
    "OgaRequestAddTokens": (_R, (_P, _P)),
    "OgaRequestHasUnseenTokens": (_R, (_P, POINTER(c_bool))),
    "OgaRequestGetUnseenToken": (_R, (_P, POINTER(c_int32))),
    "OgaRequestIsDone": (_R, (_P, POINTER(c_bool))),  # genai's; not in ebb's header
    "OgaRequestSetOpaqueData": (_R, (_P, c_void_p)),
    "OgaRequestGetOpaqueData": (_R, (_P, _PP)),
    "OgaCreateStreamingProcessor": (_R, (_P, _PP)),
    "OgaDestroyStreamingProcessor": (None, (_P,)),
    "OgaStreamingProcessorProcess": (_R, (_P, c_void_p, c_size_t, _PP)),
    "OgaStreamingProcessorFlush": (_R, (_P, _PP)),
    "OgaStreamingProcessorSetOption": (_R, (_P, _STR, _STR)),
    "OgaStreamingProcessorGetOption": (_R, (_P, _STR, _PP)),
    "OgaRegisterExecutionProviderLibrary": (None, (_STR, _STR)),
    "OgaUnregisterExecutionProviderLibrary": (None, (_STR,)),
}

_bound: Dict[str, Callable] = {}


def fn(name: str) -> Callable:
    """The C function `name` with its signature set (bound on first use, so a library that lacks
    one function still serves the others). RuntimeError naming it when the library lacks it."""
    f = _bound.get(name)
    if f is not None:
        return f
    restype, argtypes = _SIGNATURES[name]
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise RuntimeError(f"{name} is not exported by {library_path}") from None
    f.restype = restype
    f.argtypes = list(argtypes)
    _bound[name] = f
    return f


# ---- Results and strings

def check(result: Optional[int]) -> None:
    """Turns a failed call's OgaResult* into RuntimeError carrying the library's message, freeing
    the result first. genai's Python module raises RuntimeError too (its C++ wrapper throws
    std::runtime_error), so `except RuntimeError` code written for genai keeps working."""
    if not result:
        return
    msg_ptr = fn("OgaResultGetError")(result)
    message = ctypes.string_at(msg_ptr).decode("utf-8", "replace") if msg_ptr else "(no message)"
    fn("OgaDestroyResult")(result)
    raise RuntimeError(message)


def call(name: str, *args) -> None:
    """Calls `name` (which returns OgaResult*) and raises on failure (check())."""
    check(fn(name)(*args))


def take_string(ptr: Optional[int]) -> str:
    """Copies a string the caller owns (a `const char**` out) and frees it with OgaDestroyString."""
    if not ptr:
        return ""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        fn("OgaDestroyString")(ptr)


def borrow_string(ptr: Optional[int]) -> str:
    """Copies a string the library keeps owning (OgaTokenizerStreamDecode's, a string array's)."""
    return ctypes.string_at(ptr).decode("utf-8", "replace") if ptr else ""


def encode(s, what: str = "argument") -> bytes:
    """A str (or os.PathLike, or bytes) as UTF-8 for the C API, which reads UTF-8 everywhere."""
    if isinstance(s, bytes):
        return s
    if isinstance(s, os.PathLike):
        s = os.fspath(s)
        if isinstance(s, bytes):
            return s
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, not {type(s).__name__}")
    return s.encode("utf-8")


def c_strings(items) -> Tuple[ctypes.Array, List[bytes]]:
    """A `const char* const*` array over `items` (UTF-8), plus the bytes that back it (keep them
    referenced for as long as the array is used)."""
    data = [encode(s, "string") for s in items]
    arr = (c_char_p * max(len(data), 1))(*data)
    return arr, data


# ---- Shutdown

finalizing = False


def _at_exit() -> None:
    """Detaches a Python log callback (ebb's threads may still log while the interpreter goes
    away, and calling into a dying interpreter crashes) and calls OgaShutdown, as genai's module
    does when it is unloaded. Handles still alive afterwards are not destroyed (see
    __init__._Handle): after OgaShutdown genai's own library may have torn its runtime down, and
    the process is ending anyway."""
    global finalizing
    finalizing = True
    try:
        check(fn("OgaSetLogCallback")(LOG_CALLBACK()))  # a null function pointer
    except Exception:  # noqa: BLE001 (best effort at exit)
        pass
    try:
        fn("OgaShutdown")()
    except Exception:  # noqa: BLE001
        pass


atexit.register(_at_exit)
