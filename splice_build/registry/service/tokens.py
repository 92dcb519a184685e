"""Token management: issue, list and revoke (docs/compatibility.md#auth-and-tokens, TokenInfo of 5.3).

The secret exists only in the value returned by :func:`issue_token`; rows keep its hash.
"""

from __future__ import annotations

from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.db.interface import NewToken, Token, User
from splice_build.registry.service import fields
from splice_build.registry.service.auth import (
    Principal,
    new_token,
    new_token_id,
    require_manage,
    token_hash,
)
from splice_build.registry.service.deps import Deps
from splice_build.spec.js_date import iso_string

_DAY = 86_400


@dataclass(frozen=True)
class TokenRequest:
    label: str = "default"
    namespaces: tuple[str, ...] | None = None
    expires_in_days: int | None = None
    can_manage: bool = False


def token_request(body: dict[str, Any], *, allow_manage: bool) -> TokenRequest:
    return TokenRequest(
        label=fields.label(body.get("label")),
        namespaces=fields.scope(body.get("namespaces")),
        expires_in_days=fields.expires_in_days(body.get("expiresInDays")),
        can_manage=fields.boolean(body.get("canManage"), "canManage", default=True)
        if allow_manage
        else False,
    )


def token_info(token: Token, *, current: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": token.id,
        "label": token.label,
        "createdAt": token.created_at,
        "lastUsedAt": token.last_used_at,
        "expiresAt": token.expires_at,
        "revokedAt": token.revoked_at,
        "namespaces": list(token.namespaces) if token.namespaces is not None else None,
        "canManage": token.can_manage,
    }
    if current is not None:
        info["current"] = token.id == current
    return info


def issue_token(
    deps: Deps, user: User, request: TokenRequest, *, not_after: str | None = None
) -> dict[str, Any]:
    """Create a token; the result (CreatedTokenResponse) is the only place the secret appears.

    ``not_after``: the expiry of the token that asks for this one, which it may not outlive
    (no ``expiresInDays`` inherits it; more days than it has left is ``TOKEN_SCOPE``).
    """
    secret = new_token()
    now = deps.now()
    expires = (
        iso_string(now + request.expires_in_days * _DAY) if request.expires_in_days else not_after
    )
    if not_after is not None and expires is not None and expires > not_after:
        raise RegistryError(
            ErrorCode.TOKEN_SCOPE,
            "A token cannot outlive the token that creates it",
            details=[f"creating token expires: {not_after}", f"requested expiry: {expires}"],
            hint="Ask for fewer days, or leave the expiry out to get the creating token's.",
        )
    row = deps.meta.insert_token(
        NewToken(
            id=new_token_id(),
            user_id=user.id,
            token_hash=token_hash(secret),
            label=request.label,
            created_at=iso_string(now),
            expires_at=expires,
            namespaces=request.namespaces,
            can_manage=request.can_manage,
        )
    )
    return {**token_info(row), "token": secret, "user": user.name}


def create_token(deps: Deps, principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """POST /auth/tokens: a publish-only token, never wider than the caller's scope and
    never living longer than the caller's token."""
    require_manage(principal)
    request = token_request(body, allow_manage=False)
    if principal.scope is not None:
        wanted = request.namespaces if request.namespaces is not None else principal.scope
        outside = sorted(set(wanted) - set(principal.scope))
        if outside:
            raise RegistryError(
                ErrorCode.TOKEN_SCOPE,
                "A scoped token can only create tokens within its own scope",
                details=[f"outside scope: @{ns}" for ns in outside],
            )
        request = TokenRequest(request.label, tuple(sorted(wanted)), request.expires_in_days)
    not_after = principal.token.expires_at if principal.token is not None else None
    return issue_token(deps, principal.user, request, not_after=not_after)


def within_scope(principal: Principal, token: Token) -> bool:
    """Whether the caller's scope covers every namespace ``token`` may publish to.

    An unscoped caller covers all of its user's tokens; a scoped one only tokens scoped to
    a subset of its namespaces, never an unscoped token.
    """
    scope = principal.scope
    return scope is None or (token.namespaces is not None and set(token.namespaces) <= set(scope))


def list_tokens(deps: Deps, principal: Principal) -> dict[str, Any]:
    """GET /auth/tokens: the user's tokens within the caller's scope (the ones it could revoke).

    A token leaked for one namespace therefore learns nothing of the user's other tokens:
    their labels, scopes or when they were last used.
    """
    require_manage(principal)
    current = principal.token.id if principal.token else None
    rows = deps.meta.tokens_of(principal.user.id)
    return {
        "tokens": [
            token_info(row, current=current or "") for row in rows if within_scope(principal, row)
        ]
    }


def revoke_token(deps: Deps, principal: Principal, token_id: str) -> dict[str, Any]:
    """DELETE /auth/tokens/:id; another user's token is reported as not found.

    A scoped token revokes only tokens within its scope: otherwise a leaked token for one
    namespace could revoke the user's unscoped managing tokens, which only an administrator
    hands out again. The refusal says nothing of the other token (not its scope, label or
    expiry): as with ``list_tokens``, a token leaked for one namespace learns nothing of the
    namespaces the user's other tokens publish to.
    """
    require_manage(principal)
    row = deps.meta.token_by_id(token_id)
    if row is None or row.user_id != principal.user.id:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Token {token_id} not found")
    if not within_scope(principal, row):
        raise RegistryError(
            ErrorCode.TOKEN_SCOPE,
            "A scoped token can only revoke tokens within its own scope",
            hint="Revoke it with a token for all of your namespaces.",
        )
    deps.meta.revoke_token(token_id, now=deps.now_iso())
    return {"id": token_id, "revoked": True}


def whoami(deps: Deps, principal: Principal) -> dict[str, Any]:
    owns, maintains = deps.meta.namespaces_of(principal.user.id)
    token = token_info(principal.token) if principal.token else None
    return {
        "user": principal.user.name,
        "namespaces": sorted({*owns, *maintains}),
        "owns": owns,
        "maintains": maintains,
        "token": token,
    }
