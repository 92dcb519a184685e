"""AI requests are validated before they are sent: through each real AI provider and a local
fake of its API, a request over any limit is refused as INVALID_INPUT and never reaches the
vendor; the largest allowed request does, with at most one system and one user message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from splice_build.broker import Broker
from splice_build.broker.keys import load_keys
from splice_build.broker.providers import PROVIDERS
from testing.fake_providers import FakeProviders, fake_providers, recognizable_keys

AI_HOSTS = {"openrouter": "openrouter.ai", "gemini": "generativelanguage.googleapis.com"}

REFUSED = [
    {"prompt": "x" * 100_001},
    {"prompt": "hi", "system": "s" * 20_001},
    {"prompt": "hi", "maxTokens": 2049},
    {"prompt": "hi", "maxTokens": 0},
    {"prompt": "hi", "image": "data:image/png;base64,AAAA"},
    {"prompt": "hi", "images": ["data:image/png;base64,AAAA"]},
    {"prompt": "hi", "tools": [{"name": "shell"}]},
    {"prompt": "hi", "messages": [{"role": "user", "content": "x"}] * 3},
    {"prompt": "hi", "temperature": 2.5},
    {"prompt": ""},
]


def _broker(fake: FakeProviders, name: str) -> Broker:
    keys = load_keys(env=recognizable_keys(), project_root=None, home=None)
    return Broker(keys=keys, providers={name: PROVIDERS[name]}, _unsafe_endpoints=fake.endpoints)


def _generate(broker: Broker, args: dict[str, Any]) -> dict[str, Any]:
    return broker.call({"package": "@t/p", "tool": "t", "capability": "ai.generate", "args": args})


def test_the_ai_providers_are_the_known_ones() -> None:
    assert {n for n, p in PROVIDERS.items() if "ai.generate" in p.capabilities} == set(AI_HOSTS)


@pytest.mark.parametrize("name", sorted(AI_HOSTS))
def test_requests_over_a_limit_never_reach_the_provider(name: str) -> None:
    with fake_providers() as fake:
        broker = _broker(fake, name)
        for args in REFUSED:
            result = _generate(broker, args)
            assert (result["status"], result["code"]) == ("ERROR", "INVALID_INPUT"), args
        assert fake.requests_to(AI_HOSTS[name]) == []


@pytest.mark.parametrize("name", sorted(AI_HOSTS))
def test_the_largest_allowed_request_is_sent_once(name: str) -> None:
    with fake_providers() as fake:
        broker = _broker(fake, name)
        args = {"prompt": "p" * 100_000, "system": "s" * 20_000, "maxTokens": 2048}
        result = _generate(broker, args)
        assert result["status"] == "LIVE", result
        [seen] = fake.requests_to(AI_HOSTS[name])
    body = seen.body
    if name == "openrouter":
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["max_tokens"] == 2048
        assert "tools" not in body
    else:
        assert len(body["contents"]) == 1 and "systemInstruction" in body
        assert body["generationConfig"]["maxOutputTokens"] == 2048
        assert "tools" not in body


ANSWERS = {
    "openrouter": lambda text: {"choices": [{"message": {"content": text}}]},
    "gemini": lambda text: {"candidates": [{"content": {"parts": [{"text": text}]}}]},
}


@pytest.mark.parametrize("name", sorted(AI_HOSTS))
@pytest.mark.parametrize(
    "text",
    ["NaN", '{"score": -Infinity}', "[" * 600 + "]" * 600],
    ids=["nan", "infinity", "deep"],
)
def test_requested_json_json_does_not_allow_is_a_provider_error(name: str, text: str) -> None:
    """The model writes the text ``responseSchema`` asks for, and a prompt (or web text in it)
    can make it write ``NaN``: that reached the result as a float with no JSON form."""
    with fake_providers() as fake:
        fake.behave(AI_HOSTS[name], "body:" + json.dumps(ANSWERS[name](text)))
        result = _generate(_broker(fake, name), {"prompt": "hi", "responseSchema": {}})
    assert (result["status"], result["code"]) == ("ERROR", "PROVIDER_ERROR"), result
    assert "is not the requested JSON" in result["message"]
    json.dumps(result, allow_nan=False)
