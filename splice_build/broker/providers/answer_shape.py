"""A vendor's JSON answer of another shape than its provider reads is the vendor's failure.

Providers read their vendor's answer with ``.get``, indexing and iteration; an answer of an
unexpected shape (``{"results": 5}`` where a list of objects was expected) then raises
``TypeError``, ``KeyError``, ``AttributeError`` and the like inside the provider. That is a
``ProviderFailure`` (the broker records it and tries the next provider), never a crash of
ours: the broker's last resort logs a crash at ERROR as a bug to fix.

Only what is raised after one of the call's clients handed the provider a decoded JSON
answer (``ProviderClient.request_json``) is taken as reading it; before that (building the
request) a provider's exception stays the crash it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.interface import (
    Provider,
    ProviderContext,
    ProviderData,
    ProviderFailure,
)

# What reading a value of another type or shape raises (``int("x")``, ``float(10**400)``,
# ``answer["missing"]``, ``[][0]``, ``5.get``, iterating ``5``).
_SHAPE_ERRORS = (TypeError, KeyError, IndexError, AttributeError, ValueError, OverflowError)


def call_provider(
    provider: Provider, capability: str, args: Mapping[str, Any], ctx: ProviderContext
) -> ProviderData:
    """``provider.call``, with a shape error raised while it read an answer as a failure."""
    try:
        return provider.call(capability, args, ctx)
    except _SHAPE_ERRORS as exc:
        read = [c.last_answer for c in ctx.clients.values() if c.last_answer is not None]
        if not read:
            raise
        endpoint = max(read)[1]
        raise ProviderFailure(
            f"{provider.name} {endpoint}: the answer had an unexpected shape ({type(exc).__name__})"
        ) from exc
