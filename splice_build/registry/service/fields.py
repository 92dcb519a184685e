"""Checked values from request bodies and paths (400 BAD_REQUEST / 404 on bad input).

Names are parsed by ``spec.names`` (one parser for every layer); this module only adapts
its errors to the registry's status codes.
"""

from __future__ import annotations

from splice_build.errors import ErrorCode, RegistryError, SpecError
from splice_build.registry.api import MAX_TOKEN_DAYS

MAX_LABEL = 100  # docs/compatibility.md#auth-and-tokens
MAX_SCOPE = 20  # namespaces per token


def bad_request(message: str, *, details: tuple[str, ...] = ()) -> RegistryError:
    return RegistryError(ErrorCode.BAD_REQUEST, message, details=details)


def package_id(namespace: str, name: str) -> str:
    """``@ns/name`` from path segments (a leading ``@`` on the namespace is accepted)."""
    from splice_build.spec.names import PackageId

    try:
        return PackageId.from_parts(namespace.removeprefix("@"), name).id
    except SpecError as exc:
        raise RegistryError(ErrorCode.NOT_FOUND, exc.message) from exc


def namespace_name(value: object, *, field: str = "namespace") -> str:
    """A namespace name (leading ``@`` stripped); raises BAD_REQUEST."""
    from splice_build.spec.names import is_valid_name

    if not isinstance(value, str) or not is_valid_name(value.removeprefix("@")):
        raise bad_request(f"{field} must be a valid namespace name")
    return value.removeprefix("@")


def user_name(value: object) -> str:
    """User names follow the namespace rule (a user usually owns the namespace of its name)."""
    return namespace_name(value, field="name")


def label(value: object) -> str:
    if value is None:
        return "default"
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > MAX_LABEL:
        raise bad_request(f"label must be a non-empty string of at most {MAX_LABEL} characters")
    return value.strip()


def scope(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or len(value) > MAX_SCOPE:
        raise bad_request(f"namespaces must be a list of 1..{MAX_SCOPE} namespace names")
    return tuple(sorted({namespace_name(item) for item in value}))


def expires_in_days(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKEN_DAYS:
        raise bad_request(f"expiresInDays must be an integer from 1 to {MAX_TOKEN_DAYS}")
    return value


def boolean(value: object, field: str, *, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"{field} must be true or false")
    return value
