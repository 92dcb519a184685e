"""Golden tests for secret redaction and path placeholders (docs/compatibility.md#redaction, docs/compatibility.md#runtime)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from splice_build.security.redact import (
    MAX_REDACTED_CHARS,
    NOT_SCANNED,
    PathSanitizer,
    exact_forms,
    redact,
    scrub_json,
)

SPLICE_TOKEN = "splice_" + "A" * 43
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2lnbmF0dXJlLXZhbHVl"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"token {SPLICE_TOKEN} used", "token splice_[REDACTED] used"),
        ("gh ghp_" + "a" * 36 + " end", "gh [REDACTED] end"),
        ("pat github_pat_" + "B" * 30, "pat [REDACTED]"),
        ("key sk-ant-api03-" + "x" * 30, "key [REDACTED]"),
        ("key sk-proj-" + "y" * 30, "key [REDACTED]"),
        ("slack xoxb-1234567890-abcdef", "slack [REDACTED]"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "aws [REDACTED] here"),
        ("google AIza" + "c" * 35, "google [REDACTED]"),
        (f"jwt {JWT}", "jwt [REDACTED]"),
        ("Authorization: token abc123def", "Authorization: [REDACTED]"),
        ("proxy-authorization: Basic dXNlcjpwYXNz", "proxy-authorization: [REDACTED]"),
        ("sent Bearer abcdef123456 ok", "sent Bearer [REDACTED] ok"),
        ("Cookie: session=abc; id=2", "Cookie: [REDACTED]"),
        ("Set-Cookie: sid=xyz", "Set-Cookie: [REDACTED]"),
        ("https://user:hunter22@example.com/x", "https://[REDACTED]@example.com/x"),
        ("GET /a?page=2&access_token=abc123&x=1", "GET /a?page=2&access_token=[REDACTED]&x=1"),
        ("https://h/x?api_key=zzz", "https://h/x?api_key=[REDACTED]"),
        ("GITHUB_TOKEN=abc123 next", "GITHUB_TOKEN=[REDACTED] next"),
        ("DB_PASSWORD = hunter2", "DB_PASSWORD = [REDACTED]"),
        ("AWS_SECRET_ACCESS_KEY=wJalr", "AWS_SECRET_ACCESS_KEY=[REDACTED]"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- after",
            "-----[REDACTED] PRIVATE KEY----- after",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIE truncated", "-----[REDACTED] PRIVATE KEY-----"),
    ],
)
def test_pattern_classes(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "page=2&page_size=10",
        "/search?page=2&page_size=10&sort=stars",
        "splice_github_search-repositories",
        "splice_github_get-repo and splice_example_hello",
        "ordinary text with a key idea",
        "sk-short",
    ],
)
def test_ordinary_text_untouched(text: str) -> None:
    assert redact(text) == text


def test_exact_values_first_longest_first_min_length() -> None:
    text = "value=abcdefgh and abcdefghij and short=abc"
    assert redact(text, ["abcdefgh", "abcdefghij", "abc"]) == (
        "value=[REDACTED] and [REDACTED] and short=abc"
    )


@pytest.mark.parametrize(
    "encode",
    [
        lambda v: quote(v, safe=""),
        lambda v: quote(v, safe="/"),
        lambda v: quote_plus(v),
        lambda v: json.dumps(v)[1:-1],
        lambda v: json.dumps(v, ensure_ascii=False)[1:-1],
        lambda v: base64.b64encode(v.encode()).decode(),
        lambda v: base64.urlsafe_b64encode(v.encode()).decode().rstrip("="),
    ],
    ids=["url", "url-keep-slash", "form", "json", "json-unicode", "base64", "base64url"],
)
def test_encoded_forms_of_exact_values(encode: Any) -> None:
    """A value such as a base64-alphabet key (``+``, ``/``, ``=``) changes when it is
    encoded; every such form was shown as it was."""
    value = 'Qk9+zz/Pq1=x"Y \\ \u00e4\u00df'
    text = f"GET /v1?k={encode(value)} failed"
    assert encode(value) != value
    assert redact(text, [value]) == "GET /v1?k=[REDACTED] failed"


@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
@pytest.mark.parametrize("before", ["", "u:", "user:", '{"key": "'])
def test_a_value_inside_longer_base64_data(encode: Any, before: str) -> None:
    """A key base64-encoded with what surrounds it (``user:<key>``, a JSON config) has an
    encoding of its own at each of three offsets: none of its characters may be shown."""
    value = "Zq8mT2vLxW9pR4nB7cK1"
    data = encode(f'{before}{value}"}}'.encode()).decode()
    shown = redact(f"state={data}", [value]).removeprefix("state=")
    assert "[REDACTED]" in shown
    decodable = shown.split("[REDACTED]")
    hidden = data[len(decodable[0]) : len(data) - len(decodable[-1])]
    assert len(hidden) >= len(value) * 4 // 3 - 2, (shown, data)


def test_path_placeholders_all_forms_longest_first() -> None:
    sanitize = PathSanitizer.for_paths(
        {"/work/my proj/.splice/packages/@a/b": "<package>", "/work/my proj": "<project>"}
    )
    text = (
        "at /work/my proj/.splice/packages/@a/b/tools/t.mjs:3 "
        "file:///work/my%20proj/.splice/packages/@a/b/tools/t.mjs "
        "/work/my%20proj/data file:///work/my proj/x "
        "/work/my projection stays"
    )
    assert sanitize(text) == (
        "at <package>/tools/t.mjs:3 <package>/tools/t.mjs "
        "<project>/data <project>/x /work/my projection stays"
    )


LONG_GITHUB = "ghp_" + "Ab1" * 100  # 304 characters: past the old 255-character bound


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('DB_PASSWORD = "p@ss w" next', 'DB_PASSWORD = "[REDACTED]" next'),
        ("DB_PASSWORD='p@ss w' next", "DB_PASSWORD='[REDACTED]' next"),
        ('API_KEY="a \\" b c" next', 'API_KEY="[REDACTED]" next'),
        ('MY_TOKEN="unterminated value\nnext line', 'MY_TOKEN="[REDACTED]"\nnext line'),
        ("MY_SECRET=abc&def next", "MY_SECRET=[REDACTED] next"),
        ("x MY_SECRET=abc;def,ghi next", "x MY_SECRET=[REDACTED] next"),
        (f"token {LONG_GITHUB} end", "token [REDACTED] end"),
        ("pat github_pat_" + "b_" * 200 + " end", "pat [REDACTED] end"),
        ("google AIza" + "c" * 300 + " end", "google [REDACTED] end"),
    ],
)
def test_former_leaks(text: str, expected: str) -> None:
    """The three forms that leaked: a quoted value with a space, a value with ``&``, a token
    longer than 255 characters."""
    assert redact(text) == expected


def test_splice_token_is_a_whole_run() -> None:
    token = "splice_" + "Q" * 43
    assert redact(f"{token} {token}") == "splice_[REDACTED] splice_[REDACTED]"
    assert redact(f"x{token}") == f"x{token}"  # part of a longer word: a name, not a token
    assert redact(token + "Q") == token + "Q"  # 44 characters: not the token format


def test_text_beyond_the_cap_is_dropped_with_a_marker() -> None:
    filler = "a " * (MAX_REDACTED_CHARS // 2 - 10)
    secret = "ghp_" + "Z" * 40
    # The cap falls inside the token: its first characters must not stay visible.
    text = filler + secret + " tail secret " + secret
    out = redact(text)
    assert "ghp_" not in out and "ZZZZ" not in out and "tail" not in out
    assert len(out) <= MAX_REDACTED_CHARS + 100
    dropped = len(text) - len(out.rsplit("\n", 1)[0])
    assert out.endswith(f"\n[{dropped} characters cut before redaction]")


def test_cap_never_leaves_the_start_of_an_exact_value() -> None:
    value = "open sesame 42"
    text = "b" * (MAX_REDACTED_CHARS - 5) + " " + value + " and more"
    out = redact(text, [value])
    assert "open" not in out and "ses" not in out


def test_deadline_passed_gives_the_marker_never_the_text() -> None:
    text = "API_TOKEN=abc ghp_" + "x" * 30
    assert redact(text, deadline=time.monotonic() - 1) == NOT_SCANNED
    assert redact(text, deadline=time.monotonic() + 60) == "API_TOKEN=[REDACTED] [REDACTED]"


def test_lone_surrogates_are_scanned() -> None:
    assert redact("\ud800 GITHUB_TOKEN=abc \udfff") == "? GITHUB_TOKEN=[REDACTED] ?"
    assert redact("key \ud800secret-value", ["\ud800secret-value"]) == "key [REDACTED]"


@pytest.mark.parametrize(
    "text",
    [
        # Inputs that took a backtracking engine seconds to minutes: here each is a plain
        # linear scan (bench/bench_redact.py measures them).
        "TOKEN" * 20_000,
        "eyJ-" * 25_000,
        "a." * 50_000,
        "-----BEGIN " + "A " * 40_000,
    ],
    ids=["keyword-run", "jwt-prefixes", "scheme-dots", "pem-header"],
)
def test_adversarial_inputs_pass_unchanged(text: str) -> None:
    assert redact(text) == text


# -- scrub_json: exact values in a JSON result ---------------------------------------------
@pytest.mark.parametrize(
    "secret",
    ["tvly-plain0123456789", 'quo"te\\back-0123', "ctl\x01\x7fchars-0123", "ünïcode-ключ-0123"],
)
def test_scrub_json_replaces_values_in_strings_and_keys_however_escaped(secret: str) -> None:
    forms = exact_forms([secret])
    value = {"a": [f"<{secret}>", {"n": 1.5, "t": True, "z": None}], secret: f"%{quote(secret)}"}
    assert scrub_json(value, forms) == {
        "a": ["<[REDACTED]>", {"n": 1.5, "t": True, "z": None}],
        "[REDACTED]": "%[REDACTED]",
    }


def test_scrub_json_leaves_short_values_and_clean_results_untouched() -> None:
    value = {"title": "a banana", "token-like": "ghp_" + "a" * 36}
    assert scrub_json(value, exact_forms(["a", "ban"])) == value
    assert scrub_json(value, exact_forms(["not-in-there-0123"])) is value
