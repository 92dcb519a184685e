"""Anonymous read routes of the registry: index, health, search, packages, versions, downloads,
namespaces and their keys (CORS on every answer, errors too)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from splice_build.registry.api import IMMUTABLE_CACHE, INTEGRITY_HEADER
from splice_build.registry.http.answer_cache import AnswerCache, names_etag
from splice_build.registry.http.download import ArtifactResponse
from splice_build.registry.http.routing import (
    CORS_HEADERS,
    JSON_TYPE,
    caller_of,
    json_response,
    path_param,
    public_read,
    threaded_json,
)
from splice_build.registry.service.read import Keyed
from splice_build.registry.service.registry_service import RegistryService


def first(request: Request, name: str) -> str | None:
    """URLSearchParams.get: the first of repeated parameters (Starlette's get: the last)."""
    values = request.query_params.getlist(name)
    return values[0] if values else None


def routes(service: RegistryService) -> list[Route]:
    """The routes of this group, handlers bound to ``service``."""
    answers = AnswerCache()

    async def kept(request: Request, document: Callable[..., Keyed], *args: str) -> Response:
        """The document's kept answer (http/answer_cache.py), or 304 when the client holds it."""

        client = caller_of(request).client

        def charge(document: Keyed) -> Callable[[float], None]:
            return service.charge_costly_read(client, document.cost)

        def answer() -> Response:
            made = answers.get(document(*args), charge)
            headers = {"cache-control": "no-store", **CORS_HEADERS, "etag": made.etag}
            if names_etag(request.headers.get("if-none-match"), made.etag):
                return Response(status_code=304, headers=headers)
            return Response(made.body, media_type=JSON_TYPE, headers=headers)

        return await run_in_threadpool(answer)

    async def index(request: Request) -> Response:
        return json_response(service.index(), public=True)

    async def health(request: Request) -> Response:
        return json_response(service.health(), public=True)

    async def search(request: Request) -> Response:
        return await threaded_json(
            service.search,
            first(request, "q") or "",
            limit=first(request, "limit"),
            kind=first(request, "kind"),
            public=True,
        )

    async def package(request: Request) -> Response:
        return await kept(
            request,
            service.package_document,
            path_param(request, "ns"),
            path_param(request, "name"),
        )

    async def versions(request: Request) -> Response:
        return await threaded_json(
            service.versions,
            path_param(request, "ns"),
            path_param(request, "name"),
            cursor=first(request, "cursor"),
            limit=first(request, "limit"),
            public=True,
        )

    async def version(request: Request) -> Response:
        return await kept(
            request,
            service.version_document,
            path_param(request, "ns"),
            path_param(request, "name"),
            path_param(request, "version"),
        )

    async def provenance(request: Request) -> Response:
        args = (
            path_param(request, "ns"),
            path_param(request, "name"),
            path_param(request, "version"),
        )
        return await threaded_json(service.provenance, *args, public=True)

    async def download(request: Request) -> Response:
        args = (
            path_param(request, "ns"),
            path_param(request, "name"),
            path_param(request, "version"),
        )
        artifact = await run_in_threadpool(service.open_download, *args)
        headers = {
            **CORS_HEADERS,
            "content-disposition": f'attachment; filename="{artifact.filename}"',
            INTEGRITY_HEADER: artifact.integrity,
            "cache-control": IMMUTABLE_CACHE,
        }
        return ArtifactResponse(artifact.blob, headers, artifact.content_type)

    async def namespace(request: Request) -> Response:
        return await threaded_json(service.namespace, path_param(request, "ns"), public=True)

    async def keys(request: Request) -> Response:
        return await threaded_json(service.keys, path_param(request, "ns"), public=True)

    read = ["GET", "OPTIONS"]
    pkg = "/packages/{ns}/{name}"
    return [
        Route("/", public_read(index), methods=read),
        Route("/health", public_read(health), methods=read),
        Route("/packages/search", public_read(search), methods=read),
        Route(pkg, public_read(package), methods=read),
        Route(pkg + "/versions", public_read(versions), methods=read),
        Route(pkg + "/{version}", public_read(version), methods=read),
        Route(pkg + "/{version}/download", public_read(download), methods=read),
        Route(pkg + "/{version}/provenance", public_read(provenance), methods=read),
        Route("/namespaces/{ns}", public_read(namespace), methods=read),
        Route("/namespaces/{ns}/keys", public_read(keys), methods=read),
    ]
