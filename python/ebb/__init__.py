"""ebb: a local LLM runtime whose memory is bounded, controllable and visible.

A thin layer over ebb's C++ API (pybind11): the same names, the same options
(docs/options.md), the same statistics. See docs/python.md.

    import ebb
    rt = ebb.Runtime(memory_limit="8GiB")
    with rt.load("models/demo", options={"kv_cache.max_bytes": "1GiB"}) as model:
        print(model.generate("Once upon a time", max_new_tokens=32).text)
        for piece in model.stream("Once upon a time", max_new_tokens=32):
            print(piece, end="", flush=True)
        model.runtime.shrink_every(100)
        print(model.runtime.stats()["kv"])

The same calls against a running `ebb serve`: rt = ebb.connect() (ebb/remote.py).
"""
from __future__ import annotations

import json
import operator
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _ebb
from ._ebb import (  # noqa: F401  (re-exported)
    Cancelled,
    DeadlineExceeded,
    Error,
    FailedPrecondition,
    Generator,
    Internal,
    InvalidArgument,
    NotFound,
    ModelControls,
    ResourceExhausted,
    Tokenizer,
    Unavailable,
    available_providers,
    option_table,
    ort_version,
    parse_byte_size,
)


__version__ = _ebb.version()
__all__ = [
    "Runtime", "Model", "GenerateResult", "EmbedResult", "connect", "RemoteRuntime", "RemoteModel",
    "RemoteModelControls", "Generator", "ModelControls",
    "Tokenizer",
    "Error", "InvalidArgument", "NotFound", "ResourceExhausted", "FailedPrecondition",
    "Cancelled", "DeadlineExceeded", "Unavailable", "Internal",
    "available_providers", "option_table", "ort_version", "parse_byte_size",
]


@dataclass
class GenerateResult:
    """What one generation produced (row 0 of ebb::GenerateResult)."""

    text: str
    ids: List[int]
    prompt_ids: List[int]
    finish_reason: str  # "stop", "length", "cancelled" or "error"
    usage: Dict[str, int] = field(default_factory=dict)
    max_length: int = 0
    error: Optional[Error] = None  # what ended an "error" result
    # With logprobs=True (or top_logprobs=N): one entry per generated token, {"id", "token",
    # "logprob", "top_logprobs": [{"id", "token", "logprob"}, ...]} (ebb.connect: no ids, and
    # the service leaves out EOS tokens). None when not asked for.
    logprobs: Optional[List[Dict[str, Any]]] = None

    @classmethod
    def _from(cls, d: dict) -> "GenerateResult":
        return cls(**d)


@dataclass
class EmbedResult:
    """What one embedding request produced: one vector per input, in input order."""

    embeddings: List[List[float]]
    usage: Dict[str, int] = field(default_factory=dict)  # prompt_tokens, total_tokens


def _embed_options(input, dimensions, options, embed_options):
    """(rows, options) of an embed() call: a str is one row; a list of ints is one token-id
    row; keyword arguments k=v are the request keys embed.k (pooling, normalize, truncate,
    batch_size, max_batch_tokens); dimensions is embed.dimensions."""
    if isinstance(input, str):
        rows: list = [input]
    else:
        rows = list(input)
        if rows and all(isinstance(i, int) and not isinstance(i, bool) for i in rows):
            rows = [rows]
        rows = [r if isinstance(r, str) else [int(i) for i in r] for r in rows]
    opts: Dict[str, Any] = dict(options or {})
    for k, v in embed_options.items():
        if v is not None:
            opts[k if k.startswith("embed.") else "embed." + k] = v
    if dimensions is not None:
        opts["embed.dimensions"] = dimensions
    return rows, opts


class _PieceIterator:
    """Iterator of text pieces; .result holds the GenerateResult once exhausted.

    Closing it (or leaving a ``for`` loop early, or KeyboardInterrupt) cancels the request and
    waits for it to end, so its KV cache is freed.
    """

    def __init__(self, stream):
        self._stream = stream
        self.result: Optional[GenerateResult] = None

    def __iter__(self):
        return self

    def __next__(self) -> str:
        try:
            return self._stream.next()
        except StopIteration:
            r = self._stream.result()
            self.result = GenerateResult._from(r) if r is not None else None
            raise
        except BaseException:  # KeyboardInterrupt, an ebb.Error: the request ends, KV freed
            self._stream.close()
            raise

    def close(self) -> None:
        self._stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._stream.close()
        except Exception:  # noqa: BLE001
            pass


class Model:
    """A model loaded into a Runtime. A context manager: leaving the block unloads it."""

    def __init__(self, impl):
        self._impl = impl

    @property
    def id(self) -> str:
        return self._impl.id

    @property
    def info(self) -> Dict[str, Any]:
        return self._impl.info

    @property
    def loaded(self) -> bool:
        return self._impl.loaded

    @property
    def runtime(self) -> ModelControls:
        """Tier 2 controls: shrink_arena(), shrink_every(n), set_option(k, v), stats(), ..."""
        return self._impl.runtime

    @property
    def tokenizer(self) -> Optional[Tokenizer]:
        return self._impl.tokenizer

    def unload(self, force: bool = False) -> None:
        """Unloads the model (force: instead of refusing, wait for generations running on other
        threads and detach idle generators, whose next call then fails)."""
        self._impl.unload(force)

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        if self._impl.loaded:
            self._impl.unload(False)

    def generate(self, prompt: Union[str, Sequence[int]], **request_options) -> GenerateResult:
        """Generates from a prompt (str) or token ids. Options: max_new_tokens, stop,
        max_length, temperature, top_k, top_p, do_sample, seed, presence_penalty,
        frequency_penalty, logit_bias={token id: bias}, logprobs, top_logprobs, ...,
        options={key: value}. Structured output (docs/structured_output.md): json_schema=
        (a dict or its JSON text), regex=, grammar= (GBNF text), or OpenAI's response_format=
        {"type": "json_object"} / {"type": "json_schema", "json_schema": {"schema": ...}}."""
        opts = _constraint_options(request_options)
        return GenerateResult._from(self._impl._generate(_input(prompt), None, **opts))

    def stream(self, prompt: Union[str, Sequence[int]], **request_options) -> Iterator[str]:
        """Like generate(), but yields the text piece by piece as it is generated."""
        opts = _constraint_options(request_options)
        return _PieceIterator(self._impl._stream(_input(prompt), **opts))

    def chat(self, messages: List[Dict[str, str]], stream: bool = False, **request_options):
        """Renders `messages` with the model's chat template and generates the reply."""
        opts = _constraint_options(request_options)
        if stream:
            return _PieceIterator(self._impl._stream_chat(_messages(messages), **opts))
        return GenerateResult._from(self._impl._chat(_messages(messages), None, **opts))

    def embed(self, input: Union[str, Sequence[str], Sequence[Sequence[int]]],
              dimensions: Optional[int] = None, options: Optional[Dict[str, Any]] = None,
              **embed_options) -> EmbedResult:
        """Embeds texts or token-id rows with an encoder model (ebb::Embed; docs/embeddings.md).
        input: a str, a list of str, a list of token ids (one row) or of token-id rows.
        dimensions: keep the first N values (renormalised); options / keyword arguments: the
        embed.* request keys (pooling="mean", normalize=False, truncate="error", ...).
        FailedPrecondition on a generating model."""
        rows, opts = _embed_options(input, dimensions, options, embed_options)
        return EmbedResult(**self._impl._embed(rows, opts))

    def render_chat(self, messages: List[Dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The prompt that chat() would feed the model."""
        return self._impl.render_chat(_messages(messages), add_generation_prompt)

    def generator(self, **params) -> Generator:
        """A token-level generator (its own KV cache; freed by close() or when collected)."""
        return self._impl.generator(**_constraint_options(params))

    def __repr__(self) -> str:
        return f"<ebb.Model id={self.id!r} loaded={self.loaded}>"


def _constraint_options(opts: Dict[str, Any]) -> Dict[str, Any]:
    """The structured-output keyword arguments as the request keys json_schema, regex and
    grammar take them (text): a json_schema dict becomes its JSON text, and OpenAI's
    response_format becomes json_schema. Other keys pass unchanged."""
    opts = dict(opts)
    rf = opts.pop("response_format", None)
    if rf is not None:
        if not isinstance(rf, dict) or not isinstance(rf.get("type"), str):
            raise InvalidArgument("response_format must be a dict with a 'type': \"text\", "
                                  "\"json_object\" or \"json_schema\"")
        kind = rf["type"]
        if kind == "json_object":
            schema = {"type": "object"}
        elif kind == "json_schema":
            js = rf.get("json_schema")
            if not isinstance(js, dict) or "schema" not in js:
                raise InvalidArgument("response_format {\"type\": \"json_schema\"} needs "
                                      "\"json_schema\": {\"name\": ..., \"schema\": {...}}")
            schema = js["schema"]
        elif kind == "text":
            schema = None
        else:
            raise InvalidArgument(f"response_format type {kind!r} is not one of \"text\", "
                                  "\"json_object\", \"json_schema\"")
        if schema is not None:
            if opts.get("json_schema") is not None:
                raise InvalidArgument("give json_schema= or response_format=, not both")
            opts["json_schema"] = schema
    js = opts.get("json_schema")
    if isinstance(js, (dict, list, bool)):
        opts["json_schema"] = json.dumps(js)
    return opts


def _messages(messages):
    """Chat messages as a list (the extension checks each one); a str or a dict is a TypeError,
    not a list of its characters or keys."""
    if isinstance(messages, (str, bytes, dict)) or not hasattr(messages, "__iter__"):
        raise TypeError("messages must be a list of {'role': str, 'content': str} dicts, not "
                        f"{type(messages).__name__}")
    return list(messages)


def _input(prompt):
    """A prompt as the extension takes it: a str, or a list of int token ids. Anything else is
    a TypeError naming the argument (a float id would silently run another token)."""
    if isinstance(prompt, str):
        return prompt
    if prompt is None or isinstance(prompt, (bytes, dict)) or not hasattr(prompt, "__iter__"):
        raise TypeError("prompt must be a str or a list of int token ids, not "
                        f"{type(prompt).__name__}")
    ids = list(prompt)
    for i, t in enumerate(ids):
        if isinstance(t, bool) or not hasattr(type(t), "__index__"):
            raise TypeError(f"prompt[{i}] must be an int token id, not {type(t).__name__} "
                            f"({t!r})")
    return [operator.index(t) for t in ids]


class Runtime:
    """The owner of named models and their shared memory budget.

    memory_limit: memory.limit, the weights (their files' bytes, plus ebb's anonymous int4 repack
    without a model-cache entry; from load to unload) plus the
    KV cache of all the runtime's models together ("8GiB" or an int; None: no limit). A load or
    a generation that would go over it raises ResourceExhausted; ORT's arena is not counted
    (cap it with arena={"max_mem": ...}).
    arena: the process-wide CPU arena, e.g. {"max_mem": "2GiB",
    "arena_extend_strategy": "kSameAsRequested"} (keys with or without "arena.").
    """

    def __init__(self, memory_limit: Union[str, int, None] = None,
                 arena: Optional[Dict[str, Any]] = None,
                 options: Optional[Dict[str, Any]] = None):
        self._impl = _ebb._Runtime(memory_limit, arena, options)

    def load(self, path: str, id: Optional[str] = None,
             session_options: Optional[Dict[str, Any]] = None,
             provider_options: Optional[Dict[str, Dict[str, Any]]] = None,
             options: Optional[Dict[str, Any]] = None,
             run_options: Optional[Dict[str, Any]] = None,
             chat_template: Union[str, "os.PathLike[str]", None] = None) -> Model:
        """Loads a model folder (a str or os.PathLike). id defaults to the folder's name.
        chat_template: the option of that name, a Jinja chat template file (or its text) that
        chat() renders messages with, for a folder without one or to replace it; parsed now (a
        bad template raises InvalidArgument naming the file, line and column)."""
        return Model(self._impl.load(path, id, session_options, provider_options,
                                     run_options, options, chat_template))

    def get(self, id: str) -> Model:
        return Model(self._impl.get(id))

    def unload(self, id: str, force: bool = False) -> None:
        self._impl.unload(id, force)

    def models(self) -> List[Dict[str, Any]]:
        """Every loaded model with its memory figures (Runtime::List)."""
        return self._impl.models()

    def stats(self) -> Dict[str, Any]:
        """Process figures and KV summed over this runtime's models."""
        return self._impl.stats()

    @property
    def memory_limit(self) -> int:
        return self._impl.memory_limit

    @memory_limit.setter
    def memory_limit(self, value: Union[str, int]) -> None:
        self._impl.memory_limit = value


# ebb.connect(): the same calls against a running `ebb serve` (imported last: it uses the
# classes above).
from .remote import (  # noqa: E402
    RemoteModel, RemoteModelControls, RemoteRuntime, connect)
