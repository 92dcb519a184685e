"""Firecrawl (api.firecrawl.dev): web.search, web.extract, web.map; ``FIRECRAWL_API_KEY`` bearer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.interface import (
    ProviderContext,
    ProviderData,
    ProviderFailure,
)
from splice_build.broker.providers.web_results import (
    DEFAULT_LIMIT,
    UNTRUSTED_NOTE,
    clip,
    page,
)
from splice_build.runtime.limits import MAX_CAPABILITY_RESULT_BYTES

HOST = "api.firecrawl.dev"
DEFAULT_MAP_LIMIT = 100
PAGES_OVER_BUDGET = (
    f"Pages past {MAX_CAPABILITY_RESULT_BYTES} bytes together are listed in failed, not fetched;"
    " set maxCharacters to get more of them."
)
PAGES_OVER_TIME = (
    "Pages not scraped within the call's time are listed in failed; ask for fewer at once."
)


class Firecrawl:
    name = "firecrawl"
    title = "Firecrawl"
    hosts = (HOST,)
    key_variable = "FIRECRAWL_API_KEY"
    key_required = True
    key_is_endpoint = False
    key_hosts = (HOST,)
    capabilities = frozenset({"web.search", "web.extract", "web.map"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        http = ctx.client(HOST)
        auth = {"authorization": f"Bearer {http.key}"}
        most = args.get("maxCharacters")
        if capability == "web.extract":
            return self._extract(args, http, auth)
        if capability == "web.map":
            body = {"url": args["url"], "limit": args.get("limit", DEFAULT_MAP_LIMIT)}
            payload, _ = http.request_json("POST", "/v1/map", body=body, headers=auth)
            links = [link.text() for link in payload.as_object().field("links").items()]
            data = {"url": args["url"], "links": [link for link in links if link is not None]}
            return ProviderData(data, "POST /v1/map", notes=(UNTRUSTED_NOTE,))
        body = {"query": args["query"], "limit": args.get("limit", DEFAULT_LIMIT)}
        payload, _ = http.request_json("POST", "/v1/search", body=body, headers=auth)
        results = [
            page(
                item.field("url").text(),
                item.field("title").text(),
                clip(item.field("description").text(), most),
            )
            for item in payload.as_object().field("data").objects()
        ]
        return ProviderData(
            {"query": args["query"], "results": results}, "POST /v1/search", notes=(UNTRUSTED_NOTE,)
        )

    @staticmethod
    def _extract(args: Mapping[str, Any], http: Any, auth: Mapping[str, str]) -> ProviderData:
        """One scrape per URL (at most 10, by the argument schema), kept while the pages
        together fit in what a tool may receive: each answer may be 5 MiB, and ten of them
        held at once by each call in flight were the parent's memory, for a result the
        runtime then refuses. And while the call has time (``ProviderClient``): the scrapes
        share it, and once a page has been scraped, a scrape cut short by the call's end
        lists it and the rest in ``failed`` instead of failing the call."""
        most = args.get("maxCharacters")
        pages: list[dict[str, Any]] = []
        failed: list[str] = []
        notes = (UNTRUSTED_NOTE,)
        kept = 0
        urls = list(args["urls"])
        for n, url in enumerate(urls):
            if kept >= MAX_CAPABILITY_RESULT_BYTES:
                failed.append(url)
                continue
            try:
                title, content = _scrape(http, auth, url, most)
            except ProviderFailure:
                if not pages or http.time_left() > 0:
                    raise
                failed.extend(urls[n:])
                notes += (PAGES_OVER_TIME,)
                break
            kept += len(content.encode("utf-8", "surrogatepass")) if content else 0
            # Of the answer (up to 5 MiB), only the page's text is held now: ten answers
            # held to the call's end took 50 MiB of the process's answer budget
            # (docs/capabilities.md), a tool's maxCharacters: 100 keeping ten pages.
            http.release(keep=kept)
            if kept > MAX_CAPABILITY_RESULT_BYTES:
                failed.append(url)
                continue
            pages.append(page(url, title, None, content))
        if kept >= MAX_CAPABILITY_RESULT_BYTES and failed:
            notes += (PAGES_OVER_BUDGET,)
        return ProviderData({"pages": pages, "failed": failed}, "POST /v1/scrape", notes=notes)


def _scrape(
    http: Any, auth: Mapping[str, str], url: str, most: int | None
) -> tuple[str | None, str | None]:
    """The title and text (cut at ``most`` characters) of the page at ``url``; nothing else
    of Firecrawl's answer outlives this call."""
    payload, _ = http.request_json(
        "POST", "/v1/scrape", body={"url": url, "formats": ["markdown"]}, headers=auth
    )
    scraped = payload.as_object().field("data")
    content = clip(scraped.field("markdown").text(), most)
    return scraped.field("metadata").field("title").text(), content


PROVIDER = Firecrawl()
