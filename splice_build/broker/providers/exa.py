"""Exa (api.exa.ai): web.search, web.extract, web.similar, web.answer; ``EXA_API_KEY`` header."""

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

HOST = "api.exa.ai"


class Exa:
    name = "exa"
    title = "Exa"
    hosts = (HOST,)
    key_variable = "EXA_API_KEY"
    key_required = True
    key_is_endpoint = False
    key_hosts = (HOST,)
    capabilities = frozenset({"web.search", "web.extract", "web.similar", "web.answer"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        http = ctx.client(HOST)
        auth = {"x-api-key": str(http.key)}
        most = args.get("maxCharacters")
        text: Any = {"maxCharacters": most} if most else True
        if capability == "web.answer":
            payload, _ = http.request_json(
                "POST", "/answer", body={"query": args["query"]}, headers=auth
            )
            payload = payload.as_object()
            sources = [
                {"url": c.field("url").text() or "", "title": c.field("title").text()}
                for c in payload.field("citations").objects()
            ]
            data = {"answer": payload.field("answer").text() or "", "sources": sources}
            return ProviderData(data, "POST /answer", notes=(UNTRUSTED_NOTE,))
        if capability == "web.extract":
            template, body = "/contents", {"urls": list(args["urls"]), "text": text}
        elif capability == "web.similar":
            template = "/findSimilar"
            body = {"url": args["url"], "numResults": args.get("limit", DEFAULT_LIMIT)}
        else:
            template = "/search"
            body = {"query": args["query"], "numResults": args.get("limit", DEFAULT_LIMIT)}
            for ours, theirs in (
                ("includeDomains", "includeDomains"),
                ("excludeDomains", "excludeDomains"),
            ):
                if args.get(ours):
                    body[theirs] = list(args[ours])
            if args.get("content"):
                body["contents"] = {"text": text}
        payload, _ = http.request_json("POST", template, body=body, headers=auth)
        results = [
            page(
                item.field("url").text(),
                item.field("title").text(),
                None,
                clip(item.field("text").text(), most),
            )
            for item in payload.as_object().field("results").objects()
        ]
        if capability == "web.extract":
            data = {"pages": results, "failed": []}
        elif capability == "web.similar":
            data = {"url": args["url"], "results": results}
        else:
            data = {"query": args["query"], "results": results}
        return ProviderData(data, f"POST {template}", notes=(UNTRUSTED_NOTE,))


PROVIDER = Exa()
