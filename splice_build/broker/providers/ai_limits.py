"""Checks every AI request passes before it is sent (docs/capabilities.md: message, size, token, image limits).

The argument schema already bounds the prompt (100,000 characters), the system text
(20,000) and ``maxTokens`` (1..2048); these limits add the total request size and refuse
content the broker does not forward (images, tool definitions), whichever provider serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.interface import ProviderFailure
from splice_build.errors import ErrorCode

DEFAULT_MAX_TOKENS = 512  # docs/compatibility.md#capabilities
MAX_TOKENS = 2048
MAX_MESSAGES = 2  # one optional system message and one user message
MAX_REQUEST_CHARACTERS = 120_000


def check_request(args: Mapping[str, Any]) -> None:
    """Raise INVALID_INPUT when a request exceeds the limits above."""
    size = len(str(args.get("prompt", ""))) + len(str(args.get("system", "")))
    if size > MAX_REQUEST_CHARACTERS:
        raise ProviderFailure(
            f"AI request is {size} characters (max {MAX_REQUEST_CHARACTERS})",
            code=ErrorCode.INVALID_INPUT,
        )
    if int(args.get("maxTokens", DEFAULT_MAX_TOKENS)) > MAX_TOKENS:
        raise ProviderFailure(f"maxTokens is limited to {MAX_TOKENS}", code=ErrorCode.INVALID_INPUT)


def messages(args: Mapping[str, Any]) -> list[dict[str, str]]:
    out = [{"role": "system", "content": str(args["system"])}] if args.get("system") else []
    out.append({"role": "user", "content": str(args["prompt"])})
    assert len(out) <= MAX_MESSAGES, "BUG: more AI messages than the limit"
    return out


def requested_json(provider: str, text: str) -> Any:
    """The model's answer read as the JSON ``responseSchema`` asked for, by the network-JSON
    decoder: a model (steered by the prompt or by web text in it) may answer ``NaN`` or a
    thousand-deep ``[[[…``, which has no JSON form to send back."""
    from splice_build.broker.providers.http import MAX_RESPONSE_VALUES
    from splice_build.spec.untrusted_json import UntrustedJsonError, decode

    raw = text.encode("utf-8", "surrogatepass")
    try:
        return decode(raw, max_bytes=len(raw), max_values=MAX_RESPONSE_VALUES)
    except UntrustedJsonError as exc:
        raise ProviderFailure(f"{provider}: the answer is not the requested JSON ({exc})") from exc
