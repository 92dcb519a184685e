"""Golden tests for secret redaction and path placeholders (docs/compatibility.md#redaction, docs/compatibility.md#runtime)."""

from __future__ import annotations

import pytest

from splice_build.security.redact import PathSanitizer, redact

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
            "[REDACTED PRIVATE KEY] after",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIE truncated", "[REDACTED PRIVATE KEY]"),
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
