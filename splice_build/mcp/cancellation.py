"""Tool calls in flight, for ``notifications/cancelled`` (docs/mcp.md#cancellation).

A transport opens a ``Ticket`` for every message holding a ``tools/call`` as soon as it has
read it (so a call waiting for a slot is known too) and closes it when the call is answered
or dropped. A ticket is filed under its session's *scope* and the call's request id:
``notifications/cancelled`` reaches only the calls filed under the scope of the session it
came in. Over stdio the scope is the one client; over HTTP it is the client's address with
the ``mcp-session-id`` the server gave at ``initialize`` (a request without one has no
scope: its calls cannot be cancelled, since any other client sends no id as well). Ids match
as JSON values: ``1`` and ``"1"`` are two ids. A cancellation of an id nobody filed (never
issued, answered already, an ``initialize``) does nothing.

A server that stops (SIGTERM, docs/mcp.md#stopping) *stops* tickets: at once those of calls
that have not started (they never run), after the grace period those still running (their
processes end as on a cancellation). A stopped call is answered ``SERVER_BUSY`` "Server
stopping", unlike one its client cancelled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from splice_build.cancel import Cancellation
from splice_build.mcp.admission import is_tool_call
from splice_build.security.terminal import json_terminal_safe
from splice_build.spec import json_text

SHOWN_ID_CHARS = 64  # a request id in the log is cut there: it is the client's text

_Key = tuple[Hashable, bool, str | int]


def request_id(value: Any) -> str | int | None:
    """``value`` if it is a JSON-RPC request id (a string or an integer), else None."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def is_cancellation(message: Any) -> bool:
    """Whether a decoded message is a ``notifications/cancelled`` (a notification: no id)."""
    return (
        isinstance(message, dict)
        and message.get("method") == "notifications/cancelled"
        and "id" not in message
    )


def shown_id(value: str | int) -> str:
    """A request id as JSON for the log, terminal-safe and short. Only the string's first
    ``SHOWN_ID_CHARS`` code points are written (each is at least one character of the text,
    so the cut text is the same): the HTTP transport opens a ticket on its event loop, and
    a client's id may be a megabyte that would need escaping all along (30 ms of the loop
    per request)."""
    shown = value[: SHOWN_ID_CHARS + 1] if isinstance(value, str) else value
    text = json_terminal_safe(json_text.dumps(shown))
    return text if len(text) <= SHOWN_ID_CHARS else f"{text[:SHOWN_ID_CHARS]}…"


class Ticket:
    """One message's tool call while it waits or runs: its ``token`` is cancelled by a
    matching ``notifications/cancelled``."""

    def __init__(self, close: Callable[[], None], shown: str, log: Callable[[str], None]) -> None:
        self.token = Cancellation()
        self.started = False  # its call runs (InFlight.start)
        self.stopped = False  # cancelled because the server stops: answered, not dropped
        self._close = close
        self._shown = shown
        self._log = log

    def cancel(self, why: str) -> None:
        """Cancel the call and log ``why``, once: a repeated cancellation adds no log line."""
        if self.token.cancel():
            self._log(f"tools/call {self._shown} cancelled: {why}")

    def stop(self) -> None:
        """Cancel the call because the server stops (a call its client cancelled first stays
        cancelled and unanswered)."""
        if not self.token.cancelled:
            self.stopped = True
            self.cancel("the server is stopping")

    def close(self) -> None:
        """The call is answered or dropped: no cancellation reaches it any more."""
        self._close()


class InFlight:
    """The open tickets of a server, by scope and request id; used from any thread."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._tickets: dict[_Key, list[Ticket]] = {}
        self._open: set[Ticket] = set()  # every open ticket, filed or not (``stop``)
        self._stopping = False

    def open(self, message: Any, scope: Hashable | None) -> Ticket:
        """A ticket for the tool call(s) of a decoded message (or batch), filed under
        ``scope`` unless it is None; stopped at once when the server stops."""
        ids = _call_ids(message)
        keys = [] if scope is None else [_key(scope, found) for found in ids]
        shown = ", ".join(shown_id(found) for found in ids) or "without an id"
        ticket = Ticket(lambda: self._remove(keys, ticket), shown, self._log)
        with self._lock:
            for key in keys:
                self._tickets.setdefault(key, []).append(ticket)
            self._open.add(ticket)
            stopping = self._stopping
        if stopping:
            ticket.stop()
        return ticket

    def start(self, ticket: Ticket) -> bool:
        """The ticket's call is about to run: False (it must not) when it is cancelled or the
        server stops (the ticket is then ``stopped``, even before ``stop`` reaches it)."""
        with self._lock:
            ticket.started = not self._stopping and not ticket.token.cancelled
            if self._stopping and not ticket.token.cancelled:
                ticket.stopped = True
            return ticket.started

    def stop(self, *, running: bool) -> int:
        """The server stops: stop every call that has not started (they never will), and
        with ``running`` the running ones too. Returns how many calls were running."""
        with self._lock:
            self._stopping = True
            tickets = list(self._open)
        for ticket in tickets:
            if running or not ticket.started:
                ticket.stop()
        return sum(ticket.started for ticket in tickets)

    def cancel_all(self, why: str) -> None:
        """Cancel every open call, each logged with ``why``: the server's one client is gone
        (stdio: nobody reads its answers)."""
        with self._lock:
            tickets = list(self._open)
        for ticket in tickets:
            ticket.cancel(why)

    def _remove(self, keys: list[_Key], ticket: Ticket) -> None:
        with self._lock:
            self._open.discard(ticket)
            for key in keys:
                tickets = self._tickets.get(key, [])
                if ticket in tickets:
                    tickets.remove(ticket)
                if not tickets:
                    self._tickets.pop(key, None)

    def cancel(self, params: Any, scope: Hashable | None) -> None:
        """Apply ``notifications/cancelled`` params from a session of ``scope``: cancel the
        calls filed there under its ``requestId``; anything else is ignored."""
        found = request_id(params.get("requestId")) if isinstance(params, dict) else None
        if scope is None or found is None:
            return
        with self._lock:
            tickets = list(self._tickets.get(_key(scope, found), ()))
        for ticket in tickets:
            ticket.cancel("notifications/cancelled from its client")


def _key(scope: Hashable, value: str | int) -> _Key:
    return (scope, isinstance(value, str), value)


def _call_ids(message: Any) -> list[str | int]:
    """The request id of the tool call of a decoded message (or batch), if it has one. A
    batch of more than one call runs none (``protocol.batch_refusal`` refuses it whole), so
    it files no id: stdio queues a batch before that refusal, and a 4 MiB line's 120,000
    call ids took 25 MB a ticket, for up to ``MAX_IN_FLIGHT`` messages."""
    items = message if isinstance(message, list) else [message]
    calls = [item for item in items if is_tool_call(item)]
    found = request_id(calls[0].get("id")) if len(calls) == 1 else None
    return [] if found is None else [found]
