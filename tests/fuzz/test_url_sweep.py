"""Every code point a UTS #46 context rule reads, through the guard and the bundled Node's URL.

CheckBidi reads Bidi classes, CheckJoiners combining classes and joining types: properties
whose tables the guard (this Python's Unicode data, ``idna``) and Node (its own, older Bidi
table) keep at different Unicode versions. Each such code point goes into the contexts where
the rules read it; wherever the guard accepts a host, Node must parse the same one
(finding 11 of fuzz/README.md and the sweep that followed it).
"""

from __future__ import annotations

import json
import subprocess
import unicodedata

import pytest

from splice_build.runtime.node import find_node
from splice_build.security.urls import InvalidUrl, parse_url

pytestmark = pytest.mark.node

# What Node's URL makes of each string of a JSON list: the hostname, or null when it throws.
_ORACLE = """
const inputs = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const parse = (s) => { try { return new URL(s).hostname; } catch { return null; } };
process.stdout.write(JSON.stringify(inputs.map(parse)));
"""
_CONTEXTS = ("X", "X\u0628", "\u0628X", "\u0628\u200cX", "X\u200c\u0628", "aX\u200d", "X.\u0628")


def _read_by_context_rules(char: str) -> bool:
    import idna
    from idna.intranges import intranges_contain

    return (
        unicodedata.bidirectional(char) in ("R", "AL", "AN", "NSM")
        or unicodedata.combining(char) == 9
        or any(
            intranges_contain(ord(char), ranges) for ranges in idna.idnadata.joining_types.values()
        )
    )


def test_where_the_guard_accepts_a_host_node_parses_the_same() -> None:
    chars = [
        chr(c)
        for c in range(0x80, 0x110000)
        if unicodedata.category(chr(c)) not in ("Cn", "Cs", "Co") and _read_by_context_rules(chr(c))
    ]
    accepted: dict[str, str] = {}
    for char in chars:
        for context in _CONTEXTS:
            url = f"https://{context.replace('X', char)}/"
            try:
                accepted[url] = parse_url(url).hostname
            except InvalidUrl:
                continue
    done = subprocess.run(
        [str(find_node().path), "-e", _ORACLE],
        input=json.dumps(list(accepted)).encode("utf-8"),
        capture_output=True,
        check=True,
        timeout=120,
    )
    node = dict(zip(accepted, json.loads(done.stdout), strict=True))
    differ = {url: (host, node[url]) for url, host in accepted.items() if node[url] != host}
    assert len(accepted) > 5_000  # the sweep reached the rules, not only refusals
    assert not differ, (
        f"{len(differ)} hosts the guard accepts differently: {list(differ.items())[:10]}"
    )
