"""The memory a capability call makes the host process hold: results counted before they
are written (json_size), and provider answers taken from a process budget before each chunk
is read (docs/capabilities.md)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from splice_build.broker.providers.http import BODIES_IN_FLIGHT, MAX_BYTES_IN_FLIGHT
from splice_build.runtime.result_json import WRITTEN_WHOLE, json_size, write_json

# Characters of every class json.dumps(ensure_ascii=False) writes differently: each control
# character, the two escaped ones, ASCII, DEL, two-, three- and four-byte UTF-8.
_CHARACTERS = [chr(c) for c in range(0x21)] + ['"', "\\", "a", "\x7f", "é", "€", "\u2028", "😀"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(10**30), 10**30)
    if kind == 2:
        return rng.uniform(-1e300, 1e300) * rng.choice([1, 1e-300, 0])
    if kind in (3, 4, 5):
        return "".join(rng.choices(_CHARACTERS, k=rng.randrange(12)))
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    keys = [_value(rng, 5) for _ in range(rng.randrange(4))]
    return {k if isinstance(k, str) else str(k): _value(rng, depth + 1) for k in keys} | (
        {1: 2, None: 3, 2.5: 4, False: 5} if rng.random() < 0.2 else {}
    )


def test_json_size_is_what_json_dumps_writes() -> None:
    rng = random.Random(7)
    for _ in range(1500):
        value = _value(rng)
        written = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        assert json_size(value, 1 << 30) == len(written.encode()), value
        assert json_size(value, 0) > 0
    for odd in (float("nan"), [float("inf")], {"a": object()}, "\ud800", {"\udfff": 1}):
        with pytest.raises((ValueError, TypeError)):
            json_size(odd, 1 << 30)


def test_a_large_result_is_written_as_json_dumps_writes_it() -> None:
    """write_json writes a large result piece by piece (long strings in slices): the same
    bytes as json.dumps, whose one whole str it never makes."""
    rng = random.Random(11)
    long = "".join(rng.choices(_CHARACTERS, k=100_000))  # cut inside escapes and emoji
    values = [_value(rng) for _ in range(1000)]
    big = {"long": long, "values": values, "ascii": "a" * 100_000, 7: [long[:70_000]]}
    written = json.dumps(big, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    size = json_size(big, 1 << 30)
    assert size == len(written.encode()) > WRITTEN_WHOLE
    assert write_json(big, size) == written.encode()
    for odd in ([float("nan")], {"a": object()}, "\ud800" + "x" * 70_000):
        with pytest.raises((ValueError, TypeError)):
            write_json([odd, "x" * WRITTEN_WHOLE], WRITTEN_WHOLE + 1)


def test_json_size_stops_past_its_limit() -> None:
    """A result far over the limit is not walked to its end: of a million strings, the
    commas are counted and a few strings (100 MB of JSON in all)."""
    many = ["x" * 100] * 1_000_000
    assert 1000 < json_size(many, 1000) < 1_000_000 + 1000


class _Stream:
    """A provider's answer as the guarded session streams it (no network)."""

    status = 200
    headers = (("content-type", "application/json"),)

    def __init__(self, body: bytes) -> None:
        self._body = body

    def read_chunk(self, count: int) -> bytes:
        piece, self._body = self._body[:count], self._body[count:]
        return piece

    def close(self) -> None:
        pass


class _Failing(_Stream):
    def read_chunk(self, count: int) -> bytes:
        from splice_build.security.net_errors import NetworkTimeout

        raise NetworkTimeout("Reading the response timed out")


class _Session:
    def __init__(self) -> None:
        self.opened = 0

    def open(self, method: str, url: str, *args: Any, **options: Any) -> _Stream:
        self.opened += 1
        return (_Failing if "geckoterminal" in url else _Stream)(b'{"pairs": []}')


def test_an_answer_past_the_process_budget_is_capability_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process's capability calls hold at most MAX_BYTES_IN_FLIGHT of provider answers:
    a chunk that would pass it is not read, the call is CAPABILITY_LIMIT (no other provider
    tried), and every call gives its bytes back once its result is made."""
    from splice_build.broker import Broker
    from splice_build.broker.keys import load_keys
    from splice_build.broker.providers.http import ProviderClient

    session = _Session()
    monkeypatch.setattr(ProviderClient, "_guarded", lambda self: session)
    broker = Broker(keys=load_keys(env={}, project_root=None, home=None))
    request = {"package": "@t/p", "tool": "t"}
    held = BODIES_IN_FLIGHT.held
    others = MAX_BYTES_IN_FLIGHT - held - 1024  # other calls' answers fill the budget
    assert BODIES_IN_FLIGHT.take(others)
    try:
        refused = broker.call({**request, "capability": "market.price", "args": {"token": "tst"}})
    finally:
        BODIES_IN_FLIGHT.give_back(others)
    assert session.opened == 1  # dexscreener's answer, unread; geckoterminal not asked
    answered = broker.call({**request, "capability": "market.search", "args": {"query": "q"}})
    # A read that fails gives its chunk back too (each failure kept 256 KiB: 256 of them
    # and every capability call of the process was CAPABILITY_LIMIT).
    failed = broker.call(
        {
            **request,
            "capability": "market.ohlcv",
            "args": {"network": "robinhood", "pool": "0x" + "2e" * 20},
        }
    )
    assert (refused["status"], refused["code"]) == ("ERROR", "CAPABILITY_LIMIT"), refused
    assert answered["status"] == "LIVE", answered
    assert (failed["status"], failed["code"]) == ("ERROR", "PROVIDER_ERROR"), failed
    assert BODIES_IN_FLIGHT.held == held


def test_a_large_result_costs_the_channel_about_its_own_bytes() -> None:
    """A 4 MiB result holding one emoji: json.dumps made its text a 16 MiB str twice (the
    escaped string, then the joined text) in the channel's size check, and again for the
    session's frame (32 MiB traced at the peak). It is now written once, as UTF-8 in pieces
    (8 MiB), and the frame is put around those bytes."""
    import threading
    import tracemalloc

    from splice_build.runtime.capabilities import CapabilityChannel, CapabilityReply
    from splice_build.runtime.limits import MAX_CAPABILITY_RESULT_BYTES
    from splice_build.runtime.protocol import CapabilityRequest, encode_capability_result

    text = "a" * (MAX_CAPABILITY_RESULT_BYTES - 200) + "\U0001f600"
    result = {"status": "LIVE", "data": {"text": text}}

    class Answers:
        def call(self, request: Any) -> Any:
            return result

    replies: list[CapabilityReply] = []
    answered = threading.Event()
    channel = CapabilityChannel(
        package="@t/p",
        tool="t",
        declared=["web.search"],
        broker=Answers(),
        sanitize=str,
        on_reply=lambda reply: (replies.append(reply), answered.set()),
    )
    tracemalloc.start()
    try:
        assert channel.handle(CapabilityRequest(1, "web.search", {"query": "q"})) is None
        assert answered.wait(60)
        (reply,) = replies
        frame = encode_capability_result(1, result=reply.result, encoded=reply.encoded)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        channel.close()
    assert json.loads(frame)["result"] == result
    assert peak < 4 * MAX_CAPABILITY_RESULT_BYTES, f"{peak >> 20} MiB"


def test_a_call_holds_one_answer_of_the_budget_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """web.extract of ten pages, maxCharacters 100 (a tool's choice): Tavily's and Exa's
    answers are too large, Firecrawl scrapes the ten. The failed providers' answers and every
    scrape were held to the call's end: with 5 MiB answers one call held 56 MiB of the
    process's 64 MiB, and every other package's capability calls were CAPABILITY_LIMIT while
    it ran. Now no answer is held when the next request is sent (Firecrawl keeps only its
    pages' text)."""
    from splice_build.broker.providers.http import ProviderClient
    from testing.fake_providers import broker_for, fake_providers

    most = 256 * 1024
    held_at_send: list[int] = []
    send = ProviderClient._send

    def observed(self: ProviderClient, *args: Any) -> Any:
        held_at_send.append(BODIES_IN_FLIGHT.held - before)
        return send(self, *args)

    monkeypatch.setattr(ProviderClient, "_send", observed)
    before = BODIES_IN_FLIGHT.held
    page = json.dumps({"data": {"markdown": "x" * (most - 100), "metadata": {"title": "t"}}})
    with fake_providers() as fake:
        fake.oversize_bytes = 2 * most
        fake.behave("api.tavily.com", "oversize")
        fake.behave("api.exa.ai", "oversize")
        fake.behave("api.firecrawl.dev", "body:" + page)
        urls = [f"https://example.com/{n}" for n in range(10)]
        result = broker_for(fake, max_response_bytes=most).call(
            {
                "package": "@t/p",
                "tool": "t",
                "capability": "web.extract",
                "args": {"urls": urls, "maxCharacters": 100},
            }
        )
    assert (result["status"], len(result["data"]["pages"])) == ("LIVE", 10), result
    assert len(held_at_send) == 12
    assert max(held_at_send) <= 10 * 100, held_at_send  # main: 2.8 MB before the tenth scrape
    assert BODIES_IN_FLIGHT.held == before
