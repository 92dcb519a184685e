"""Secret redaction and path placeholders for everything Splice shows or returns.

``redact(text, secret_values)`` replaces the exact secret values first (≥ 6 characters,
longest first), then every pattern class of docs/compatibility.md#redaction, in that order.
``PathSanitizer`` replaces absolute package/project paths (plain, ``file://`` URL and
URL-encoded forms, longest first) with ``<package>`` / ``<project>`` (docs/compatibility.md#runtime).
Both are pattern-based: they cannot recognise arbitrary secrets (docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

REDACTED = "[REDACTED]"
MIN_SECRET_VALUE_LENGTH = 6

_SECRET_QUERY_NAMES = (
    "access_token|refresh_token|id_token|token|api_key|api-key|apikey|key|secret|"
    "client_secret|password|passwd|pwd|sig|signature|auth"
)
_SECRET_NAME_WORDS = (
    "SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|APIKEY|PRIVATE_KEY|ACCESS_KEY|CREDENTIALS?"
)


@dataclass(frozen=True)
class KeyFormat:
    """A credential format: what it is called, how it looks, what replaces it."""

    kind: str
    pattern: re.Pattern[str]
    replacement: str = REDACTED


# Classes 1–8 of docs/compatibility.md#redaction: the credential formats (also what `splice
# secret-scan` looks for, reporting ``kind``).
KEY_FORMATS: tuple[KeyFormat, ...] = (
    KeyFormat(
        "PEM private key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        "[REDACTED PRIVATE KEY]",
    ),
    # exactly 43 base64url characters after the prefix, so MCP tool names stay untouched
    KeyFormat(
        "Splice registry token",
        re.compile(r"(?<![A-Za-z0-9_-])splice_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
        "splice_[REDACTED]",
    ),
    KeyFormat(
        "GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})"),
    ),
    KeyFormat("OpenAI/Anthropic-style key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}")),
    KeyFormat("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    KeyFormat("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    KeyFormat("Google API key", re.compile(r"\bAIza[A-Za-z0-9_-]{35}")),
    KeyFormat(
        "JSON Web Token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    ),
)

# (pattern, replacement) in the order of docs/compatibility.md#redaction.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    *((key.pattern, key.replacement) for key in KEY_FORMATS),
    # 9. Authorization / Proxy-Authorization header values (any scheme)
    (
        re.compile(r"(?im)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)[^\r\n\"',}]+"),
        r"\1" + REDACTED,
    ),
    # 10. bare Bearer / Basic credentials
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}"), r"\1 " + REDACTED),
    # 11. Cookie / Set-Cookie header values
    (re.compile(r"(?im)\b((?:set-)?cookie[\"']?\s*[:=]\s*[\"']?)[^\r\n\"'}]+"), r"\1" + REDACTED),
    # 12. credentials in URLs
    (re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"), r"\1" + REDACTED + "@"),
    # 13. secret-looking query parameters
    (
        re.compile(rf"(?i)([?&](?:{_SECRET_QUERY_NAMES})=)[^&#\s\"']+"),
        r"\1" + REDACTED,
    ),
    # 14. NAME=value assignments with a secret-looking UPPERCASE name
    (
        re.compile(rf"\b([A-Z0-9_]*(?:{_SECRET_NAME_WORDS})[A-Z0-9_]*\s*=\s*)[^\s\"'&]+"),
        r"\1" + REDACTED,
    ),
)


def redact(text: str, secret_values: Iterable[str] = ()) -> str:
    """``text`` with exact secret values and known credential formats replaced."""
    values = sorted(
        {v for v in secret_values if isinstance(v, str) and len(v) >= MIN_SECRET_VALUE_LENGTH},
        key=len,
        reverse=True,
    )
    if values:
        text = re.sub("|".join(re.escape(v) for v in values), REDACTED, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


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
