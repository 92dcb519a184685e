"""The data providers, by name (an explicit table, like pre-commit's ``all_languages``).

For each capability the broker tries the providers that serve it in this table's order
(first configured one first, the others as fallbacks). Adding a provider is adding its
module here, its key variable to ``broker/keys.py`` and a section to docs/data-providers.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from splice_build.broker.providers import (
    dexscreener,
    exa,
    firecrawl,
    geckoterminal,
    gemini,
    github,
    jsonrpc,
    openrouter,
    tavily,
)
from splice_build.broker.providers.interface import Provider

PROVIDERS: Mapping[str, Provider] = {
    "tavily": tavily.PROVIDER,
    "exa": exa.PROVIDER,
    "firecrawl": firecrawl.PROVIDER,
    "dexscreener": dexscreener.PROVIDER,
    "geckoterminal": geckoterminal.PROVIDER,
    "jsonrpc": jsonrpc.PROVIDER,
    "github": github.PROVIDER,
    "openrouter": openrouter.PROVIDER,
    "gemini": gemini.PROVIDER,
}
