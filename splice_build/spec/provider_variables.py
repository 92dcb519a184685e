"""The environment variables the capability broker reads its provider keys from
(broker/keys.py, docs/data-providers.md#keys).

The list lives in ``spec`` because the manifest rules need it too: no package may list one
of these names in ``permissions.env`` (spec/project_state.py), so a key reaches a provider
and never a tool. Adding a provider means adding its variable here and to
docs/data-providers.md.
"""

from __future__ import annotations

PROVIDER_VARIABLES: tuple[str, ...] = (
    "TAVILY_API_KEY",
    "EXA_API_KEY",
    "FIRECRAWL_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GITHUB_TOKEN",
    "ROBINHOOD_RPC_URL",
)
