"""The checked lookup of net_guard.mjs, driven directly (one Node process): one resolution
per connection, every answer checked, and net is handed exactly the checked addresses."""

from __future__ import annotations

import pytest

from testing.node_guard import run_driver

pytestmark = pytest.mark.node

PUBLIC = ["2606:4700:4700::1111", "93.184.215.14"]


def test_lookup_hands_over_exactly_the_checked_answers() -> None:
    answers = run_driver(
        lookups=[
            {"url": "http://ok.test/", "patterns": ["*"], "table": {"ok.test": [PUBLIC]}},
            {
                "url": "http://rebind.test/",
                "patterns": ["*"],
                "table": {"rebind.test": [["93.184.215.14"], ["127.0.0.1"]]},
            },
            {
                "url": "http://mixed.test/",
                "patterns": ["*"],
                "table": {"mixed.test": [[*PUBLIC, "::ffff:127.0.0.1"]]},
            },
            {"url": "http://gone.test/", "patterns": ["*"], "table": {}},
            {
                "url": "http://localhost/",
                "patterns": ["localhost"],
                "table": {"localhost": [["127.0.0.1", "::1"]]},
            },
        ]
    )["lookups"]
    ok, rebind, mixed, gone, local = answers
    assert ok["error"] is None and ok["addresses"] == PUBLIC and ok["lookups"] == 1
    assert len(ok["allowed"]) == 2
    assert rebind["addresses"] == ["93.184.215.14"] and rebind["lookups"] == 1
    assert mixed["addresses"] is None
    assert mixed["error"]["code"] == "ERR_ACCESS_DENIED"
    assert "::ffff:127.0.0.1" in mixed["error"]["message"]
    assert gone["error"]["code"] == "ENOTFOUND"
    assert local["addresses"] == ["127.0.0.1", "::1"]
