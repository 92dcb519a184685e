"""Tavily (api.tavily.com): web.search, web.extract, web.answer; ``TAVILY_API_KEY`` as a bearer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.interface import ProviderContext, ProviderData
from splice_build.broker.providers.web_results import (
    DEFAULT_LIMIT,
    UNTRUSTED_NOTE,
    clip,
    page,
)

HOST = "api.tavily.com"


class Tavily:
    name = "tavily"
    title = "Tavily"
    hosts = (HOST,)
    key_variable = "TAVILY_API_KEY"
    key_required = True
    key_is_endpoint = False
    key_hosts = (HOST,)
    capabilities = frozenset({"web.search", "web.extract", "web.answer"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        http = ctx.client(HOST)
        auth = {"authorization": f"Bearer {http.key}"}
        most = args.get("maxCharacters")
        if capability == "web.extract":
            payload, _ = http.request_json(
                "POST", "/extract", body={"urls": list(args["urls"])}, headers=auth
            )
            payload = payload.as_object()
            pages = [
                page(item.field("url").text(), content=clip(item.field("raw_content").text(), most))
                for item in payload.field("results").objects()
            ]
            failed = [
                item.field("url").text() or "" for item in payload.field("failed_results").objects()
            ]
            return ProviderData(
                {"pages": pages, "failed": failed}, "POST /extract", notes=(UNTRUSTED_NOTE,)
            )
        body: dict[str, Any] = {"query": args["query"]}
        if capability == "web.answer":
            body |= {"include_answer": True, "max_results": DEFAULT_LIMIT}
        else:
            body |= {
                "max_results": args.get("limit", DEFAULT_LIMIT),
                "include_raw_content": bool(args.get("content", False)),
                "include_domains": list(args.get("includeDomains", [])),
                "exclude_domains": list(args.get("excludeDomains", [])),
            }
        payload, _ = http.request_json("POST", "/search", body=body, headers=auth)
        payload = payload.as_object()
        results = [
            page(
                item.field("url").text(),
                item.field("title").text(),
                clip(item.field("content").text(), most),
                clip(item.field("raw_content").text(), most) if args.get("content") else None,
            )
            for item in payload.field("results").objects()
        ]
        if capability == "web.answer":
            data: dict[str, Any] = {
                "answer": payload.field("answer").text() or "",
                "sources": [{"url": r["url"], "title": r["title"]} for r in results],
            }
        else:
            data = {"query": args["query"], "results": results}
        return ProviderData(data, "POST /search", notes=(UNTRUSTED_NOTE,))


PROVIDER = Tavily()
