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
            search = str(args.get("search", "")).lower()
            found = [
                (m.field("name").text() or "", m.field("displayName").text())
                for m in payload.as_object().field("models").objects()
            ]
            models = [
                {"id": name.removeprefix("models/"), "name": title}
                for name, title in found
                if search in f"{name} {title or ''}".lower()
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
        payload = payload.as_object()
        candidates = payload.field("candidates").objects()
        parts = candidates[0].field("content").field("parts").objects() if candidates else []
        texts = [text for text in (part.field("text").text() for part in parts) if text is not None]
        if not texts:
            raise ProviderFailure(f"gemini POST {template} returned no text")
        usage = payload.field("usageMetadata")
        data: dict[str, Any] = {
            "provider": self.name,
            "model": model,
            "text": "".join(texts),
            "usage": {
                "inputTokens": usage.field("promptTokenCount").number(),
                "outputTokens": usage.field("candidatesTokenCount").number(),
            },
        }
        if "responseSchema" in args:
            data["json"] = requested_json(self.name, data["text"])
        return ProviderData(data, f"POST {template}")


PROVIDER = Gemini()
