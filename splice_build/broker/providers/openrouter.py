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
            found = payload.get("data") if isinstance(payload, Mapping) else None
            search = str(args.get("search", "")).lower()
            models = [
                {"id": m.get("id"), "name": m.get("name"), "contextLength": m.get("context_length")}
                for m in found or []
                if isinstance(m, Mapping) and search in f"{m.get('id')} {m.get('name')}".lower()
            ]
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
        payload = payload if isinstance(payload, Mapping) else {}
        choices = payload.get("choices") or [{}]
        message = choices[0].get("message", {}) if isinstance(choices[0], Mapping) else {}
        text = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(text, str):
            raise ProviderFailure("openrouter POST /api/v1/chat/completions returned no text")
        usage = payload.get("usage") if isinstance(payload.get("usage"), Mapping) else {}
        data: dict[str, Any] = {
            "provider": self.name,
            "model": payload.get("model", body["model"]),
            "text": text,
            "usage": {
                "inputTokens": usage.get("prompt_tokens"),
                "outputTokens": usage.get("completion_tokens"),
            },
        }
        if "responseSchema" in args:
            data["json"] = requested_json(self.name, text)
        request_id = payload.get("id")
        return ProviderData(
            data,
            "POST /api/v1/chat/completions",
            request_id=request_id if isinstance(request_id, str) else None,
        )


PROVIDER = OpenRouter()
