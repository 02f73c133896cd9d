"""ebb.connect(): the in-process Python API, against a running `ebb serve` over its HTTP API.

    rt = ebb.Runtime()          # in process
    rt = ebb.connect()          # the same calls, against the service (docs/python.md)

A RemoteRuntime, its RemoteModels and their RemoteModelControls have the methods of
ebb.Runtime, ebb.Model and ebb.ModelControls, with the same arguments, results and exception
classes; each call is one or more requests to the service's OpenAI and memory endpoints
(docs/http_api.md). Only Python's standard library is used (http.client, json).

What differs (each refused with a clear ebb error rather than silently different):
  * prompts are text: token-id prompts, tokenizer, generator() and render_chat() need the
    in-process runtime (the HTTP API has no route for them);
  * load(path, id=...) loads a model the service knows (its --models-dir, --model,
    --models-file); a path that is not where the service has that id is InvalidArgument;
  * results carry the text, finish_reason and usage, but not token ids (ids and prompt_ids
    are empty lists);
  * the service manages model lifetime: an idle model is unloaded after its keep-alive (pass
    keep_alive=/pin= to load()), and a request to an unloaded model loads it again.
"""
from __future__ import annotations

import http.client
import json
import os
import pathlib
import urllib.parse
from typing import (TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Type,
                    Union)

from . import _ebb
from ._ebb import (
    Cancelled,
    DeadlineExceeded,
    Error,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
)

if TYPE_CHECKING:  # the package's result classes (ebb/__init__.py imports this module last)
    from . import EmbedResult, GenerateResult

__all__ = ["connect", "service_url", "RemoteRuntime", "RemoteModel", "RemoteModelControls"]

_Value = Union[str, int, float, bool]

_START_HINT = ("start the service with `ebb service start` (or run `ebb serve` and pass its "
               "address: ebb.connect(\"http://127.0.0.1:11435\"))")

# The service's `ebb_code` (ebb::ErrorCode's name) -> the class the in-process call raises: the
# one mapping; the OpenAI `code` and the status below are for servers older than ebb_code.
_EBB_CODE_CLASSES: Dict[str, Type[Error]] = {
    "invalid_argument": InvalidArgument,
    "not_found": NotFound,
    "resource_exhausted": ResourceExhausted,
    "failed_precondition": FailedPrecondition,
    "cancelled": Cancelled,
    "deadline_exceeded": DeadlineExceeded,
    "unavailable": Unavailable,
    "internal": Internal,
}
# The service's OpenAI error `code` -> the exception class the in-process runtime raises.
_CODE_CLASSES: Dict[str, Type[Error]] = {
    "invalid_json": InvalidArgument,
    "missing": InvalidArgument,
    "invalid_value": InvalidArgument,
    "unsupported_value": InvalidArgument,
    "unsupported_parameter": InvalidArgument,
    "invalid_argument": InvalidArgument,
    "context_length_exceeded": InvalidArgument,
    "no_chat_template": InvalidArgument,  # as the in-process chat() without a template
    "wrong_model_kind": FailedPrecondition,  # as ebb::Embed / ebb::Generate refuse the model
    "invalid_api_key": FailedPrecondition,
    "request_too_large": InvalidArgument,
    "model_not_found": NotFound,
    "model_not_loaded": NotFound,
    "not_found": NotFound,
    "unknown_route": NotFound,
    "failed_precondition": FailedPrecondition,
    "prefix_cache_off": FailedPrecondition,  # as PinPrefix with prefix_cache.max_bytes=0
    "queue_full": ResourceExhausted,
    "memory_budget_exceeded": ResourceExhausted,
    "out_of_memory": ResourceExhausted,
    "cancelled": Cancelled,
    "deadline_exceeded": DeadlineExceeded,
    "draining": Unavailable,
    "unavailable": Unavailable,
    "internal": Internal,
}
# When a response has no known code: by HTTP status.
_STATUS_CLASSES: Dict[int, Type[Error]] = {
    400: InvalidArgument, 401: FailedPrecondition, 403: FailedPrecondition, 404: NotFound,
    408: DeadlineExceeded, 409: FailedPrecondition, 413: InvalidArgument, 415: InvalidArgument,
    429: ResourceExhausted, 499: Cancelled, 503: Unavailable, 504: DeadlineExceeded,
    507: ResourceExhausted,
}


def _error_from(status: int, payload: Any) -> Error:
    """The ebb exception for an error response or an SSE error event ({"error": {...}})."""
    err = payload.get("error") if isinstance(payload, dict) else None
    ebb_code = None
    if isinstance(err, dict):
        message = str(err.get("message") or f"HTTP {status}")
        code = err.get("code")
        param = err.get("param")
        ebb_code = err.get("ebb_code")
    else:
        message, code, param = (f"HTTP {status}: {str(payload)[:500]}", None, None)
    cls = (_EBB_CODE_CLASSES.get(ebb_code if isinstance(ebb_code, str) else "")
           or _CODE_CLASSES.get(code or "") or _STATUS_CLASSES.get(status, Internal))
    if code == "invalid_api_key":
        message += " (pass api_key= to ebb.connect, or set $EBB_API_KEY)"
    e = cls(message)
    e.http_status = status  # type: ignore[attr-defined]
    e.api_code = code  # type: ignore[attr-defined]
    e.param = param  # type: ignore[attr-defined]
    return e


def _option_text(key: str, v: Any) -> str:
    """A Python option value as the in-process runtime writes it (True -> "true", 40 -> "40";
    logit_bias {50256: -100} -> '{"50256": -100}', the JSON object the option takes: the
    service checks ids and biases with the one check every surface uses)."""
    if key == "logit_bias" and isinstance(v, dict):
        try:
            return json.dumps(v, allow_nan=False)
        except (TypeError, ValueError):
            raise InvalidArgument(f"logit_bias: {v!r} is not a dict of token id (int) -> bias "
                                  "(a number from -100 to 100)") from None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return str(v)
    raise InvalidArgument(f"option value {v!r} must be a str, int, float or bool")


def _options_json(d: Optional[Dict[str, Any]]) -> Dict[str, str]:
    return {str(k): _option_text(str(k), v) for k, v in (d or {}).items()}


# ---- Where the service is ---------------------------------------------------------------------

def state_dir() -> pathlib.Path:
    """The service's state directory: $EBB_HOME, else $XDG_STATE_HOME/ebb, else
    ~/.local/state/ebb (where `ebb service start` writes service.json)."""
    return pathlib.Path(_ebb.service_state_directory())


def _discover() -> Tuple[str, str, Optional[str]]:
    """The running service's address, where it came from, and the key it needs (None: not
    known): $EBB_URL, else service.json in state_dir() when its process is alive with the
    recorded start time (the library's rule, ebb/service.h, as `ebb ps` applies it). Raises
    ebb.Unavailable naming how to start one when neither is there or the file is stale,
    ebb.InvalidArgument when service.json cannot be read."""
    if os.environ.get("EBB_URL"):
        return os.environ["EBB_URL"], "$EBB_URL", None
    f = state_dir() / "service.json"
    found = _ebb.find_running_service()  # InvalidArgument names an unreadable file
    if found is None:
        if f.is_file():
            raise Unavailable(f"no ebb service is running: {f} is stale (the process it names "
                              f"has exited or its pid now belongs to another process); "
                              f"{_START_HINT}")
        raise Unavailable(f"no ebb service is running: ebb.connect() was given no url, $EBB_URL is "
                          f"not set and there is no {f}; {_START_HINT}")
    return found["url"], found["state_file"], found["api_key"] or None


def service_url() -> Tuple[str, str]:
    """The running service's address and where it came from (see _discover)."""
    url, origin, _ = _discover()
    return url, origin


# ---- HTTP ---------------------------------------------------------------------------------------

class _Client:
    """One HTTP connection per call (so threads may share a RemoteRuntime)."""

    def __init__(self, url: str, api_key: Optional[str], timeout: Optional[float], origin: str):
        u = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise InvalidArgument(f"{url!r} ({origin}) is not an http:// address of an ebb service, "
                                  "e.g. http://127.0.0.1:11435")
        self.url = f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self._api_key = api_key
        self._timeout = timeout
        self._origin = origin

    def _conn(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self._timeout)

    def _unreachable(self, e: BaseException) -> Unavailable:
        where = "" if self._origin == "url" else f" (from {self._origin})"
        return Unavailable(f"no ebb service answers at {self.url}{where}: {e}; {_START_HINT}")

    def open(self, method: str, path: str, body: Any = None
             ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Sends a request; returns the open connection and its response (status < 400).
        Raises the mapped ebb error for an error response, Unavailable when unreachable."""
        headers = {"Accept": "application/json, text/event-stream"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        conn = self._conn()
        try:
            conn.request(method, self._prefix + path, body=data, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise self._unreachable(e) from None
        if resp.status >= 400:
            raw = resp.read()
            conn.close()
            try:
                payload: Any = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            raise _error_from(resp.status, payload)
        return conn, resp

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One request; the parsed JSON response."""
        conn, resp = self.open(method, path, body)
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise self._unreachable(e) from None
        finally:
            conn.close()
        return json.loads(raw.decode("utf-8")) if raw else None


def _quote(model_id: str) -> str:
    return urllib.parse.quote(model_id, safe="")


# ---- Results ------------------------------------------------------------------------------------

def _result(text: str, finish: str, usage: Dict[str, Any],
            error: Optional[Error] = None,
            logprobs: Optional[List[Dict[str, Any]]] = None) -> "GenerateResult":
    from . import GenerateResult  # the package's own class (ebb/__init__.py)
    return GenerateResult(text=text, ids=[], prompt_ids=[], finish_reason=finish,
                          usage={"prompt_tokens": int(usage.get("prompt_tokens", 0)),
                                 "completion_tokens": int(usage.get("completion_tokens", 0)),
                                 "cached_tokens": int((usage.get("prompt_tokens_details") or {})
                                                      .get("cached_tokens", 0))},
                          max_length=0, error=error, logprobs=logprobs)


def _chunk_logprobs(choice: Dict[str, Any], chat: bool) -> List[Dict[str, Any]]:
    """A streamed choice's logprobs as the in-process result's entries (token, logprob,
    top_logprobs of {token, logprob}; the service's chunks carry no ids)."""
    lp = choice.get("logprobs")
    if not lp:
        return []
    if chat:
        return [{"token": c["token"], "logprob": c["logprob"],
                 "top_logprobs": [{"token": t["token"], "logprob": t["logprob"]}
                                  for t in c.get("top_logprobs") or []]}
                for c in lp.get("content") or []]
    out = []
    for i, tok in enumerate(lp.get("tokens") or []):
        top = (lp.get("top_logprobs") or [{}] * (i + 1))[i] or {}
        out.append({"token": tok, "logprob": lp["token_logprobs"][i],
                    "top_logprobs": [{"token": t, "logprob": v} for t, v in top.items()]})
    return out


class _RemotePieceIterator:
    """Iterator of text pieces from a streamed completion (server-sent events); .result holds
    the GenerateResult once exhausted. close() (or leaving a ``for`` loop early, or
    KeyboardInterrupt) closes the connection, which cancels the request on the service at its
    next decode step (its KV is freed there)."""

    def __init__(self, client: _Client, path: str, body: Dict[str, Any], chat: bool):
        self._chat = chat
        self._conn, self._resp = client.open("POST", path, body)
        self._client = client
        self._pieces: List[str] = []
        self._finish = "stop"
        self._usage: Dict[str, Any] = {}
        self._logprobs: Optional[List[Dict[str, Any]]] = \
            [] if (body.get("options") or {}).get("logprobs") == "true" or \
            int((body.get("options") or {}).get("top_logprobs") or 0) > 0 else None
        self._done = False
        self.result: Optional["GenerateResult"] = None

    def __iter__(self) -> "_RemotePieceIterator":
        return self

    def __next__(self) -> str:
        if self._done:
            raise StopIteration
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    raise self._client._unreachable(
                        ConnectionError("the stream ended before [DONE]"))
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    self._finish_ok()
                    raise StopIteration
                event = json.loads(data.decode("utf-8"))
                if "error" in event:
                    e = _error_from(200, event)  # the status was sent before the error
                    if self._pieces:  # after the first token: the result ends with the error
                        self._finish = "error"
                        self._finish_ok(e)
                        raise StopIteration
                    raise e
                if event.get("usage"):
                    self._usage = event["usage"]
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") if self._chat \
                        else choice.get("text")
                    if choice.get("finish_reason"):
                        self._finish = choice["finish_reason"]
                    if self._logprobs is not None:
                        self._logprobs.extend(_chunk_logprobs(choice, self._chat))
                    if piece:
                        self._pieces.append(piece)
                        return piece
        except StopIteration:
            raise
        except BaseException:
            self.close()
            raise

    def _finish_ok(self, error: Optional[Error] = None) -> None:
        self.result = _result("".join(self._pieces), self._finish, self._usage, error,
                              self._logprobs)
        self.close()

    def close(self) -> None:
        self._done = True
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001
            pass

    def __enter__(self) -> "_RemotePieceIterator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


# ---- The runtime handle of a model --------------------------------------------------------------

class RemoteModelControls:
    """Tier 2 controls of one model on the service (ebb.ModelControls's methods), over
    /v1/models/{id}/runtime. NotFound when the model is not loaded."""

    def __init__(self, client: _Client, model_id: str):
        self._c = client
        self._id = model_id
        self._path = f"/v1/models/{_quote(model_id)}/runtime"

    def _patch(self, body: Dict[str, Any]) -> Dict[str, Any]:
        return self._c.call("PATCH", self._path, body)

    def shrink_arena(self) -> None:
        """Shrink now (ORT arena, KV pool, heap): POST .../runtime/shrink {"when": "now"}."""
        self._c.call("POST", self._path + "/shrink", {"when": "now"})

    def release_weights(self) -> dict:
        """Hand back file-backed weight pages: POST .../runtime/release_weights."""
        return self._c.call("POST", self._path + "/release_weights", {})

    def _prefix(self, method: str, prefix: Any) -> Dict[str, Any]:
        if isinstance(prefix, str):
            body: Dict[str, Any] = {"prompt": prefix}
        elif isinstance(prefix, (bytes, dict)) or not hasattr(prefix, "__iter__"):
            raise TypeError("prefix must be a str, a list of int token ids or a list of chat "
                            f"messages, not {type(prefix).__name__}")
        else:
            items = list(prefix)
            if items and isinstance(items[0], dict):
                body = {"messages": items}
            else:
                for i, t in enumerate(items):
                    if isinstance(t, bool) or not isinstance(t, int):
                        raise TypeError(f"prefix[{i}] must be an int token id, not "
                                        f"{type(t).__name__} ({t!r})")
                body = {"input_ids": items}
        out = self._c.call(method, f"/v1/models/{_quote(self._id)}/prefix", body)
        out.pop("prefix_cache", None)  # the in-process result has the PrefixPin fields only
        return out

    def pin_prefix(self, prefix: Union[str, Sequence[int], Sequence[Dict[str, str]]]
                   ) -> Dict[str, Any]:
        """Keep a prefix in the model's prefix cache until unpin_prefix: POST
        /v1/models/{id}/prefix. prefix: a str (encoded as a prompt), int token ids, or chat
        messages (rendered without the generation prompt). FailedPrecondition when the model's
        prefix_cache.max_bytes is 0."""
        return self._prefix("POST", prefix)

    def unpin_prefix(self, prefix: Union[str, Sequence[int], Sequence[Dict[str, str]]]
                     ) -> Dict[str, Any]:
        """Unpin a prefix given as to pin_prefix: DELETE /v1/models/{id}/prefix ('pinned':
        True when it was pinned and now is not)."""
        return self._prefix("DELETE", prefix)

    def drop_prefix_cache(self) -> int:
        """Drop every unpinned block of the prefix cache now (POST .../prefix/drop); the bytes
        freed."""
        return int(self._c.call("POST", f"/v1/models/{_quote(self._id)}/prefix/drop",
                                {})["freed_bytes"])

    def shrink_after_next_run(self) -> None:
        """Shrink once, at the end of the next request."""
        self._c.call("POST", self._path + "/shrink", {"when": "after_next_run"})

    def shrink_every(self, n: int) -> None:
        """Shrink after every n-th request; 0 turns it off."""
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 0xFFFFFFFF:
            # TypeError, as the in-process binding (an unsigned 32-bit count) raises
            raise TypeError(f"shrink_every: {n!r} is not a number of requests (0 = off)")
        self._patch({"shrink_every": n})

    def shrink_above(self, rss_bytes: Union[int, str]) -> None:
        """Shrink after a request that ends with RSS above this ("6GiB" or bytes); 0: off."""
        self._patch({"shrink_above": str(rss_bytes)})

    def set_option(self, key: str, value: _Value) -> None:
        """Set an ORT run option for every later Run()."""
        self._patch({"run_options": {key: _option_text(key, value)}})

    def clear_option(self, key: str) -> None:
        self._patch({"run_options": {key: None}})

    def options(self) -> Dict[str, str]:
        """The run options in force."""
        return dict(self._c.call("GET", self._path)["runtime_options"])

    def stats(self) -> Dict[str, Any]:
        """This model's memory statistics (the same fields as in process: ebb::ToJson)."""
        return self._c.call("GET", self._path)["stats"]

    def __repr__(self) -> str:
        return f"<ebb.RemoteModelControls model={self._id!r} service={self._c.url}>"


# ---- A model on the service ---------------------------------------------------------------------

class RemoteModel:
    """A model of the service, with ebb.Model's methods. A context manager: leaving the block
    unloads it (as in process)."""

    def __init__(self, client: _Client, model_id: str, info: Optional[Dict[str, Any]] = None):
        self._c = client
        self._id = model_id
        self._info = info

    @property
    def id(self) -> str:
        return self._id

    @property
    def info(self) -> Dict[str, Any]:
        """type, vocab_size, context_length, kv_bytes_per_token, weights_bytes, ... (the same
        keys as in process). NotFound when the model is not loaded."""
        if self._info is None:
            self._info = self._c.call("GET", f"/v1/models/{_quote(self._id)}/runtime")["info"]
        return dict(self._info)

    @property
    def loaded(self) -> bool:
        try:
            return bool(self._c.call("GET", f"/v1/models/{_quote(self._id)}")["loaded"])
        except NotFound:
            return False

    @property
    def runtime(self) -> "RemoteModelControls":
        """Tier 2 controls: shrink_arena(), shrink_every(n), set_option(k, v), stats(), ..."""
        return RemoteModelControls(self._c, self._id)

    @property
    def tokenizer(self):
        raise _not_remote("model.tokenizer")

    def unload(self, force: bool = False) -> None:
        """Unloads the model (force: wait for running requests instead of refusing)."""
        self._c.call("POST", f"/v1/models/{_quote(self._id)}/unload", {"force": bool(force)})

    def __enter__(self) -> "RemoteModel":
        return self

    def __exit__(self, *exc) -> None:
        if self.loaded:
            self.unload(False)

    def _body(self, request_options: Dict[str, Any], chat: bool) -> Dict[str, Any]:
        """The request keys of the in-process generate() as a completions request body:
        max_new_tokens -> max_tokens, stop -> stop, keep_alive -> keep_alive, every other key
        (temperature, top_k, max_length, do_sample, seed, ...) and options={...} -> "options",
        where the service sets them exactly as the in-process runtime does."""
        body: Dict[str, Any] = {"model": self._id, "stream": True,
                                "stream_options": {"include_usage": True}}
        opts: Dict[str, str] = {}
        for k, v in request_options.items():
            if v is None:
                continue
            if k == "options":
                opts.update(_options_json(v))
            elif k == "max_new_tokens":
                n = int(v)
                if n < 0:
                    raise InvalidArgument(
                        f"max_new_tokens: {n} is not a count of tokens (0 or more)")
                if n > 0:  # 0: until max_length, as in process
                    body["max_tokens"] = n
            elif k == "stop":
                body["stop"] = [v] if isinstance(v, str) else [str(s) for s in v]
            elif k == "keep_alive":
                body["keep_alive"] = v
            elif k == "add_generation_prompt" and chat:
                if not v:
                    raise _not_remote("chat(..., add_generation_prompt=False)")
            else:
                opts[k] = _option_text(k, v)
        if opts:
            body["options"] = opts
        return body

    def generate(self, prompt: str, **request_options) -> "GenerateResult":
        """Generates from a prompt (text only; token ids need the in-process runtime). The
        same keyword arguments as ebb.Model.generate; returns an ebb.GenerateResult whose ids
        and prompt_ids are empty. Runs as a streamed request, so Ctrl-C cancels it."""
        it = self.stream(prompt, **request_options)
        for _ in it:
            pass
        return it.result

    def stream(self, prompt: str, **request_options) -> Iterator[str]:
        """Like generate(), but yields the text piece by piece (POST /v1/completions with
        stream: true)."""
        if prompt is None or not isinstance(prompt, (str, list, tuple)):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        if not isinstance(prompt, str):
            raise InvalidArgument("a token-id prompt is not supported through ebb.connect (the "
                                  "HTTP API takes text): pass the prompt as a str, or use "
                                  "ebb.Runtime() in process")
        body = self._body(request_options, chat=False)
        body["prompt"] = prompt
        return _RemotePieceIterator(self._c, "/v1/completions", body, chat=False)

    def chat(self, messages: List[Dict[str, str]], stream: bool = False,
             **request_options) -> Union["GenerateResult", Iterator[str]]:
        """Renders `messages` with the model's chat template on the service and generates the
        reply (POST /v1/chat/completions)."""
        msgs = []
        for m in messages:
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise InvalidArgument(f"each message needs 'role' and 'content', got {m!r}")
            msgs.append({"role": m["role"], "content": m["content"]})
        body = self._body(request_options, chat=True)
        body["messages"] = msgs
        it = _RemotePieceIterator(self._c, "/v1/chat/completions", body, chat=True)
        if stream:
            return it
        for _ in it:
            pass
        return it.result

    def embed(self, input: Union[str, Sequence[str], Sequence[Sequence[int]]],
              dimensions: Optional[int] = None, options: Optional[Dict[str, Any]] = None,
              **embed_options) -> "EmbedResult":
        """Embeds texts (or token-id rows) with an encoder model (POST /v1/embeddings);
        the same arguments and ebb.EmbedResult as ebb.Model.embed."""
        from . import EmbedResult, _embed_options
        rows, opts = _embed_options(input, dimensions, options, embed_options)
        body: Dict[str, Any] = {"model": self._id, "input": rows, "encoding_format": "float"}
        if opts:
            body["options"] = _options_json(opts)
        out = self._c.call("POST", "/v1/embeddings", body)
        data = sorted(out["data"], key=lambda d: d["index"])
        usage = out.get("usage") or {}
        return EmbedResult(embeddings=[list(d["embedding"]) for d in data],
                           usage={"prompt_tokens": int(usage.get("prompt_tokens", 0)),
                                  "total_tokens": int(usage.get("total_tokens", 0))})

    def render_chat(self, messages: List[Dict[str, str]], add_generation_prompt: bool = True) -> str:
        raise _not_remote("render_chat()")

    def generator(self, **params):
        raise _not_remote("generator() (token-level generation)")

    def __repr__(self) -> str:
        return f"<ebb.RemoteModel id={self._id!r} service={self._c.url}>"


def _not_remote(what: str) -> Unavailable:
    return Unavailable(f"{what} is not available through ebb.connect: the service's HTTP API has "
                       "no route for it; use ebb.Runtime() in process for it")


def _chat_template_text(chat_template: Any) -> str:
    """The load's "chat_template" text: the text itself ({{, {% or {# in it, as the option
    reads it), else the Jinja file read here."""
    if not isinstance(chat_template, (str, os.PathLike)):
        raise TypeError("chat_template must be a str or os.PathLike (a Jinja file, or the "
                        f"template text), not {type(chat_template).__name__}")
    value = os.fspath(chat_template)
    if any(tag in value for tag in ("{{", "{%", "{#")):
        return value
    try:
        with open(value, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise NotFound(f"chat_template={value}: no such file (give a Jinja chat template file, "
                       "or the template text itself)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgument(f"chat_template={value}: cannot read it: {e}") from None


def _model_id_from_path(path: str) -> str:
    """The id the in-process Runtime.load gives a folder by default: its name, with characters
    other than letters, digits, '.', '_', '-', ':' as '_'."""
    base = os.path.basename(os.path.normpath(path))
    clean = "".join(c if (c.isascii() and c.isalnum()) or c in "._-:" else "_" for c in base)
    return clean if clean and len(clean) <= 100 else "model"


# ---- The runtime --------------------------------------------------------------------------------

class RemoteRuntime:
    """A running `ebb serve`, with ebb.Runtime's methods. Made by ebb.connect()."""

    def __init__(self, client: _Client):
        self._c = client

    @property
    def url(self) -> str:
        """The service's address."""
        return self._c.url

    def load(self, path: str, id: Optional[str] = None,
             session_options: Optional[Dict[str, Any]] = None,
             provider_options: Optional[Dict[str, Dict[str, Any]]] = None,
             options: Optional[Dict[str, Any]] = None,
             run_options: Optional[Dict[str, Any]] = None,
             chat_template: Union[str, "os.PathLike[str]", None] = None,
             *, keep_alive: Union[str, int, None] = None,
             pin: Optional[bool] = None) -> RemoteModel:
        """Loads a model the service knows, with these options after the service's defaults
        (POST /v1/models/{id}/load). `path` is a model folder (its name is the id, as in
        process) or the id itself; `id` wins when given. A folder that exists here but is not
        where the service serves that id is InvalidArgument. keep_alive ("10m", seconds, -1)
        and pin are the service's: how long it stays loaded when idle, and whether it may be
        evicted. Loading a loaded model with other options is FailedPrecondition (unload
        first); with the same ones it only updates keep_alive and pin. chat_template: a Jinja
        file here (read and sent as the load's "chat_template" text; the service reads no
        client's files) or the template text itself."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError("path must be a str or os.PathLike (a model folder or the service's "
                            f"model id), not {type(path).__name__}")
        if id is not None and not isinstance(id, str):
            raise TypeError(f"id must be a str or None, not {type(id).__name__}")
        path = os.fspath(path)
        model_id = id if id is not None else _model_id_from_path(path)
        if path != model_id and os.path.exists(path):
            known = {m["id"]: m for m in self._c.call("GET", "/v1/runtime")["models"]}
            served = known.get(model_id, {}).get("path")
            if served and os.path.realpath(served) != os.path.realpath(path):
                raise InvalidArgument(
                    f"the service at {self.url} serves model '{model_id}' from {served}, not "
                    f"{path}: load it by id (rt.load('{model_id}')), or start the service with "
                    f"--model {model_id}={os.path.abspath(path)}")
        body: Dict[str, Any] = {}
        if session_options:
            body["session_options"] = _options_json(session_options)
        if provider_options:
            body["provider_options"] = {str(ep): _options_json(kv)
                                        for ep, kv in provider_options.items()}
        if run_options:
            body["run_options"] = _options_json(run_options)
        if options:
            body["options"] = _options_json(options)
        if keep_alive is not None:
            body["keep_alive"] = keep_alive
        if pin is not None:
            body["pin"] = bool(pin)
        if chat_template is not None:
            body["chat_template"] = _chat_template_text(chat_template)
        try:
            self._c.call("POST", f"/v1/models/{_quote(model_id)}/load", body)
        except NotFound as e:
            if getattr(e, "api_code", None) != "model_not_found":
                raise
            # The service loads only the ids it serves: say so, rather than a bare "does not
            # exist" that reads as if the folder were missing.
            how = (f"id='{model_id}' must be one of the service's model ids" if id is not None
                   else f"the folder's name '{model_id}' must be one of the service's model ids")
            err = NotFound(
                f"{e}. With ebb.connect(), load() loads a model the service at {self.url} "
                f"already serves: {how} (its --models-dir folders, --model ID=DIR and "
                "--models-file entries; rt.known_models() lists them); the path only names the "
                "id. To serve a folder under another id, start the service with --model "
                f"{model_id}={os.path.abspath(path)}")
            err.http_status, err.api_code, err.param = (  # type: ignore[attr-defined]
                e.http_status, e.api_code, e.param)  # type: ignore[attr-defined]
            raise err from None
        return RemoteModel(self._c, model_id)

    def get(self, id: str) -> RemoteModel:
        """Another handle to the loaded model `id` (NotFound when it is not loaded)."""
        info = self._c.call("GET", f"/v1/models/{_quote(id)}/runtime")["info"]
        return RemoteModel(self._c, id, info)

    def unload(self, id: str, force: bool = False) -> None:
        self._c.call("POST", f"/v1/models/{_quote(id)}/unload", {"force": bool(force)})

    def models(self) -> List[Dict[str, Any]]:
        """Every loaded model with its memory figures: the in-process fields, plus the
        service's (loaded, pinned, running, expires_at_unix_ms, options)."""
        return [m for m in self._c.call("GET", "/v1/runtime")["models"] if m.get("loaded")]

    def known_models(self) -> List[Dict[str, Any]]:
        """Every model the service knows, loaded or not (GET /v1/runtime's models)."""
        return list(self._c.call("GET", "/v1/runtime")["models"])

    def stats(self) -> Dict[str, Any]:
        """The service's process figures, KV and weights summed over its models, memory.limit
        (limit_bytes) and what it counts (used_bytes): the same fields as in process
        (ebb::ToJson of Runtime::Stats), GET /v1/runtime's "stats"."""
        return self._c.call("GET", "/v1/runtime")["stats"]

    @property
    def memory_limit(self) -> int:
        """The service's memory.limit in bytes (0: none)."""
        return int(self.stats()["limit_bytes"])

    @memory_limit.setter
    def memory_limit(self, value: Union[str, int]) -> None:
        raise FailedPrecondition("the memory limit of a running service is set when it starts: "
                                 "restart it with --memory-limit (ebb serve --memory-limit SIZE)")

    def __repr__(self) -> str:
        return f"<ebb.RemoteRuntime {self.url}>"


def connect(url: Optional[str] = None, api_key: Optional[str] = None,
            timeout: Optional[float] = None) -> RemoteRuntime:
    """A runtime backed by a running `ebb serve`, with ebb.Runtime's methods.

    url: the service's address ("http://127.0.0.1:11435"); None: $EBB_URL, else the running
    service of service.json in $EBB_HOME, $XDG_STATE_HOME/ebb or ~/.local/state/ebb (written by
    `ebb service start`; a stale file, whose process is gone, is refused). api_key: sent as
    `Authorization: Bearer`; None: the discovered service's key, else $EBB_API_KEY.
    timeout: seconds per socket operation (None: no limit).
    Raises ebb.Unavailable, saying how to start one, when no service answers there.
    """
    origin = "url"
    found_key = None
    if url is None:
        url, origin, found_key = _discover()
    if api_key is None:
        # The discovered service's own key (its --api-key or --api-key-file, as `ebb model`
        # uses), else $EBB_API_KEY.
        api_key = found_key or os.environ.get("EBB_API_KEY") or None
    client = _Client(url, api_key, timeout, origin)
    client.call("GET", "/health")  # no key needed; Unavailable when nothing answers
    return RemoteRuntime(client)


# The extension's error classes are the ones raised here (so `except ebb.NotFound` catches
# both runtimes' errors).
assert _ebb.Error is Error


# ebb.ModelControls' remote twin, under the name ebb.Model's controls have since issue 22.
