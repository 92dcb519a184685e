"""Reader for the legacy JSON bundle artifact (docs/compatibility.md#archive-format, Phase 1/2 artifacts).

A bundle is UTF-8 JSON ``{"format": "splice-bundle", "formatVersion": 1, "files": [{"path",
"content": <base64>}]}``. It is still readable so old registry artifacts install; nothing
writes it any more. The JSON is hostile input (it arrives as a registry publish body and as a
download): a leading BOM is dropped, then ``spec.untrusted_json`` decodes it (strict UTF-8,
bounded depth, no lone surrogates or huge numbers, no ``NaN``/``Infinity``); base64 as ``atob`` would
(ASCII whitespace ignored, padding optional, anything else invalid). The package rules (paths,
limits, duplicates) are applied by the caller through ``entry_rules.PackageFiles``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.entry_rules import quote_path
from splice_build.spec.limits import MAX_FILES
from splice_build.spec.untrusted_json import UntrustedJsonError, decode

BUNDLE_FORMAT = "splice-bundle"
BUNDLE_FORMAT_VERSION = 1
_BASE64 = re.compile(r"[A-Za-z0-9+/]*")
_BASE64_WHITESPACE = re.compile(r"[\t\n\f\r ]")


def _invalid(message: str, detail: str) -> SpecError:
    return SpecError(ErrorCode.INVALID_PACKAGE, message, details=[detail])


def _parse(data: bytes) -> object:
    # The caller has bounded the artifact's size; the decoder bounds everything else.
    try:
        return decode(data.removeprefix(b"\xef\xbb\xbf"), max_bytes=len(data))
    except UntrustedJsonError as exc:
        raise _invalid("Bundle is not valid UTF-8 JSON", f"bundle: {exc}") from exc


def _decode_base64(text: str) -> bytes:
    """Decode like ``atob`` (WHATWG forgiving-base64); raises ValueError when it would throw."""
    text = _BASE64_WHITESPACE.sub("", text)
    if len(text) % 4 == 0 and text.endswith("="):
        text = text[:-2] if text.endswith("==") else text[:-1]
    if len(text) % 4 == 1 or not _BASE64.fullmatch(text):
        raise ValueError("invalid base64")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as exc:
        raise ValueError("invalid base64") from exc


def _is_version_one(value: object) -> bool:
    # JSON.parse gives 1 for both 1 and 1.0; a JSON true is not a number.
    return type(value) in (int, float) and value == BUNDLE_FORMAT_VERSION


def iter_bundle_files(data: bytes) -> Iterator[tuple[str, bytes]]:
    """Yield ``(path, content)`` for each file of a legacy bundle.

    Raises SpecError(INVALID_PACKAGE) for malformed JSON, a wrong format or version, more than
    500 files, a malformed file entry or invalid base64 (the detail names the entry).
    """
    parsed = _parse(data)
    if not isinstance(parsed, dict):
        raise _invalid("Bundle must be an object", "bundle: top-level value is not an object")
    if parsed.get("format") != BUNDLE_FORMAT:
        raise _invalid("Not a Splice bundle", f'bundle: "format" is not "{BUNDLE_FORMAT}"')
    if not _is_version_one(parsed.get("formatVersion")):
        raise _invalid(
            "Unsupported bundle formatVersion",
            f"bundle: formatVersion {json.dumps(parsed.get('formatVersion'))}",
        )
    files = parsed.get("files")
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise _invalid(
            f"Bundle files must be an array of at most {MAX_FILES}",
            "bundle: " + (f"{len(files)} files" if isinstance(files, list) else "no files array"),
        )
    for index, entry in enumerate(files):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("path"), str)
            and isinstance(entry.get("content"), str)
        ):
            raise _invalid(
                "Bundle file is malformed", f"entry #{index}: needs string path and content"
            )
        path: str = entry["path"]
        try:
            content = _decode_base64(entry["content"])
        except ValueError as exc:
            raise _invalid(
                "Bundle file has invalid base64 content", f"entry {quote_path(path)}: {exc}"
            ) from exc
        yield path, content
