"""Every input a fuzz target found (tests/fuzz/cases/<target>/) replayed through that target.

The target's ``check`` is the same code ``python -m fuzz`` runs: it returns for an accepted
value or a documented refusal and raises for anything else, so a case fails again the moment
its defect returns.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fuzz.targets import TARGETS
from splice_build.errors import ErrorCode, SpliceError
from splice_build.project.workspace import read_config
from testing.fuzz_marks import target_marks

CASES = Path(__file__).parent / "cases"


def _cases() -> list[object]:
    return [
        pytest.param(directory.name, case, marks=target_marks(directory.name))
        for directory in sorted(CASES.iterdir())
        for case in sorted(directory.iterdir())
    ]


@pytest.mark.parametrize(
    ("target", "case"), _cases(), ids=lambda value: getattr(value, "name", value)
)
def test_found_input_is_refused_cleanly(target: str, case: Path) -> None:
    _check(target)(case.read_bytes())


@functools.cache
def _check(target: str) -> Callable[[bytes], None]:
    """One set-up per target, as ``python -m fuzz`` makes it for all its inputs: a target's
    helper process (the Node oracle of ``url_diff``) is started once, not once per case."""
    return TARGETS[target].setup()


@pytest.mark.parametrize("case", sorted((CASES / "pyproject").iterdir()), ids=lambda p: p.name)
def test_pyproject_with_a_non_table_on_the_splice_path_is_invalid_config(
    case: Path, tmp_path: Path
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_bytes(case.read_bytes())
    with pytest.raises(SpliceError) as caught:
        read_config(pyproject)
    assert caught.value.code == ErrorCode.INVALID_CONFIG
    assert "must be a table" in caught.value.message


@pytest.mark.parametrize(
    "url",
    [
        "https://xn--nxasmq6bccom/",
        "http://xn--abc.com/",
        "http://xn--a-ecp.com/",
        "http://xn--.com/",
        "https:xn--n--//a.ec/",  # decodes to the ASCII "n-"
        "https://xn--xn--wss/",  # a nested ACE prefix
        "https://xn--nx0smq6b.com/",  # decodes to code points unassigned here
        "http:\u06a4.\u058b:",  # unassigned before mapping (idna's tables map it)
        "http://x\u00dfn--fnxasmq6b.cho",  # a Unicode label that encodes to a nested prefix
    ],
)
def test_an_xn_label_that_does_not_decode_to_a_valid_label_is_an_invalid_url(url: str) -> None:
    from splice_build.security.urls import InvalidUrl, parse_url

    with pytest.raises(InvalidUrl):
        parse_url(url)


@pytest.mark.parametrize(
    "url", ["https://...../x", "http://a..b/", "http://example.com../", "http://192123814..:80/"]
)
def test_a_host_with_an_empty_label_is_refused_by_the_guard(url: str) -> None:
    from splice_build.security.net_errors import REASON_NOT_DECLARED, NetworkDenied
    from splice_build.security.targets import check_target
    from splice_build.security.urls import parse_url

    with pytest.raises(NetworkDenied) as caught:
        check_target(parse_url(url), ["*"])
    assert caught.value.reason == REASON_NOT_DECLARED
    assert "not a valid host name" in str(caught.value)


def test_valid_punycode_and_one_final_dot_still_pass() -> None:
    from splice_build.security.targets import check_target
    from splice_build.security.urls import parse_url

    assert check_target(parse_url("http://xn--nxasmq6b.com./"), ["*"]).host == "xn--nxasmq6b.com"


@pytest.mark.parametrize(
    "url",
    [
        "http:\u200d/124...2/",  # a lone ZWJ: UTS #46 CheckJoiners
        "http://a\u200db.com/",
        "http://xn--1ug.com/",
        "http://\u05d0a.com/",  # a right-to-left label ending in a left-to-right letter: CheckBidi
        "http://a\u05d0.com/",  # Node accepts it; the guard refuses (stricter, never laxer)
        "http://\x15\x00\u200dB]/",  # a joiner next to a character without a Unicode name
        "http://xn--nxftp://2co",  # decodes to a label that starts with a combining mark
        "http://\u0301a.com/",
    ],
)
def test_joiners_and_bidi_that_node_refuses_are_invalid_urls(url: str) -> None:
    from splice_build.security.urls import InvalidUrl, parse_url

    with pytest.raises(InvalidUrl):
        parse_url(url)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://\u0915\u094d\u200d.com/", "xn--11b6iy14e.com"),  # ZWJ after a virama
        ("http://\u05d0\u05d1.com/", "xn--4dbc.com"),
        (
            "http://\u0645\u062b\u0627\u0644.\u0625\u062e\u062a\u0628\u0627\u0631/",
            "xn--mgbh0fb.xn--kgbechtv",
        ),
    ],
)
def test_joiners_and_bidi_labels_node_accepts_still_parse(url: str, host: str) -> None:
    from splice_build.security.urls import parse_url

    assert parse_url(url).hostname == host


@pytest.mark.parametrize(
    "url",
    [
        "https:xn--nxb0m/",  # U+087B U+08C4: Node's Bidi table has no class for U+087B
        "https://\u087b\u0628/",
        "https://\u087b\u087b/",  # Node accepts it (no class, no Bidi rule): stricter, not laxer
        "https://\u0628\u200c\u0767/",  # Node's joining types lack U+0767
        "https://\u1703\u1715\u200d/",  # U+1715, a virama since Unicode 14
    ],
)
def test_context_rules_refuse_code_points_newer_than_unicode_3_2(url: str) -> None:
    """Finding 11: CheckBidi and CheckJoiners read only properties Unicode 3.2 fixed."""
    from splice_build.security.urls import InvalidUrl, parse_url

    with pytest.raises(InvalidUrl):
        parse_url(url)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://\u0628\u200c\u0628/", "xn--ngba799q"),  # ZWNJ between joining letters
        ("https://\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645/", "xn--mgbn2ecje63gr19l"),
    ],
)
def test_settled_joiner_contexts_and_non_bidi_names_still_parse(url: str, host: str) -> None:
    from splice_build.security.urls import parse_url

    assert parse_url(url).hostname == host


def test_secret_scan_skips_the_formats_a_text_cannot_hold() -> None:
    """Finding 12: each line ran every format's pattern, 10 µs a character for short lines.

    The patterns compile on first use, so a scan that ran none leaves none compiled (a fresh
    interpreter: another test may have compiled them here)."""
    code = (
        "from splice_build.security.redact import KEY_FORMATS\n"
        "from splice_build.security.secret_scan import scan_text\n"
        "assert scan_text('\\x17\\n' * 5000 + 'sk-live-abc', 'f') == []\n"
        "print(sorted(k.kind for k in KEY_FORMATS if 'pattern' in vars(k)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "['OpenAI/Anthropic-style key']"


def test_a_zero_padded_content_length_is_read_as_its_number() -> None:
    """Finding 20: ``int()`` refuses 4,300 digits or more, leading zeros included, and HTTP
    allows any number of them: ``content-length: 000…040`` (4,400 zeros) raised
    ``ValueError`` in the ``/mcp`` app, a 500. Now the value is its number: a body of that
    length is answered, and a zero-padded length over 1 MiB is 413, -32600."""
    import hashlib

    from fuzz.targets import _Asgi, _mcp_server
    from splice_build.mcp.admission import AsyncAdmission
    from splice_build.mcp.transport.http import MAX_BODY_BYTES, build_app

    server, internal = _mcp_server()
    asgi = _Asgi(build_app(server, hashlib.sha256(b"token").digest(), AsyncAdmission(1)))
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = b"POST /mcp\nauthorization: Bearer token\ncontent-type: application/json\n"
    zeros = b"0" * 4400
    status, answer = asgi.request(head + b"content-length: " + zeros + b"40\n\n" + body, {})
    assert (status, json.loads(answer)) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
    over = str(MAX_BODY_BYTES + 1).encode()
    status, answer = asgi.request(head + b"content-length: " + zeros + over + b"\n\n" + body, {})
    assert status == 413
    assert json.loads(answer)["error"] == {"code": -32600, "message": "Message too large"}
    assert internal == []


def test_a_host_longer_than_dns_allows_is_an_invalid_url() -> None:
    """Finding 23: ``https://ß!!…`` with labels of up to 150 characters, 915 in all, passed the
    guard, and its request URL (the ASCII form, 1,036 characters) did not parse again: idna's
    mapping refuses over 1,024 characters. No name over 253 characters resolves; such a host
    is now refused, whatever its form."""
    from splice_build.security.urls import InvalidUrl, parse_url

    label = "a" * 63
    longest = ".".join([label, label, label, "a" * 61])  # 253 characters
    assert parse_url(f"https://{longest}/").hostname == longest
    assert parse_url(f"https://{longest}./").hostname == f"{longest}."
    for host in (f"a{longest}", ".".join(["\u00df" + "!" * 60] * 4)):
        with pytest.raises(InvalidUrl) as caught:
            parse_url(f"https://{host}/")
        assert "longer than 253" in str(caught.value)
