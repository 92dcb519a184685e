"""JSON-RPC 2.0 dispatch for MCP (docs/compatibility.md#mcp); knows nothing about transports.

A transport parses bytes with ``parse_message`` (the hostile-input decoder of
``spec.untrusted_json``: whatever it refuses is -32700), calls ``Server.answer(message,
session)`` from any thread (requests are handled concurrently) and writes back whatever it
returns; ``None`` means "no response" (notifications, client responses). ``answer`` never
raises: a backend failure the client cannot fix becomes -32603 and is logged; when the
backend raises ``Refused`` (the project's state refused: a broken ``splice.lock``) the
error's message is ``CODE: message`` as in a tool result, and its ``data`` the
``io.spliceloom/error`` code.

Batches (docs/mcp.md#hostile-input): JSON-RPC batches exist only in protocol revision
2025-03-26 (later revisions removed them). A batch is answered only in a session of that
revision, holds 1 to ``MAX_BATCH`` messages of which at most one is a tool call (a call
takes one admission slot, docs/mcp.md#admission-control: a batch of many would hold it for
all of them in turn) and none an ``initialize``, and is otherwise refused as a whole with
one -32600 (id null).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

from splice_build.cancel import cancellable
from splice_build.errors import ErrorCode, SpliceError
from splice_build.mcp import mapping
from splice_build.mcp.admission import SERVER_BUSY, busy_data, is_tool_call
from splice_build.mcp.cancellation import InFlight, Ticket
from splice_build.mcp.interface import Backend, Refused, ServerInfo, UnknownResource, UnknownTool
from splice_build.records import dataclass
from splice_build.security.terminal import json_terminal_safe
from splice_build.spec import json_text
from splice_build.spec.json_depth import nesting_depth
from splice_build.spec.limits import MAX_INPUT_DEPTH
from splice_build.spec.untrusted_json import UntrustedJsonError, decode

# Newest first; ``initialize`` answers the requested version if listed, else the newest.
PROTOCOL_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = PROTOCOL_VERSIONS[0]
# structuredContent and outputSchema exist from this revision on (6.1).
STRUCTURED_SINCE = "2025-06-18"
# The only revision whose transports carry JSON-RPC batches.
BATCH_VERSIONS: tuple[str, ...] = ("2025-03-26",)
MAX_BATCH = 32

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
UNAUTHORIZED = -32001
CANCELLED = "notifications/cancelled"
STOPPING_MESSAGE = "Server stopping"  # SERVER_BUSY of a call the server's stop refused or cut

Log = Callable[[str], None]


class ParseError(ValueError):
    """The bytes are refused by ``spec.untrusted_json.decode`` (answered -32700)."""


@dataclass
class Session:
    """Per-connection state: the negotiated protocol version (stdio) or the header's (HTTP),
    and the scope whose calls its ``notifications/cancelled`` may reach (mcp/cancellation.py;
    None: none)."""

    protocol_version: str = LATEST_VERSION
    scope: Hashable | None = None

    @property
    def structured(self) -> bool:
        return self.protocol_version >= STRUCTURED_SINCE


def parse_message(data: bytes, *, max_bytes: int) -> Any:
    """Decode one JSON-RPC message (or batch) of at most ``max_bytes``; raises ParseError."""
    try:
        return decode(data, max_bytes=max_bytes)
    except UntrustedJsonError as exc:
        raise ParseError(str(exc)) from exc


def batch_refusal(messages: list[Any], session: Session) -> str | None:
    """Why a batch is refused as a whole (one -32600), or None when its messages are answered."""
    if session.protocol_version not in BATCH_VERSIONS:
        return f"Batches are not supported in protocol version {session.protocol_version}"
    if not messages:
        return "Empty batch"
    if len(messages) > MAX_BATCH:
        return f"Batch of more than {MAX_BATCH} messages"
    if sum(is_tool_call(message) for message in messages) > 1:
        return "Batch of more than one tools/call"
    if any(isinstance(item, dict) and item.get("method") == "initialize" for item in messages):
        # 2025-03-26, Lifecycle: "MUST NOT be part of a JSON-RPC batch"; answered, it set
        # the revision of the batch's later messages and (stdio) of the session.
        return "Batch holding initialize"
    return None


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def encode(message: Mapping[str, Any] | list[Any]) -> bytes:
    """One compact JSON line (no newline); non-ASCII kept, and every code point a terminal
    would act on or hide written as its JSON escape (``json_terminal_safe``).

    Every message of both transports leaves through here, so none carries a raw ``CSI``
    (U+009B), bidi override or U+2028 from a tool's ``structuredContent`` or a client's echoed
    words to a person who runs ``splice mcp`` (or ``curl``) in a terminal
    (docs/security.md#terminal-output); JSON itself escapes only the C0 controls. A client
    parses the same value.
    """
    return json_terminal_safe(json_text.dumps(message)).encode("utf-8")


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _valid_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _call_ids(batch: list[Any]) -> list[Any]:
    """The ids of a batch's tool calls (at most one: ``batch_refusal``)."""
    return [item.get("id") for item in batch if is_tool_call(item)]


def _stopped(message: Any) -> list[dict[str, Any]]:
    """``SERVER_BUSY`` "Server stopping" for each tool call id of a message or batch."""
    items = message if isinstance(message, list) else [message]
    return [
        error_response(item.get("id"), SERVER_BUSY, STOPPING_MESSAGE, busy_data())
        for item in items
        if is_tool_call(item) and _valid_id(item.get("id"))
    ]


class Server:
    """MCP methods over a ``Backend``; one instance serves every session of a process."""

    def __init__(self, backend: Backend, info: ServerInfo, *, log: Log | None = None) -> None:
        self._backend = backend
        self._info = info
        self._log: Log = log or (lambda _message: None)
        self._in_flight = InFlight(self._log)
        self._methods: dict[str, Callable[[dict[str, Any], Session], dict[str, Any]]] = {
            "initialize": self._initialize,
            "ping": lambda _params, _session: {},
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/templates/list": lambda _params, _session: {"resourceTemplates": []},
            "resources/read": self._resources_read,
        }

    # entry points ------------------------------------------------------------------------
    def track(self, message: Any, session: Session) -> Ticket:
        """The ticket of a message holding a tool call, opened as soon as it is read (before
        it waits for a slot) and closed by the transport once the call is answered or
        dropped: ``notifications/cancelled`` of the session's scope reaches it meanwhile."""
        return self._in_flight.open(message, session.scope)

    def answer(
        self, message: Any, session: Session, ticket: Ticket | None = None
    ) -> dict[str, Any] | list[Any] | None:
        """Answer a decoded message or batch; None when nothing is to be sent back. The tool
        call of a message with a ``ticket`` runs cancellable (splice_build/cancel.py), and once
        cancelled gets no answer."""
        if ticket is None:
            return self._answer(message, session)
        if not self._in_flight.start(ticket):  # cancelled, or the server stops: never runs
            return self.stopped_answer(message) if ticket.stopped else None
        with cancellable(ticket.token):
            answer = self._answer(message, session)
        if not ticket.token.cancelled:
            return answer
        if isinstance(answer, list):  # a batch: its other answers still go
            answer = [item for item in answer if item.get("id") not in _call_ids(message)]
            if ticket.stopped:
                answer += _stopped(message)
            return answer or None
        return self.stopped_answer(message) if ticket.stopped else None

    def stopped_answer(self, message: Any) -> dict[str, Any] | list[Any] | None:
        """What a call the server's stop refused or cut gets: ``SERVER_BUSY`` "Server
        stopping" for its id (a client may retry it elsewhere, or once the server is back)."""
        answers = _stopped(message)
        if isinstance(message, list):
            return answers or None
        return answers[0] if answers else None

    def begin_stop(self, grace: float) -> None:
        """The server stops (docs/mcp.md#stopping): calls waiting for a slot, and any that
        arrive from now on, never run; the running ones have ``grace`` seconds before
        ``cut``."""
        running = self._in_flight.stop(running=False)
        self._log(f"stopping: {running} running call(s) get up to {grace:g} s to finish")

    def abandon(self, why: str) -> None:
        """Cancel every call in flight, as its client's ``notifications/cancelled`` would (no
        answer is sent for them): the transport's only client is gone (stdio, whose client
        closed stdout). Over HTTP each call's own connection says whether its client left."""
        self._in_flight.cancel_all(why)

    def cut(self) -> None:
        """End the calls still running once the stop's grace is over (their processes end
        as on a cancellation); they are answered "Server stopping"."""
        self._in_flight.stop(running=True)

    def _answer(self, message: Any, session: Session) -> dict[str, Any] | list[Any] | None:
        if not isinstance(message, list):
            return self.handle(message, session)
        refusal = batch_refusal(message, session)
        if refusal is not None:
            return error_response(None, INVALID_REQUEST, refusal)
        answers = [answer for item in message if (answer := self.handle(item, session)) is not None]
        return answers or None

    def handle(self, message: Any, session: Session) -> dict[str, Any] | None:
        """Answer one decoded message; None for notifications and client responses."""
        if not isinstance(message, dict):
            return error_response(None, INVALID_REQUEST, "Invalid Request")
        has_id = "id" in message
        request_id = message.get("id")
        method = message.get("method")
        # A request id is a string or an integer, never null (docs/mcp.md#hostile-input); only
        # a client's response (no method, ignored below) may carry a null id.
        if has_id and not _valid_id(request_id) and not (request_id is None and method is None):
            return error_response(None, INVALID_REQUEST, "Invalid Request")
        if message.get("jsonrpc") != "2.0":
            return error_response(request_id, INVALID_REQUEST, "Invalid Request")
        if method is None and ("result" in message or "error" in message):
            return None  # a response to a request we never send; nothing to answer
        if not isinstance(method, str):
            return error_response(request_id, INVALID_REQUEST, "Invalid Request")
        if not has_id:
            if method == CANCELLED:
                self._in_flight.cancel(message.get("params"), session.scope)
            return None  # other notifications (initialized, …) need no action
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return error_response(request_id, INVALID_PARAMS, "params must be an object")
        handler = self._methods.get(method)
        if handler is None:
            return error_response(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
        try:
            result = handler(params, session)
        except _RpcError as exc:
            return error_response(request_id, exc.code, exc.message, exc.data)
        except Refused as refused:  # the project's state refused (a broken splice.lock, …)
            error = refused.error
            self._log(f"{method}: {error.code}: {error.message}")
            text = mapping.error_text(str(error.code), error.message, error.details, error.hint)
            data = mapping.error_meta({"code": str(error.code)})
            return error_response(request_id, INTERNAL_ERROR, text, data)
        except Exception as exc:
            self._log(f"internal error in {method}: {type(exc).__name__}: {exc}")
            return error_response(request_id, INTERNAL_ERROR, "Internal error")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    # methods -----------------------------------------------------------------------------
    def _initialize(self, params: dict[str, Any], session: Session) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in PROTOCOL_VERSIONS else LATEST_VERSION
        session.protocol_version = version
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"listChanged": False},
            },
            "serverInfo": {
                "name": self._info.name,
                "title": self._info.title,
                "version": self._info.version,
            },
        }
        if self._info.instructions:
            result["instructions"] = self._info.instructions
        return result

    def _tools_list(self, _params: dict[str, Any], session: Session) -> dict[str, Any]:
        tools = []
        for descriptor in self._backend.list_tools():
            try:
                tools.append(mapping.mcp_tool(descriptor, structured=session.structured))
            except mapping.ToolWithheld as exc:
                self._log(f"skipping tool {descriptor.get('mcpName')!r}: {exc}")
        return {"tools": tools}

    def _tools_call(self, params: dict[str, Any], session: Session) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise _RpcError(INVALID_PARAMS, "Missing tool name")
        arguments = params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _RpcError(INVALID_PARAMS, "Tool arguments must be an object")
        # Cheap guard before any backend work; the runtime re-checks depth, size and schema
        # before a tool process starts (docs/compatibility.md#runtime steps 3-6).
        if nesting_depth(arguments, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH:
            return mapping.error_result(
                str(ErrorCode.INPUT_TOO_LARGE),
                f"Input is nested deeper than {MAX_INPUT_DEPTH} levels",
            )
        try:
            outcome = self._backend.call_tool(name, arguments)
        except UnknownTool as exc:
            raise _RpcError(INVALID_PARAMS, f"Unknown tool: {exc.name}") from exc
        except SpliceError as exc:
            return mapping.error_result(str(exc.code), exc.message, exc.details, exc.hint)
        for line in (outcome.logs or "").splitlines():  # each labelled: none forges a log line
            self._log(f"{name}: {line}")
        return mapping.tool_result(outcome, structured=session.structured)

    def _resources_list(self, _params: dict[str, Any], _session: Session) -> dict[str, Any]:
        resources = []
        for resource in self._backend.list_resources():
            entry = {"uri": resource.uri, "name": resource.name, "mimeType": resource.mime_type}
            if resource.description:
                entry["description"] = resource.description
            resources.append(entry)
        return {"resources": resources}

    def _resources_read(self, params: dict[str, Any], _session: Session) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise _RpcError(INVALID_PARAMS, "Missing resource uri")
        try:
            contents = self._backend.read_resource(uri)
        except UnknownResource as exc:
            raise _RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri}) from exc
        return {
            "contents": [
                {"uri": contents.uri, "mimeType": contents.mime_type, "text": contents.text}
            ]
        }
