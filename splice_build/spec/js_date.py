"""JavaScript's ``Date.prototype.toISOString()``: the time stamps the TypeScript Splice writes
(capability envelopes, the registry's records and tokens, saved credentials), which this
implementation writes alike."""

from __future__ import annotations


def iso_string(timestamp: float) -> str:
    """``new Date(timestamp * 1000).toISOString()``: UTC, milliseconds (truncated, as a
    ``Date`` holds whole milliseconds), ``Z``."""
    from datetime import UTC, datetime  # lazy: a cold `splice run` stamps nothing

    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
