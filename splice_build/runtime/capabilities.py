"""The capability channel in the parent (docs/compatibility.md#capability-channel) and the broker interface.

The host forwards ``ctx.capability(name, args)`` as a request frame; this module decides
every answer: declaration (also for frames the tool forged itself), call budget, in-flight
limit, argument size and depth, then the broker, whose result size is bounded too. The broker
is anything with ``call(request) -> Mapping``; without one, calls answer UNAVAILABLE.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, Protocol

from splice_build.errors import ErrorCode
from splice_build.records import dataclass
from splice_build.runtime.limits import (
    MAX_CAPABILITIES_IN_FLIGHT,
    MAX_CAPABILITIES_IN_FLIGHT_PER_PACKAGE,
    MAX_CAPABILITIES_IN_FLIGHT_PER_PROCESS,
    MAX_CAPABILITY_ARGS_BYTES,
    MAX_CAPABILITY_ARGS_DEPTH,
    MAX_CAPABILITY_CALLS,
    MAX_CAPABILITY_RESULT_BYTES,
)
from splice_build.runtime.protocol import CapabilityRequest
from splice_build.spec.json_depth import nesting_depth

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor


class _ProcessSlots:
    """Broker calls running in this process, whichever execution started them (limits.py),
    and each package's share of them: a slot is taken before a call is scheduled and given
    back when it ends or is cancelled.

    The share is what keeps one package from starving the others in a long-lived server: a
    tool that starts calls to a slow provider and returns, run again and again, held every
    process slot, and every other package's capability calls answered CAPABILITY_LIMIT."""

    def __init__(self, total: int, per_package: int) -> None:
        self._total = total
        self._per_package = per_package
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, package: str) -> str | None:
        """None when a slot was taken for ``package``, else why not (a CAPABILITY_LIMIT message)."""
        with self._lock:
            mine = self._held.get(package, 0)
            if mine >= self._per_package:
                return (
                    f"More than {self._per_package} capability calls of package {package} in "
                    "flight in this process (calls of earlier executions still running)"
                )
            if sum(self._held.values()) >= self._total:
                return (
                    f"More than {self._total} capability calls in flight in this process "
                    "(calls of earlier executions still running)"
                )
            self._held[package] = mine + 1
            return None

    def give_back(self, package: str) -> None:
        with self._lock:
            left = self._held[package] - 1
            if left:
                self._held[package] = left
            else:
                del self._held[package]


_PROCESS_SLOTS = _ProcessSlots(
    MAX_CAPABILITIES_IN_FLIGHT_PER_PROCESS, MAX_CAPABILITIES_IN_FLIGHT_PER_PACKAGE
)


class CapabilityBroker(Protocol):
    """Runs host capabilities with the host's own keys (the broker issue implements it)."""

    def call(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """``request`` is ``{package, tool, capability, args}``; returns a result object."""
        ...


@dataclass(frozen=True)
class CapabilityReply:
    """What to send back for one request: a ``result``, its JSON already encoded
    (``encoded``: a broker's answer, whose objects are let go as soon as it is written), or
    an ``error`` (code, message)."""

    request_id: int
    result: Any = None
    error: tuple[str, str] | None = None
    encoded: bytes | None = None


# What json.dumps(ensure_ascii=False) writes for a character of a string: one more byte for
# the short escapes, five more for \u00XX (json.encoder.ESCAPE). Counted in the UTF-8 bytes,
# where no byte of a longer character is below 0x80.
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\\"]')
_SHORT_ESCAPES = b'"\\\b\f\n\r\t'
_LONG_ESCAPES = bytes(c for c in range(0x20) if c not in _SHORT_ESCAPES)
_CONSTANTS = {True: 4, False: 5, None: 4}
# A long string is counted and written this many characters at a time: never one copy of it
# as a whole (a str holding one emoji takes four bytes for each of its characters).
_PIECE = 64 * 1024
# A result at most this large is written by json.dumps in one piece (its copies are small).
WRITTEN_WHOLE = 256 * 1024


def _string_size(text: str) -> int:
    if not _NEEDS_ESCAPE.search(text):
        if text.isascii():
            return 2 + len(text)
        return 2 + sum(len(piece.encode("utf-8")) for piece in _pieces(text))
    size = 2
    for piece in _pieces(text):
        raw = piece.encode("utf-8")
        short = len(raw) - len(raw.translate(None, _SHORT_ESCAPES))
        long = len(raw) - len(raw.translate(None, _LONG_ESCAPES))
        size += len(raw) + short + 5 * long
    return size


def _pieces(text: str) -> Iterator[str]:
    """``text`` in slices of at most _PIECE characters (one slice when it is short)."""
    if len(text) <= _PIECE:
        yield text
        return
    for start in range(0, len(text), _PIECE):
        yield text[start : start + _PIECE]


def _scalar_size(value: Any) -> int:
    if value is None or value is True or value is False:
        return _CONSTANTS[value]
    if isinstance(value, str):
        return _string_size(value)
    if isinstance(value, int):
        return len(int.__repr__(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("Out of range float values are not JSON compliant")
        return len(float.__repr__(value))
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_size(value: Any, limit: int) -> int:
    """The UTF-8 bytes of ``json.dumps(value, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)``, counted without writing it; the count stops once past ``limit`` (any
    number above it is returned then). Raises as ``json.dumps`` would for a value with no
    JSON form.

    Writing a result only to learn its size cost the host process a copy of it each time,
    and more than the result itself: a 5 MiB text holding one emoji is a 20 MiB ``str`` in
    Python, and 5 MiB of control characters 30 MiB of JSON (docs/capabilities.md)."""
    size = 0
    stack = [value]
    while stack and size <= limit:
        item = stack.pop()
        flat = _flat_text(item)
        if flat is not None:
            size += len(flat.encode("utf-8"))
        elif isinstance(item, dict):
            size += max(2 * len(item) + 1, 2)  # the braces, colons and commas
            for key, child in item.items():
                size += _string_size(key) if isinstance(key, str) else 2 + _scalar_size(key)
                stack.append(child)
        elif isinstance(item, list | tuple):
            size += max(len(item) + 1, 2)
            stack.extend(item)
        else:
            size += _scalar_size(item)
    return size


_FLAT_ITEMS = 4096  # a container json.dumps writes at once: at most this many items
_SCALARS = frozenset({int, float, bool, type(None)})
_EMPTY = {dict: "{}", list: "[]", tuple: "[]"}


def _flat_text(value: Any) -> str | None:
    """The JSON text of a list or dict of at most _FLAT_ITEMS numbers, constants and
    strings of _PIECE characters in all (a record, a row of numbers), or None: such a
    container is small whatever it holds, and json.dumps writes it many times faster than
    the walks of ``json_size`` and ``write_json``, which then go to its parent."""
    kind = type(value)
    if kind not in _EMPTY:
        return None
    if not value:
        return _EMPTY[kind]
    if len(value) > _FLAT_ITEMS:
        return None
    if kind is dict:
        characters = 0
        for key, item in value.items():
            if type(key) is not str:
                return None
            characters += len(key)
            if type(item) is str:
                characters += len(item)
            elif type(item) not in _SCALARS:
                return None
    else:
        characters = 0
        for item in value:
            if type(item) is str:
                characters += len(item)
            elif type(item) not in _SCALARS:
                return None
    if characters > _PIECE:
        return None
    return "".join(_FLAT_ENCODER(value, 0))


def _no_default(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps's own C encoder, made once (json.dumps makes one for each call, which cost more
# than writing a small record): separators ",", ":", strict floats, no circularity check
# (a flat container holds no other).
_FLAT_ENCODER = c_make_encoder(
    None, _no_default, encode_basestring, None, ":", ",", False, False, False
)


def write_json(value: Any, size: int) -> bytes:
    """``value`` as ``json.dumps(value, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)`` writes it, in UTF-8; ``size`` is its ``json_size``.

    json.dumps makes the whole text one ``str`` (twice, while it joins the pieces), and one
    character outside the BMP makes each character of it four bytes: a 4 MiB result became
    32 MiB of copies. A large result is written piece by piece as UTF-8 instead; strings
    through json's own escaping, so both write the same bytes."""
    if size <= WRITTEN_WHOLE:
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    out: list[bytes] = []
    _write(value, out)
    return b"".join(out)


def _write(value: Any, out: list[bytes]) -> None:
    flat = _flat_text(value)
    if flat is not None:
        out.append(flat.encode("utf-8"))
    elif isinstance(value, str):
        _write_string(value, out)
    elif isinstance(value, dict):
        out.append(b"{")
        for index, (key, child) in enumerate(value.items()):
            if index:
                out.append(b",")
            _write_string(key if isinstance(key, str) else _scalar_text(key), out)
            out.append(b":")
            _write(child, out)
        out.append(b"}")
    elif isinstance(value, list | tuple):
        out.append(b"[")
        for index, child in enumerate(value):
            if index:
                out.append(b",")
            _write(child, out)
        out.append(b"]")
    else:
        out.append(_scalar_text(value).encode())


def _write_string(text: str, out: list[bytes]) -> None:
    if len(text) <= _PIECE:
        out.append(encode_basestring(text).encode("utf-8"))
        return
    out.append(b'"')
    out.extend(encode_basestring(piece)[1:-1].encode("utf-8") for piece in _pieces(text))
    out.append(b'"')


def _scalar_text(value: Any) -> str:
    if value is None or value is True or value is False:
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        _scalar_size(value)  # raises for NaN and the infinities
        return float.__repr__(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _now() -> str:
    from datetime import UTC, datetime  # lazy: only a capability call needs the clock

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class CapabilityChannel:
    """One execution's capability state; ``handle`` answers now or schedules the broker."""

    def __init__(
        self,
        *,
        package: str,
        tool: str,
        declared: Sequence[str],
        broker: CapabilityBroker | None,
        sanitize: Callable[[str], str],
        on_reply: Callable[[CapabilityReply], None],
    ) -> None:
        self._package = package
        self._tool = tool
        self._declared = frozenset(declared)
        self._broker = broker
        self._sanitize = sanitize
        self._on_reply = on_reply
        self._calls = 0
        self._in_flight = 0
        self._executor: ThreadPoolExecutor | None = None

    def handle(self, request: CapabilityRequest) -> CapabilityReply | None:
        """The immediate reply, or None when the broker runs in the background."""
        rid = request.id
        if request.name not in self._declared:
            return CapabilityReply(
                rid,
                error=(
                    ErrorCode.PERMISSION_DENIED,
                    f'Capability "{request.name}" is not declared in manifest permissions.capabilities',
                ),
            )
        self._calls += 1
        if self._calls > MAX_CAPABILITY_CALLS:
            return CapabilityReply(
                rid,
                error=(
                    ErrorCode.CAPABILITY_LIMIT,
                    f"More than {MAX_CAPABILITY_CALLS} capability calls in one execution",
                ),
            )
        if self._in_flight >= MAX_CAPABILITIES_IN_FLIGHT:
            return CapabilityReply(
                rid,
                error=(
                    ErrorCode.CAPABILITY_LIMIT,
                    f"More than {MAX_CAPABILITIES_IN_FLIGHT} capability calls in flight",
                ),
            )
        too_large = self._check_args(request.args)
        if too_large:
            return CapabilityReply(rid, error=(ErrorCode.INPUT_TOO_LARGE, too_large))
        if self._broker is None:
            return CapabilityReply(
                rid,
                result={
                    "status": "UNAVAILABLE",
                    "code": str(ErrorCode.CAPABILITY_UNAVAILABLE),
                    "capability": request.name,
                    "reason": "No capability broker is attached to this runtime",
                    "timestamp": _now(),
                },
            )
        refused = _PROCESS_SLOTS.take(self._package)
        if refused:
            return CapabilityReply(rid, error=(ErrorCode.CAPABILITY_LIMIT, refused))
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(
                max_workers=MAX_CAPABILITIES_IN_FLIGHT, thread_name_prefix="splice-capability"
            )
        try:
            future = self._executor.submit(self._call_broker, request)
        except BaseException:
            _PROCESS_SLOTS.give_back(self._package)
            raise
        self._in_flight += 1
        future.add_done_callback(self._done)
        return None

    def _done(self, future: Future[CapabilityReply]) -> None:
        _PROCESS_SLOTS.give_back(self._package)
        if not future.cancelled():
            self._on_reply(future.result())

    @property
    def idle(self) -> bool:
        """No broker call of this execution is still running."""
        return self._in_flight == 0

    def reply_delivered(self) -> None:
        """Called by the session (on its own thread) when a background reply was sent."""
        self._in_flight -= 1

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    @staticmethod
    def _check_args(args: Any) -> str | None:
        if nesting_depth(args, MAX_CAPABILITY_ARGS_DEPTH) > MAX_CAPABILITY_ARGS_DEPTH:
            return f"Capability arguments are nested deeper than {MAX_CAPABILITY_ARGS_DEPTH} levels"
        size = len(json.dumps(args, separators=(",", ":"), ensure_ascii=False).encode())
        if size > MAX_CAPABILITY_ARGS_BYTES:
            return f"Capability arguments are {size} bytes (max {MAX_CAPABILITY_ARGS_BYTES})"
        return None

    def _call_broker(self, request: CapabilityRequest) -> CapabilityReply:
        assert self._broker is not None, "BUG: broker call without a broker"
        try:
            result = self._broker.call(
                {
                    "package": self._package,
                    "tool": self._tool,
                    "capability": request.name,
                    "args": request.args,
                }
            )
            # Strict JSON, as the reply frame is encoded: a NaN or a lone surrogate that got
            # this far becomes this call's ERROR here, not an exception in the session loop.
            # Counted before it is written, and written once: the reply carries the bytes,
            # and the result's objects go with this thread's frame.
            size = json_size(result, MAX_CAPABILITY_RESULT_BYTES)
            if size <= MAX_CAPABILITY_RESULT_BYTES:
                encoded = write_json(result, size)
        except Exception as exc:  # the broker is a plug-in boundary: any failure is a result
            return CapabilityReply(
                request.id,
                result={
                    "status": "ERROR",
                    "code": str(ErrorCode.BROKER_ERROR),
                    "capability": request.name,
                    "message": self._sanitize(str(exc) or type(exc).__name__),
                    "timestamp": _now(),
                },
            )
        if size > MAX_CAPABILITY_RESULT_BYTES:
            return CapabilityReply(
                request.id,
                result={
                    "status": "ERROR",
                    "code": str(ErrorCode.RESULT_TOO_LARGE),
                    "capability": request.name,
                    "message": f"Capability result is over {MAX_CAPABILITY_RESULT_BYTES} bytes",
                    "timestamp": _now(),
                },
            )
        return CapabilityReply(request.id, encoded=encoded)
