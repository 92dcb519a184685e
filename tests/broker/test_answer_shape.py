"""A vendor's answer of an unexpected shape is the vendor's failure, not a crash of ours.

Every capability of every provider (the ``provider_answers`` fuzz target's calls) is served
answers of wrong types by the local fake vendors: the tool gets ``PROVIDER_ERROR`` naming the
endpoint and the unexpected shape, and nothing is logged at ERROR (the broker's "crashed"
line, kept for our own bugs). Before ``broker/providers/answer_shape.py`` fifteen of the
twenty-six calls ended in the broker's last resort: "internal error (TypeError)".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest

from fuzz.provider_targets import CALLS
from splice_build.broker.providers import PROVIDERS
from testing.fake_providers import HOSTS, FakeProviders, broker_for, fake_providers

# Wrong types where each provider reads a list, an object or a string.
_LISTS = ("results", "data", "result", "pairs", "items", "choices", "models", "candidates")
WRONG_SHAPES = (
    '{"results": 5}',
    "5",
    "{" + ", ".join(f'"{key}": 5' for key in (*_LISTS, "answer", "citations", "links")) + "}",
    "{" + ", ".join(f'"{key}": [5]' for key in _LISTS) + "}",
)
_SHAPE = re.compile(r"[a-z]+ (GET|POST) \S+: the answer had an unexpected shape \(\w+\)")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProviders]:
    with fake_providers() as server:
        yield server


def _call(fake: FakeProviders, name: str, capability: str, args: dict, body: str) -> dict:
    for host in HOSTS:
        fake.behave(host, "body:" + body)
    try:
        broker = broker_for(fake, providers={name: PROVIDERS[name]})
        return broker.call({"package": "@t/p", "tool": "t", "capability": capability, "args": args})
    finally:
        fake.reset()


def test_exa_search_on_a_number_for_results(
    fake: FakeProviders, caplog: pytest.LogCaptureFixture
) -> None:
    answer = _call(fake, "exa", "web.search", {"query": "q"}, '{"results": 5}')
    assert answer["status"] == "ERROR"
    assert answer["code"] == "PROVIDER_ERROR"
    assert answer["message"] == ("exa POST /search: the answer had an unexpected shape (TypeError)")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_every_capability_refuses_wrong_shapes_without_a_crash(
    fake: FakeProviders, caplog: pytest.LogCaptureFixture
) -> None:
    refused_for_shape = set()
    for name, capability, args in CALLS:
        for body in WRONG_SHAPES:
            answer = _call(fake, name, capability, args, body)
            where = f"{name} {capability} on {body}: {answer!r:.300}"
            if answer["status"] == "LIVE":  # a shape the provider reads as empty
                continue
            message = answer["message"]
            assert "internal error" not in message, where
            assert answer["code"] in ("PROVIDER_ERROR", "NOT_FOUND"), where
            if "unexpected shape" in message:
                assert _SHAPE.fullmatch(message) and message.startswith(name + " "), where
                refused_for_shape.add((name, capability))
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    # the providers that read a vendor's lists and objects without checking their types
    assert len(refused_for_shape) >= 15
