"""@splice/onchain in the real sandbox against a local fake JSON-RPC endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.broker import Broker
from splice_build.broker.keys import load_keys
from testing.capability_skills import assert_capability_package, load, run
from testing.fake_providers import broker_for, fake_providers, recognizable_keys

pytestmark = pytest.mark.node

ADDRESS = "0x" + "1f" * 20
HASH = "0x" + "ab" * 32


def test_package() -> None:
    assert_capability_package(
        "onchain",
        ["onchain.balance", "onchain.transaction", "onchain.token"],
        ["balance", "transaction", "token"],
    )


def test_unavailable_without_an_endpoint(tmp_path: Path) -> None:
    runtime, package = load(
        "onchain", tmp_path, Broker(keys=load_keys(env={}, project_root=None, home=None))
    )
    out = run(runtime, package, "balance", {"address": ADDRESS})
    assert out["status"] == "UNAVAILABLE" and "ROBINHOOD_RPC_URL" in out["reason"]


def test_live_cached_not_found_and_errors(tmp_path: Path) -> None:
    keys = recognizable_keys()
    with fake_providers() as fake:
        runtime, package = load("onchain", tmp_path, broker_for(fake))
        balance = run(runtime, package, "balance", {"address": ADDRESS})
        assert balance["status"] == "LIVE", balance
        assert (
            balance["data"]["wei"] == "1500000000000000000" and balance["data"]["balance"] == "1.5"
        )
        assert balance["provenance"]["blockNumber"] == 1234
        assert run(runtime, package, "balance", {"address": ADDRESS})["status"] == "CACHED"
        tx = run(runtime, package, "transaction", {"hash": HASH})
        assert tx["data"]["status"] == "success" and tx["data"]["gasUsed"] == 21000
        missing = run(runtime, package, "transaction", {"hash": "0x" + "ab" * 31 + "00"})
        assert missing["status"] == "ERROR" and missing["code"] == "NOT_FOUND"
        token = run(runtime, package, "token", {"address": ADDRESS})
        assert (token["data"]["name"], token["data"]["symbol"], token["data"]["decimals"]) == (
            "Test Token",
            "TST",
            18,
        )
        # The key rides in the URL path and query; it reached the fake, and no result shows it.
        assert "LEAKCANARY0007rpcpathkey" in fake.requests_to("rpc.robinhood.test")[0].path
        fake.behave("rpc.robinhood.test", "status:403")
        failed = run(runtime, package, "balance", {"address": "0x" + "2e" * 20})
        assert failed["status"] == "ERROR" and "{ROBINHOOD_RPC_URL}" in failed["message"]
        text = json.dumps([balance, tx, missing, token, failed])
        assert not any(value in text for value in keys.values())
        assert "LEAKCANARY" not in text
