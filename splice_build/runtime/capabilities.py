"""The capability channel in the parent (docs/compatibility.md#capability-channel) and the broker interface.

The host forwards ``ctx.capability(name, args)`` as a request frame; this module decides
every answer: declaration (also for frames the tool forged itself), call budget, in-flight
limit, argument size and depth, then the broker, whose result size is bounded too. The broker
is anything with ``call(request) -> Mapping``; without one, calls answer UNAVAILABLE.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from splice_build.errors import ErrorCode
from splice_build.records import dataclass
from splice_build.runtime.forks import forget_in_children
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
from splice_build.runtime.result_json import json_size, write_json
from splice_build.spec.js_date import iso_string
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
        forget_in_children(self)

    def forget_after_fork(self) -> None:
        """In a child of ``fork`` (runtime/forks.py): the parent's calls in flight run on its
        threads, none of which the child has, so nothing would ever give their slots back: a
        program forking while a package had 8 broker calls in flight (a tool that starts calls
        to a slow provider and returns, run twice) had every capability call of that package
        in the child answer CAPABILITY_LIMIT. The child starts with none held."""
        self._held = {}
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


def _now() -> str:
    return iso_string(time.time())


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
        # In the calling context: a cancel of the call (splice_build/cancel.py: an MCP client's,
        # or the stop's cut) reaches the broker, which aborts its provider requests in
        # flight; without it the broker ran on to each provider's timeout, and a stopping
        # server waited for it at exit.
        context = contextvars.copy_context()
        try:
            future = self._executor.submit(context.run, self._call_broker, request)
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
