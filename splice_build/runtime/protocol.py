"""The parent side of the host IPC protocol (host/PROTOCOL.md), with typed messages.

Every frame from the child is hostile input: it is size-bounded by the reader, then decoded
here with bounded nesting, bounded number literals, no NaN/Infinity, no unpaired surrogates,
and a strict shape per message type. Anything else raises ``ProtocolViolation``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from splice_build.records import dataclass, field
from splice_build.runtime.builtins import allowed_builtins
from splice_build.runtime.limits import (
    FETCH_CHUNK_BYTES,
    FETCH_INITIAL_CREDIT,
    FRAME_ENVELOPE_DEPTH,
    MAX_FETCH_CREDIT,
    MAX_FETCH_HEADER_BYTES,
    MAX_FETCH_HEADERS,
    MAX_FETCH_URL_CHARS,
    MAX_FETCHES_IN_FLIGHT,
    MAX_NUMBER_LITERAL,
    MAX_OUTPUT_DEPTH,
)
from splice_build.security.response_head import HTTP_TOKEN

PROTOCOL_VERSION = 2  # 2: jobs carry an id that their result repeats
# The exact prefix host.mjs writes before a successful output (used to name an oversized
# frame OUTPUT_TOO_LARGE rather than a protocol violation).
RESULT_OK_PREFIX = b'{"type":"result","ok":true,"output":'
JOB_ID_DIGITS = 32  # a job's id: 128 random bits in lowercase hex (new_job_id)
# What follows the output in that frame: ``,"job":"<the id>"}``.
RESULT_OK_SUFFIX_BYTES = len(b',"job":""}') + JOB_ID_DIGITS
_JOB_ID = re.compile(rf"[0-9a-f]{{{JOB_ID_DIGITS}}}")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_END = object()


class ProtocolViolation(Exception):
    """A frame from the child that is not a well-formed message of the protocol."""


@dataclass(frozen=True)
class ResultOk:
    output: Any
    job: str  # the id of the job it answers (Session refuses any other)


@dataclass(frozen=True)
class ResultError:
    code: str
    message: str
    job: str


def new_job_id() -> str:
    """A job's id: 128 random bits the host repeats in its result and the tool cannot read
    (host.mjs keeps it out of the tool's reach), so a result frame the tool writes itself
    cannot pass for its job's (PROTOCOL.md, "Results belong to their job")."""
    import os

    return os.urandom(JOB_ID_DIGITS // 2).hex()


@dataclass(frozen=True)
class CapabilityRequest:
    id: int
    name: str
    args: Any


@dataclass(frozen=True)
class FetchRequest:
    """``fetch``: a request head; ``has_body`` means body frames and ``fetch-body-end`` follow."""

    id: int
    url: str
    method: str
    headers: tuple[tuple[str, str], ...]
    redirect: str
    has_body: bool


@dataclass(frozen=True)
class FetchBody:
    """``fetch-body``: bytes of the request body (at most FETCH_CHUNK_BYTES)."""

    id: int
    data: bytes


@dataclass(frozen=True)
class FetchBodyEnd:
    id: int


@dataclass(frozen=True)
class FetchPull:
    """``fetch-pull``: the host may receive ``chunks`` more response chunks."""

    id: int
    chunks: int


@dataclass(frozen=True)
class FetchCancel:
    """``fetch-cancel``: the tool aborted the request or cancelled its body."""

    id: int


FetchMessage = FetchRequest | FetchBody | FetchBodyEnd | FetchPull | FetchCancel
ChildMessage = ResultOk | ResultError | CapabilityRequest | FetchMessage


@dataclass(frozen=True)
class Job:
    """Parent → host, once, after the process has started."""

    entry_url: str
    input: Any
    context: dict[str, Any]
    env: dict[str, str]
    id: str = field(default_factory=new_job_id)
    # Test hook only (SpliceRuntime(_unsafe_in_process_guards_off=True)): the host installs
    # none of its guards (module guard, fetch shim, process locks).
    unsafe_in_process_guards_off: bool = False

    def encode(self) -> bytes:
        frame: dict[str, Any] = {
            "type": "job",
            "protocol": PROTOCOL_VERSION,
            "id": self.id,
            "entryUrl": self.entry_url,
            "input": self.input,
            "context": self.context,
            "env": self.env,
            # The only built-ins the tool may load (module_guard.mjs refuses the rest).
            "builtins": list(allowed_builtins()),
            # How the host's fetch shim paces itself; the parent enforces every limit anyway.
            "fetch": {
                "maxInFlight": MAX_FETCHES_IN_FLIGHT,
                "chunkBytes": FETCH_CHUNK_BYTES,
                "initialCredit": FETCH_INITIAL_CREDIT,
            },
        }
        if self.unsafe_in_process_guards_off:
            frame["unsafeInProcessGuardsOff"] = True
        return _encode(frame)


def encode_capability_result(
    request_id: int,
    *,
    result: Any = None,
    error: tuple[str, str] | None = None,
    encoded: bytes | None = None,
) -> bytes:
    """Parent → host answer to one capability request; ``encoded`` is a result already
    written as JSON (strict, UTF-8: runtime/capabilities.py), placed in the frame as it is."""
    if encoded is not None:
        head = _encode({"type": "capability-result", "id": request_id})[:-2]
        return b"".join((head, b',"result":', encoded, b"}\n"))
    frame: dict[str, Any] = {"type": "capability-result", "id": request_id}
    if error is not None:
        frame["error"] = {"code": error[0], "message": error[1]}
    else:
        frame["result"] = result
    return _encode(frame)


def _encode(frame: dict[str, Any]) -> bytes:
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "surrogatepass") + b"\n"


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_LITERAL:
        raise ProtocolViolation(f"number literal of {len(text)} characters")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_LITERAL:
        raise ProtocolViolation(f"number literal of {len(text)} characters")
    value = float(text)
    if not math.isfinite(value):
        raise ProtocolViolation("non-finite number")
    return value


def _parse_constant(name: str) -> Any:
    raise ProtocolViolation(f"{name} is not JSON")


def _check_tree(value: Any, *, check_strings: bool) -> None:
    """Carried values ≤ MAX_OUTPUT_DEPTH deep and (when escapes suggest it) no lone surrogates.

    Walked with one iterator per open container (at most MAX_OUTPUT_DEPTH of them): a stack of
    every pending child, each in a tuple with its depth, cost 64 bytes per value of the frame,
    as much again as the decoded value (21 MiB for a 1 MiB frame of empty arrays)."""
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, dict | list):
            if len(stack) - 1 - FRAME_ENVELOPE_DEPTH >= MAX_OUTPUT_DEPTH:
                raise ProtocolViolation(f"nested deeper than {MAX_OUTPUT_DEPTH} levels")
            if isinstance(item, dict):
                if check_strings:
                    for key in item:
                        _check_string(key)
                stack.append(iter(item.values()))
            else:
                stack.append(iter(item))
        elif check_strings and isinstance(item, str):
            _check_string(item)


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ProtocolViolation("string with an unpaired surrogate") from exc


def decode_json(raw: bytes) -> Any:
    """Decode one hostile JSON text; raises ProtocolViolation for anything out of bounds."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolViolation("frame is not UTF-8") from exc
    try:
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except RecursionError as exc:
        raise ProtocolViolation(f"nested deeper than {MAX_OUTPUT_DEPTH} levels") from exc
    except ValueError as exc:  # json.JSONDecodeError and int() limits
        raise ProtocolViolation(f"invalid JSON: {exc}") from exc
    _check_tree(value, check_strings=bool(_SURROGATE_ESCAPE.search(raw)))
    return value


def _require(frame: dict[str, Any], allowed: set[str]) -> None:
    extra = set(frame) - allowed
    if extra:
        raise ProtocolViolation(f"unexpected fields {sorted(extra)}")


def encode_frame(frame: dict[str, Any]) -> bytes:
    """One parent → host frame (a JSON line)."""
    return _encode(frame)


def parse_child_message(raw: bytes) -> ChildMessage:
    """One frame from the host → a typed message (strict shapes, PROTOCOL.md)."""
    frame = decode_json(raw)
    if not isinstance(frame, dict):
        raise ProtocolViolation("frame is not an object")
    kind = frame.get("type")
    if kind == "result":
        ok = frame.get("ok")
        job = frame.get("job")
        if not isinstance(job, str) or not _JOB_ID.fullmatch(job):
            raise ProtocolViolation("result without a job id")
        if ok is True:
            _require(frame, {"type", "ok", "output", "job"})
            if "output" not in frame:
                raise ProtocolViolation("result without output")
            return ResultOk(frame["output"], job)
        if ok is False:
            _require(frame, {"type", "ok", "error", "job"})
            error = frame.get("error")
            if (
                not isinstance(error, dict)
                or set(error) != {"code", "message"}
                or not isinstance(error["code"], str)
                or not isinstance(error["message"], str)
            ):
                raise ProtocolViolation("malformed error result")
            return ResultError(error["code"], error["message"], job)
        raise ProtocolViolation("result without a boolean ok")
    if kind == "capability":
        _require(frame, {"type", "id", "name", "args"})
        request_id, name = frame.get("id"), frame.get("name")
        if type(request_id) is not int or not 0 < request_id < 2**31:
            raise ProtocolViolation("capability request without a valid id")
        if not isinstance(name, str) or len(name) > 128:
            raise ProtocolViolation("capability request without a valid name")
        return CapabilityRequest(request_id, name, frame.get("args"))
    if isinstance(kind, str) and kind in _FETCH_PARSERS:
        return _FETCH_PARSERS[kind](frame)
    raise ProtocolViolation("unknown message type")


# fetch frames (PROTOCOL.md, "fetch"). Bounds are checked here; the policy in fetch_channel.
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_MAX_BASE64_CHARS = 4 * ((FETCH_CHUNK_BYTES + 2) // 3)
_REDIRECTS = frozenset({"follow", "error", "manual"})


def _fetch_id(frame: dict[str, Any]) -> int:
    request_id = frame.get("id")
    if type(request_id) is not int or not 0 < request_id < 2**31:
        raise ProtocolViolation("fetch frame without a valid id")
    return request_id


def _header_list(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or len(value) > MAX_FETCH_HEADERS:
        raise ProtocolViolation("fetch headers are not a list of at most 256 pairs")
    pairs: list[tuple[str, str]] = []
    size = 0
    for pair in value:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not isinstance(pair[1], str)
        ):
            raise ProtocolViolation("a fetch header is not a [name, value] pair of strings")
        name, text = pair
        size += len(name) + len(text)
        if (
            not HTTP_TOKEN.fullmatch(name)
            or any(c in text for c in "\0\r\n")
            or max(map(ord, text), default=0) > 0xFF
        ):
            raise ProtocolViolation("a fetch header name or value is not valid HTTP")
        pairs.append((name.lower(), text))
    if size > MAX_FETCH_HEADER_BYTES:
        raise ProtocolViolation("fetch headers larger than 64 KiB")
    return tuple(pairs)


def _parse_fetch(frame: dict[str, Any]) -> FetchRequest:
    _require(frame, {"type", "id", "url", "method", "headers", "redirect", "body"})
    url, method, redirect, body = (frame.get(k) for k in ("url", "method", "redirect", "body"))
    if not isinstance(url, str) or not 0 < len(url) <= MAX_FETCH_URL_CHARS:
        raise ProtocolViolation("fetch without a valid url")
    if not isinstance(method, str) or len(method) > 32 or not HTTP_TOKEN.fullmatch(method):
        raise ProtocolViolation("fetch without a valid method")
    # A string first: a JSON object or array is unhashable, and ``in`` a set raised TypeError
    # out of the decoder (the frames fuzz target, with ``"redirect": {"": "0"}``).
    if not isinstance(redirect, str) or redirect not in _REDIRECTS or not isinstance(body, bool):
        raise ProtocolViolation("fetch without a valid redirect mode or body flag")
    return FetchRequest(
        _fetch_id(frame), url, method, _header_list(frame.get("headers")), redirect, body
    )


def _parse_fetch_body(frame: dict[str, Any]) -> FetchBody:
    import base64

    _require(frame, {"type", "id", "data"})
    data = frame.get("data")
    if (
        not isinstance(data, str)
        or len(data) > _MAX_BASE64_CHARS
        or len(data) % 4
        or not _BASE64.fullmatch(data)
    ):
        raise ProtocolViolation("fetch-body without valid base64 data")
    return FetchBody(_fetch_id(frame), base64.b64decode(data, validate=True))


def _parse_fetch_pull(frame: dict[str, Any]) -> FetchPull:
    _require(frame, {"type", "id", "chunks"})
    chunks = frame.get("chunks")
    if type(chunks) is not int or not 0 < chunks <= MAX_FETCH_CREDIT:
        raise ProtocolViolation("fetch-pull without a valid chunk count")
    return FetchPull(_fetch_id(frame), chunks)


def _parse_id_only(cls: type[FetchBodyEnd] | type[FetchCancel]) -> Any:
    def parse(frame: dict[str, Any]) -> FetchBodyEnd | FetchCancel:
        _require(frame, {"type", "id"})
        return cls(_fetch_id(frame))

    return parse


_FETCH_PARSERS: dict[str, Any] = {
    "fetch": _parse_fetch,
    "fetch-body": _parse_fetch_body,
    "fetch-body-end": _parse_id_only(FetchBodyEnd),
    "fetch-pull": _parse_fetch_pull,
    "fetch-cancel": _parse_id_only(FetchCancel),
}
