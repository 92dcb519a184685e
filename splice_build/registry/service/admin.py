"""Registry administration: users, their tokens, namespace owners, moderation.

Used by the HTTP admin routes (behind the admin token) and by ``splice registry admin``,
which works on the store directly (whoever can write the data directory is the admin).
"""

from __future__ import annotations

from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.db.interface import User
from splice_build.registry.service import fields
from splice_build.registry.service.deps import Deps
from splice_build.registry.service.tokens import TokenRequest, issue_token


def create_user(deps: Deps, name: object) -> dict[str, Any]:
    user = deps.meta.create_user(fields.user_name(name), now=deps.now_iso())
    return {"id": user.id, "name": user.name, "createdAt": user.created_at}


def _user(deps: Deps, name: str) -> User:
    user = deps.meta.user_by_name(name)
    if user is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"User {name} not found")
    return user


def create_token(deps: Deps, user_name: str, request: TokenRequest) -> dict[str, Any]:
    """A token for any user; managing by default (docs/compatibility.md#registry-api admin routes)."""
    return issue_token(deps, _user(deps, user_name), request)


def revoke_token(deps: Deps, token_id: str) -> dict[str, Any]:
    if deps.meta.token_by_id(token_id) is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Token {token_id} not found")
    deps.meta.revoke_token(token_id, now=deps.now_iso())
    return {"id": token_id, "revoked": True}


def set_owner(deps: Deps, namespace: str, owner: str | None) -> dict[str, Any]:
    """Assign (or release, with None) a namespace, creating it if needed; reservation is kept."""
    name = fields.namespace_name(namespace)
    owner_id = _user(deps, owner).id if owner is not None else None
    row = deps.meta.set_owner(name, owner_id, now=deps.now_iso())
    return {"namespace": row.name, "owner": row.owner, "reserved": row.reserved}


def set_hidden(deps: Deps, namespace: str, name: str, hidden: bool) -> dict[str, Any]:
    package_id = fields.package_id(namespace, name)
    if not deps.meta.set_hidden(package_id, hidden, now=deps.now_iso()):
        raise RegistryError(ErrorCode.NOT_FOUND, f"Package {package_id} not found")
    return {"name": package_id, "hidden": hidden}
