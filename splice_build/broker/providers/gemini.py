"""Gemini (generativelanguage.googleapis.com): ai.generate, ai.models.

The key travels in the ``x-goog-api-key`` header, never in the URL's query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.ai_limits import (
    DEFAULT_MAX_TOKENS,
    check_request,
    requested_json,
)
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure

HOST = "generativelanguage.googleapis.com"
DEFAULT_MODEL = "gemini-2.5-flash"


class Gemini:
    name = "gemini"
    title = "Google Gemini"
    hosts = (HOST,)
    key_variable = "GEMINI_API_KEY"
    key_required = True
    key_is_endpoint = False
    key_hosts = (HOST,)
    capabilities = frozenset({"ai.generate", "ai.models"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        http = ctx.client(HOST)
        auth = {"x-goog-api-key": str(http.key)}
        if capability == "ai.models":
            payload, _ = http.request_json("GET", "/v1beta/models", headers=auth)
            found = payload.get("models") if isinstance(payload, Mapping) else None
            search = str(args.get("search", "")).lower()
            models = [
                {"id": str(m.get("name", "")).removeprefix("models/"), "name": m.get("displayName")}
                for m in found or []
                if isinstance(m, Mapping)
                and search in f"{m.get('name')} {m.get('displayName')}".lower()
            ]
            return ProviderData({"provider": self.name, "models": models}, "GET /v1beta/models")
        check_request(args)
        model = str(args.get("model", DEFAULT_MODEL)).removeprefix("models/")
        config: dict[str, Any] = {"maxOutputTokens": args.get("maxTokens", DEFAULT_MAX_TOKENS)}
        if "temperature" in args:
            config["temperature"] = args["temperature"]
        if "responseSchema" in args:
            config |= {
                "responseMimeType": "application/json",
                "responseSchema": args["responseSchema"],
            }
        body: dict[str, Any] = {
            "contents": [{"role": "user", "parts": [{"text": args["prompt"]}]}],
            "generationConfig": config,
        }
        if args.get("system"):
            body["systemInstruction"] = {"parts": [{"text": args["system"]}]}
        template = "/v1beta/models/{model}:generateContent"
        payload, _ = http.request_json(
            "POST", template, path_params={"model": model}, body=body, headers=auth
        )
        payload = payload if isinstance(payload, Mapping) else {}
        candidates = payload.get("candidates") or [{}]
        content = candidates[0].get("content", {}) if isinstance(candidates[0], Mapping) else {}
        parts = content.get("parts", []) if isinstance(content, Mapping) else []
        texts = [
            p.get("text")
            for p in parts
            if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
        if not texts:
            raise ProviderFailure(f"gemini POST {template} returned no text")
        usage = (
            payload.get("usageMetadata")
            if isinstance(payload.get("usageMetadata"), Mapping)
            else {}
        )
        data: dict[str, Any] = {
            "provider": self.name,
            "model": model,
            "text": "".join(texts),
            "usage": {
                "inputTokens": usage.get("promptTokenCount"),
                "outputTokens": usage.get("candidatesTokenCount"),
            },
        }
        if "responseSchema" in args:
            data["json"] = requested_json(self.name, data["text"])
        return ProviderData(data, f"POST {template}")


PROVIDER = Gemini()
