"""Secret redaction and path placeholders for everything Splice shows or returns.

``redact(text, secret_values)`` replaces the exact secret values first (≥ 6 characters,
longest first, each also percent-encoded, JSON-escaped and in base64: ``secret_forms``), then
every pattern class of docs/compatibility.md#redaction, in that order.
``PathSanitizer`` replaces absolute package/project paths (plain, ``file://`` URL and
URL-encoded forms, longest first) with ``<package>`` / ``<project>`` (docs/compatibility.md#runtime).
Both are pattern-based: they cannot recognise arbitrary secrets (docs/security.md).

Why RE2 (``google-re2``): the text comes from tools and servers we do not trust, and a
backtracking engine spends quadratic time on crafted input (a 100 KB run of one keyword cost
19 s, holding the GIL, so a whole ``splice mcp`` server stalled). RE2 matches in time linear
in the text, whatever the text, and releases the GIL while it scans. It has no look-around:
where a boundary needs one (a Splice token ends where its run ends), the closing character is
matched too and kept. Text longer than ``MAX_REDACTED_CHARS`` is cut before it is scanned,
and a ``deadline`` bounds the whole pass (docs/security.md#redaction).
"""

from __future__ import annotations

import base64
import functools
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from splice_build.records import dataclass

if TYPE_CHECKING:
    from re2 import _Match as Match
    from re2 import _Regexp as Regexp

REDACTED = "[REDACTED]"
MIN_SECRET_VALUE_LENGTH = 6
# Longer text is cut here before it is scanned; what follows is dropped, never shown. As large
# as a tool's largest output (1 MiB), so an ordinary error or log is never cut.
MAX_REDACTED_CHARS = 1024 * 1024
# Shown instead of text that could not be scanned before the deadline.
NOT_SCANNED = "[REDACTED: not scanned within the time limit]"
# Characters a token can be made of: a cut inside such a run drops the whole run, so the
# first characters of a secret cut in two never stay visible.
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.~+/="

_SECRET_QUERY_NAMES = (
    "access_token|refresh_token|id_token|token|api_key|api-key|apikey|key|secret|"
    "client_secret|password|passwd|pwd|sig|signature|auth"
)
_SECRET_NAME_WORDS = (
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "CREDENTIAL",
)
_SPLICE_TOKEN_LENGTH = len("splice_") + 43
_RE2_SPACE = " \t\n\f\r"  # RE2's \s


@dataclass(frozen=True)
class KeyFormat:
    """A credential format: what it is called, how it looks, what replaces it.

    ``length``: the secret is the first ``length`` characters of a match; the rest is the
    character that closes it (RE2 has no look-ahead), kept as it was. ``literals``: groups of
    strings, one of each group in every match: text that lacks them is not scanned.
    """

    kind: str
    source: str  # the RE2 pattern, compiled on first use (nothing is compiled at import)
    literals: tuple[tuple[str, ...], ...]
    replacement: str = REDACTED
    length: int | None = None

    def may_match(self, text: str) -> bool:
        """False when ``text`` lacks a literal every match holds (fast substring searches)."""
        return _holds(text, self.literals)

    @functools.cached_property
    def pattern(self) -> Regexp:
        return _compile(self.source)

    def finditer(self, text: str) -> Iterator[Match]:
        """The matches of this format in ``text`` (linear time)."""
        return self.pattern.finditer(text)

    def sub(self, text: str) -> str:
        if self.length is None:
            return self.pattern.sub(lambda _m: self.replacement, text)
        size = self.length
        return self.pattern.sub(lambda m: self.replacement + m.group(0)[size:], text)


# Classes 1–8 of docs/compatibility.md#redaction: the credential formats (also what `splice
# secret-scan` looks for, reporting ``kind``). Variable-length formats take the whole run,
# however long: a token of 300 characters leaves no tail. No pattern has a capture group:
# RE2 finds a match's bounds with its DFAs, and only groups would need its slower NFA.
KEY_FORMATS: tuple[KeyFormat, ...] = (
    KeyFormat(
        "PEM private key",
        r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        (("-----BEGIN ",),),
        f"-----{REDACTED} PRIVATE KEY-----",
    ),
    # exactly 43 token characters as a whole run, so MCP tool names stay untouched
    KeyFormat(
        "Splice registry token",
        r"\bsplice_[A-Za-z0-9_-]{43}(?:[^A-Za-z0-9_-]|\z)",
        (("splice_",),),
        f"splice_{REDACTED}",
        _SPLICE_TOKEN_LENGTH,
    ),
    KeyFormat(
        "GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        (("gh", "github"), ("_",)),
    ),
    KeyFormat("OpenAI/Anthropic-style key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}", (("sk-",),)),
    KeyFormat("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", (("xox",),)),
    KeyFormat("AWS access key id", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", (("AKIA", "ASIA"),)),
    KeyFormat("Google API key", r"\bAIza[A-Za-z0-9_-]{35,}", (("AIza",),)),
    KeyFormat(
        "JSON Web Token",
        r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        (("eyJ",),),
    ),
)


def _holds(text: str, literals: tuple[tuple[str, ...], ...]) -> bool:
    return all(any(literal in text for literal in group) for group in literals)


def _keep_prefix(prefix: str) -> Callable[[Match], str]:
    """Keep what ``prefix`` (anchored, linear: it is known to match) reads, redact the rest.
    Compiled on its first match: most processes redact no header (two cost a cold
    ``splice run`` ~0.15 ms)."""

    @functools.cache
    def compiled() -> re.Pattern[str]:
        return re.compile(prefix)

    def replace(match: Match) -> str:
        found = match.group(0)
        head = compiled().match(found)
        return (found[: head.end()] if head else "") + REDACTED

    return replace


def _keep_name(match: Match) -> str:
    """``NAME = "value"`` → ``NAME = "[REDACTED]"``: the whole quoted value goes, spaces too."""
    found = match.group(0)
    cut = found.index("=") + 1
    cut += len(found[cut:]) - len(found[cut:].lstrip(_RE2_SPACE))
    quote_char = found[cut : cut + 1]
    if quote_char in ("'", '"'):
        return found[:cut] + quote_char + REDACTED + quote_char
    return found[:cut] + REDACTED


def _keep_upto(marker: str, suffix: str = "") -> Callable[[Match], str]:
    def replace(match: Match) -> str:
        found = match.group(0)
        return found[: found.index(marker) + len(marker)] + REDACTED + suffix

    return replace


# RE2's \s, spelled out so that Python's re (which re-reads a match's prefix) agrees with it.
_HEADER_SEPARATOR = r"[\"']?[\t\n\f\r ]*[:=][\t\n\f\r ]*[\"']?"

# Classes 9–14 of docs/compatibility.md#redaction, where a secret would be by context:
# (pattern, replacement, literal groups as above, whether they are compared case-folded).
_CONTEXT_PATTERNS: tuple[
    tuple[str, Callable[[Match], str], tuple[tuple[str, ...], ...], bool], ...
] = (
    # 9. Authorization / Proxy-Authorization header values (any scheme), to the end of line
    (
        rf"(?im)\b(?:proxy-)?authorization{_HEADER_SEPARATOR}[^\r\n\"',}}]+",
        _keep_prefix(rf"(?i)(?:proxy-)?authorization{_HEADER_SEPARATOR}"),
        (("authorization",),),
        True,
    ),
    # 10. bare Bearer / Basic credentials
    (
        r"\b(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}",
        lambda m: m.group(0)[: 6 if m.group(0).startswith("Bearer") else 5] + " " + REDACTED,
        (("Bearer", "Basic"),),
        False,
    ),
    # 11. Cookie / Set-Cookie header values
    (
        rf"(?im)\b(?:set-)?cookie{_HEADER_SEPARATOR}[^\r\n\"'}}]+",
        _keep_prefix(rf"(?i)(?:set-)?cookie{_HEADER_SEPARATOR}"),
        (("cookie",),),
        True,
    ),
    # 12. credentials in URLs
    (
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@",
        _keep_upto("://", "@"),
        (("://",),),
        False,
    ),
    # 13. secret-looking query parameters
    (
        rf"(?i)[?&](?:{_SECRET_QUERY_NAMES})=[^&#\s\"']+",
        _keep_upto("="),
        (("=",), ("?", "&")),
        False,
    ),
    # 14. NAME=value assignments with a secret-looking UPPERCASE name: a quoted value whole
    # (escapes included, to its closing quote or the end of the line), else up to whitespace
    (
        rf"[A-Z0-9_]*(?:{'|'.join(_SECRET_NAME_WORDS)}S?)[A-Z0-9_]*\s*=\s*"
        r"(?:\"(?:[^\"\\\r\n]|\\.)*\"?|'(?:[^'\\\r\n]|\\.)*'?|[^\s\"']+)",
        _keep_name,
        (("=",), _SECRET_NAME_WORDS),
        False,
    ),
)


@dataclass(frozen=True)
class _Rule:
    apply: Callable[[str], str]
    literals: tuple[tuple[str, ...], ...]
    folded: bool  # compare the literals with the case-folded text

    def needed(self, text: str, folded: str) -> bool:
        return _holds(folded if self.folded else text, self.literals)


def _compile(source: str) -> Regexp:
    import re2  # on first use: most runs have nothing to redact

    return re2.compile(source)


def _context_rule(source: str, replace: Callable[[Match], str]) -> Callable[[str], str]:
    pattern = _compile(source)
    return lambda text: pattern.sub(replace, text)


@functools.cache
def rules() -> tuple[_Rule, ...]:
    """Classes 1–14 in order, compiled once (on the first text to redact)."""
    return (
        *(_Rule(key.sub, key.literals, False) for key in KEY_FORMATS),
        *(
            _Rule(_context_rule(source, replace), literals, folded)
            for source, replace, literals, folded in _CONTEXT_PATTERNS
        ),
    )


def _scannable(text: str) -> str:
    """``text`` as valid UTF-8 for RE2: a lone surrogate becomes ``?``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _capped(text: str, values: list[str]) -> str:
    """At most ``MAX_REDACTED_CHARS``: the rest is dropped with a marker. The cut never leaves
    the start of a secret behind: a trailing run of token characters goes, and so does a tail
    that begins one of the exact ``values``."""
    if len(text) <= MAX_REDACTED_CHARS:
        return text
    head = text[:MAX_REDACTED_CHARS]
    while True:
        shorter = head.rstrip(_TOKEN_CHARS)
        for value in values:
            for size in range(min(len(value), len(shorter)) - 1, 0, -1):
                if shorter.endswith(value[:size]):
                    shorter = shorter[:-size]
                    break
        if shorter == head:
            break
        head = shorter
    return f"{head}\n[{len(text) - len(head)} characters cut before redaction]"


def redact(text: str, secret_values: Iterable[str] = (), *, deadline: float | None = None) -> str:
    """``text`` with exact secret values and known credential formats replaced.

    Linear in ``len(text)``. ``deadline`` (``time.monotonic()``): when it passes before every
    pattern has run, the result is ``NOT_SCANNED``, never the partly redacted text.
    """
    if not text:
        return text
    values = exact_forms(secret_values)
    text = _capped(_scannable(text), values)
    for value in values:  # longest first, each literally (str.replace is linear)
        text = text.replace(value, REDACTED)
    # Replacements never create a literal, so what the text lacks now it lacks after each rule.
    original, folded = text, text.casefold()
    for rule in rules():
        if deadline is not None and time.monotonic() > deadline:
            return NOT_SCANNED
        if rule.needed(original, folded):
            text = rule.apply(text)
    return text


def exact_forms(secret_values: Iterable[str]) -> list[str]:
    """Every form (``secret_forms``) of the values long enough to redact (at least
    ``MIN_SECRET_VALUE_LENGTH`` characters: a shorter value would replace ordinary letters
    everywhere), longest first, so a form is replaced before a shorter one inside it."""
    forms = {
        form
        for v in secret_values
        if isinstance(v, str) and len(v) >= MIN_SECRET_VALUE_LENGTH
        for form in secret_forms(_scannable(v))
    }
    return sorted(forms, key=len, reverse=True)


def scrub_json(value: Any, forms: Sequence[str]) -> Any:
    """A JSON value with each of ``forms`` (``exact_forms``) replaced in every string, object
    keys included. Only exact values go: data keeps text that merely looks like a token, which
    the pattern rules of ``redact`` would rewrite (a provider's result is data, not a log).

    One pass over the JSON text first: a result without any form (nearly all) is returned as
    it is, not walked string by string. A string holding a form holds it, JSON-escaped, in that
    text, and the JSON-escaped form is one of ``forms`` (``secret_forms``)."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    if not any(form in text for form in forms):
        return value
    return _scrub_strings(value, forms)


def _scrub_strings(value: Any, forms: Sequence[str]) -> Any:
    if isinstance(value, str):
        for form in forms:
            value = value.replace(form, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {
            _scrub_strings(key, forms): _scrub_strings(item, forms) for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_scrub_strings(item, forms) for item in value]
    return value


# Characters percent-encoding leaves as they are: Python's ``quote`` (``safe=""`` and its
# default ``"/"``), JavaScript's ``encodeURIComponent`` and ``encodeURI`` (unreserved
# characters are always kept).
_URL_SAFE_SETS = ("", "/", "!*'()", ";,/?:@&=+$#!*'()")


def secret_forms(value: str) -> set[str]:
    """``value`` as code around a secret writes it into a message: as is, percent-encoded
    (in a URL a tool built), inside a JSON string (a logged config) and in base64 (standard
    and URL-safe, with and without its padding, and inside longer encoded data: ``_base64_cores``)."""
    forms = {value, quote_plus(value, safe="")}
    forms |= {quote(value, safe=safe) for safe in _URL_SAFE_SETS}
    forms |= {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    raw = value.encode("utf-8")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        padded = encode(raw).decode("ascii")
        forms |= {padded, padded.rstrip("=")}
        forms |= _base64_cores(raw, encode)
    return {form for form in forms if len(form) >= MIN_SECRET_VALUE_LENGTH}


def _base64_cores(raw: bytes, encode: Callable[[bytes], bytes]) -> set[str]:
    """The base64 characters that ``raw`` alone decides, at each of the three byte offsets
    it can have inside longer encoded data (``user:<key>``, a JSON config): elsewhere the
    secret's own encoding is not a substring of the message's."""
    cores = set()
    for offset in range(3):
        text = encode(bytes(offset) + raw).decode("ascii")
        start = -(-8 * offset // 6)  # the first character made of the secret's bits only
        end = 8 * (offset + len(raw)) // 6  # past the last such character
        cores.add(text[start:end])
    return cores


def _path_forms(path: str) -> set[str]:
    """A path as it can appear in messages: plain, forward-slash, file:// URL, URL-encoded."""
    forward = path.replace("\\", "/")
    url_path = forward if forward.startswith("/") else "/" + forward
    forms = {path, forward, "file://" + url_path}
    # Encoders differ on which characters stay literal (Node keeps "@", Python quotes it).
    for safe in ("/:", "/:@"):
        forms |= {quote(forward, safe=safe), "file://" + quote(url_path, safe=safe)}
    return {f for f in forms if len(f) > 1}


@dataclass(frozen=True)
class PathSanitizer:
    """Replaces absolute paths by placeholders; built once per package/project pair."""

    pattern: re.Pattern[str] | None
    placeholders: Mapping[str, str]

    @classmethod
    def for_paths(cls, paths: Mapping[Path | str, str]) -> PathSanitizer:
        """``paths`` maps an absolute path to its placeholder (e.g. ``<package>``)."""
        table: dict[str, str] = {}
        # Insert shorter roots first so a longer (nested) path's forms win on equal strings.
        for root, placeholder in sorted(paths.items(), key=lambda kv: len(str(kv[0]))):
            for form in _path_forms(str(root)):
                table[form] = placeholder
        if not table:
            return cls(None, {})
        forms = sorted(table, key=len, reverse=True)
        # A root matches only as a whole path component (not /proj inside /project).
        pattern = re.compile(
            "(?:" + "|".join(re.escape(f) for f in forms) + r")(?![A-Za-z0-9_.~-])"
        )
        return cls(pattern, table)

    def __call__(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.pattern.sub(lambda m: self.placeholders[m.group(0)], text)
