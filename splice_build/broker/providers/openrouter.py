"""OpenRouter (openrouter.ai): ai.generate, ai.models; ``OPENROUTER_API_KEY`` as a bearer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.ai_limits import (
    DEFAULT_MAX_TOKENS,
    check_request,
    messages,
    requested_json,
)
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure

HOST = "openrouter.ai"
DEFAULT_MODEL = "openrouter/auto"


class OpenRouter:
    name = "openrouter"
    title = "OpenRouter"
    hosts = (HOST,)
    key_variable = "OPENROUTER_API_KEY"
    key_required = True
    key_is_endpoint = False
    key_hosts = (HOST,)
    capabilities = frozenset({"ai.generate", "ai.models"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        http = ctx.client(HOST)
        auth = {"authorization": f"Bearer {http.key}"}
        if capability == "ai.models":
            payload, _ = http.request_json("GET", "/api/v1/models", headers=auth)
            search = str(args.get("search", "")).lower()
            found = [
                {
                    "id": m.field("id").text(),
                    "name": m.field("name").text(),
                    "contextLength": m.field("context_length").number(),
                }
                for m in payload.as_object().field("data").objects()
            ]
            models = [m for m in found if search in f"{m['id'] or ''} {m['name'] or ''}".lower()]
            return ProviderData({"provider": self.name, "models": models}, "GET /api/v1/models")
        check_request(args)
        body: dict[str, Any] = {
            "model": args.get("model", DEFAULT_MODEL),
            "messages": messages(args),
            "max_tokens": args.get("maxTokens", DEFAULT_MAX_TOKENS),
        }
        if "temperature" in args:
            body["temperature"] = args["temperature"]
        if "responseSchema" in args:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "result", "strict": True, "schema": args["responseSchema"]},
            }
        payload, _ = http.request_json("POST", "/api/v1/chat/completions", body=body, headers=auth)
        payload = payload.as_object()
        choices = payload.field("choices").objects()
        text = choices[0].field("message").field("content").text() if choices else None
        if text is None:
            raise ProviderFailure("openrouter POST /api/v1/chat/completions returned no text")
        usage = payload.field("usage")
        data: dict[str, Any] = {
            "provider": self.name,
            "model": payload.field("model").text() or body["model"],
            "text": text,
            "usage": {
                "inputTokens": usage.field("prompt_tokens").number(),
                "outputTokens": usage.field("completion_tokens").number(),
            },
        }
        if "responseSchema" in args:
            data["json"] = requested_json(self.name, text)
        return ProviderData(
            data, "POST /api/v1/chat/completions", request_id=payload.field("id").text()
        )


PROVIDER = OpenRouter()
