"""Administrator routes: users, their tokens, revocation, namespace owners, hidden packages,
artifact migration."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from splice_build.registry.http.routing import caller_of, json_body, path_param, threaded_json
from splice_build.registry.service.registry_service import RegistryService


def routes(service: RegistryService) -> list[Route]:
    """The routes of this group, handlers bound to ``service``."""

    async def admin_users(request: Request) -> Response:
        body = await json_body(request)
        return await threaded_json(service.admin_create_user, caller_of(request), body, status=201)

    async def admin_user_tokens(request: Request) -> Response:
        body = await json_body(request)
        return await threaded_json(
            service.admin_create_token,
            caller_of(request),
            path_param(request, "name"),
            body,
            status=201,
        )

    async def admin_revoke(request: Request) -> Response:
        await json_body(request)
        return await threaded_json(
            service.admin_revoke_token, caller_of(request), path_param(request, "id")
        )

    async def admin_namespace(request: Request) -> Response:
        body = await json_body(request)
        return await threaded_json(
            service.admin_set_owner, caller_of(request), path_param(request, "ns"), body
        )

    async def admin_hidden(request: Request) -> Response:
        body = await json_body(request)
        return await threaded_json(
            service.admin_set_hidden,
            caller_of(request),
            path_param(request, "ns"),
            path_param(request, "name"),
            body,
        )

    async def admin_migrate(request: Request) -> Response:
        await json_body(request)
        return await threaded_json(service.admin_migrate_artifacts, caller_of(request))

    return [
        Route("/admin/users", admin_users, methods=["POST"]),
        Route("/admin/users/{name}/tokens", admin_user_tokens, methods=["POST"]),
        Route("/admin/tokens/{id}/revoke", admin_revoke, methods=["POST"]),
        Route("/admin/namespaces/{ns}", admin_namespace, methods=["PUT"]),
        Route("/admin/packages/{ns}/{name}/hidden", admin_hidden, methods=["PUT"]),
        Route("/admin/artifacts/migrate", admin_migrate, methods=["POST"]),
    ]
