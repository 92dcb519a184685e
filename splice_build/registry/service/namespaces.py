"""Namespaces: who may publish where, reservation, owners and maintainers (docs/compatibility.md#namespaces).

Publishing authorization, in order: token scope (TOKEN_SCOPE, a scope never claims a
namespace), owner or maintainer (allowed), owned by someone else (FORBIDDEN), reserved and
unassigned (NAMESPACE_RESERVED), released by the admin while it holds packages
(NAMESPACE_RESERVED: whoever claimed it would publish new versions of packages others
use) or keeps maintainers or signing keys (NAMESPACE_RESERVED: the claimer would inherit
its former owner's maintainers and the keys clients trust for it), otherwise free: the
publisher claims it.
"""

from __future__ import annotations

from typing import Any

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.db.interface import Namespace
from splice_build.registry.service import fields
from splice_build.registry.service.auth import Principal, require_manage
from splice_build.registry.service.deps import Deps


@dataclass(frozen=True)
class PublishRight:
    claim: bool  # True: the namespace is free and the publish transaction claims it


def authorize_publish(deps: Deps, principal: Principal, namespace: str) -> PublishRight:
    scope = principal.scope
    if scope is not None and namespace not in scope:
        raise RegistryError(
            ErrorCode.TOKEN_SCOPE,
            f"This token may not publish to @{namespace}",
            details=[f"token scope: {', '.join('@' + ns for ns in scope)}"],
        )
    row = deps.meta.namespace(namespace)
    if row is None:
        return PublishRight(claim=True)
    user = principal.user.name
    if row.owner == user or user in deps.meta.maintainers(namespace):
        return PublishRight(claim=False)
    if row.owner is not None:
        raise RegistryError(ErrorCode.FORBIDDEN, f"Namespace @{namespace} belongs to another user")
    if row.reserved:
        raise RegistryError(
            ErrorCode.NAMESPACE_RESERVED,
            f"Namespace @{namespace} is reserved",
            hint="Reserved namespaces are assigned by the registry administrator.",
        )
    if deps.meta.packages_in(namespace):  # released by the admin: its packages have users
        raise RegistryError(
            ErrorCode.NAMESPACE_RESERVED,
            f"Namespace @{namespace} has no owner but holds packages",
            hint="A namespace with packages is assigned by the registry administrator.",
        )
    if deps.meta.maintainers(namespace) or deps.meta.signing_keys(namespace):
        # Released by the admin with its former owner's maintainers (who would publish into
        # the claimer's namespace) or keys (which clients trust as the namespace's signers).
        raise RegistryError(
            ErrorCode.NAMESPACE_RESERVED,
            f"Namespace @{namespace} has no owner but keeps maintainers or signing keys",
            hint="A released namespace with maintainers or keys is assigned by the registry "
            "administrator.",
        )
    return PublishRight(claim=True)


def namespace_response(deps: Deps, row: Namespace) -> dict[str, Any]:
    """``GET /namespaces/:ns`` and the maintainer routes' answer: a listing, so hidden packages
    leave it as they leave search (docs/registry.md#http-api); the publish rule above still
    counts them."""
    return {
        "namespace": row.name,
        "owner": row.owner,
        "maintainers": deps.meta.maintainers(row.name),
        "reserved": row.reserved,
        "packages": deps.meta.packages_in(row.name, listed=True),
    }


def namespace_info(deps: Deps, namespace: str) -> dict[str, Any]:
    name = _existing_name(namespace)
    row = deps.meta.namespace(name)
    if row is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Namespace @{name} not found")
    return namespace_response(deps, row)


def set_maintainer(
    deps: Deps, principal: Principal, namespace: str, user_name: str, *, add: bool
) -> dict[str, Any]:
    """PUT/DELETE /namespaces/:ns/maintainers/:user: owner with a managing token only."""
    require_manage(principal)
    name = _existing_name(namespace)
    row = deps.meta.namespace(name)
    if row is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Namespace @{name} not found")
    if row.owner != principal.user.name:
        raise RegistryError(ErrorCode.FORBIDDEN, f"Only the owner of @{name} manages maintainers")
    if principal.scope is not None and name not in principal.scope:
        raise RegistryError(ErrorCode.TOKEN_SCOPE, f"This token may not manage @{name}")
    target = deps.meta.user_by_name(user_name)
    if target is None:
        raise RegistryError(ErrorCode.NOT_FOUND, f"User {user_name} not found")
    if target.id == principal.user.id:
        raise fields.bad_request("The owner cannot be a maintainer of their own namespace")
    if add:
        deps.meta.add_maintainer(name, target.id, now=deps.now_iso())
    else:
        deps.meta.remove_maintainer(name, target.id)
    return namespace_response(deps, row)


def _existing_name(namespace: str) -> str:
    try:
        return fields.namespace_name(namespace)
    except RegistryError as exc:
        raise RegistryError(ErrorCode.NOT_FOUND, f"Namespace {namespace} not found") from exc
