"""Who is calling: bearer tokens (format, hashing, lookup) and the admin token.

docs/compatibility.md#auth-and-tokens. A token is ``splice_`` + 43 base64url characters (32 random bytes); the
store keeps only the lowercase hex SHA-256 of the whole string.

The failed-token lockout (docs/registry.md#abuse-limits) counts failures per client address,
but a valid user token always gets through: a client that spent its budget gets
``429 RATE_LIMITED`` for every *failing* attempt, so whoever shares its address (a NAT, an
office, a proxy) keeps working with a real token. Guessing gains nothing from this: a token has
256 random bits. The admin API keeps the strict block (its token is the operator's choice and
may be weak; the operator also has ``splice registry admin`` on the store), with a budget of
its own, so failing user tokens never lock the admin out, nor the other way round. All
clients together also share one budget of failed admin tokens (``failed_admin_auth``): many
source addresses buy a guesser no more attempts at it than two addresses would.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.api import MAX_TOKEN_LENGTH, TOKEN_PREFIX
from splice_build.registry.db.interface import Token, User
from splice_build.registry.service import ratelimit
from splice_build.registry.service.deps import Deps

_BEARER = re.compile(r"^bearer +(\S+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Caller:
    """One request's credentials and origin, as the transport saw them.

    ``internal_user`` is set only by the embedded client (a local store the user owns): it
    acts as that user without a token, recorded as ``via: "internal"``.
    """

    authorization: str | None = None
    client: str = "local"
    internal_user: str | None = None


@dataclass(frozen=True)
class Principal:
    user: User
    token: Token | None  # None for the internal (embedded) publisher

    @property
    def via(self) -> str:
        return "internal" if self.token is None else "token"

    @property
    def can_manage(self) -> bool:
        return self.token is None or self.token.can_manage

    @property
    def scope(self) -> tuple[str, ...] | None:
        return None if self.token is None else self.token.namespaces


def new_token() -> str:
    raw = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")
    return TOKEN_PREFIX + raw


def new_token_id() -> str:
    return "tok_" + secrets.token_hex(8)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _unauthenticated(message: str) -> RegistryError:
    return RegistryError(
        ErrorCode.UNAUTHENTICATED, message, hint="Log in with `splice login` or set SPLICE_TOKEN."
    )


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when absent."""
    if authorization is None or not authorization.strip():
        return None
    match = _BEARER.match(authorization.strip())
    if not match:
        raise _unauthenticated("Malformed Authorization header (expected: Bearer <token>)")
    return match.group(1)


def authenticate(deps: Deps, caller: Caller) -> Principal:
    """The user behind the caller; raises UNAUTHENTICATED (401) or RATE_LIMITED (429)."""
    if caller.internal_user is not None:
        user = deps.meta.user_by_name(caller.internal_user)
        if user is None:
            user = deps.meta.create_user(caller.internal_user, now=deps.now_iso())
        return Principal(user, None)
    try:
        secret = bearer_token(caller.authorization)
    except RegistryError:
        ratelimit.record_failed_auth(deps, ratelimit.USER_AUTH, caller.client)
        raise
    if secret is None:
        raise _unauthenticated("Authentication required")
    principal = _lookup(deps, secret)
    if principal is None:
        ratelimit.record_failed_auth(deps, ratelimit.USER_AUTH, caller.client)
        raise _unauthenticated("Invalid, expired or revoked token")
    ratelimit.count_request(deps, caller.client)
    if principal.token is not None:
        deps.meta.touch_token(principal.token.id, now=deps.now_iso())
    return principal


def _lookup(deps: Deps, secret: str) -> Principal | None:
    if len(secret) > MAX_TOKEN_LENGTH or not secret.startswith(TOKEN_PREFIX):
        return None
    token = deps.meta.token_by_hash(token_hash(secret))
    if token is None or token.revoked_at is not None:
        return None
    if token.expires_at is not None and token.expires_at <= deps.now_iso():
        return None
    user = deps.meta.user_by_id(token.user_id)
    return Principal(user, token) if user is not None else None


def require_manage(principal: Principal) -> None:
    if not principal.can_manage:
        raise RegistryError(
            ErrorCode.TOKEN_SCOPE,
            "This token can only publish; managing tokens and maintainers needs a full token",
        )


def authenticate_admin(deps: Deps, caller: Caller) -> None:
    """The admin API: disabled without a configured hash; compared in constant time."""
    if deps.admin_token_sha256 is None:
        raise RegistryError(ErrorCode.ADMIN_DISABLED, "The admin API is disabled on this registry")
    ratelimit.check_auth_block(deps, ratelimit.ADMIN_AUTH, caller.client)  # strict: see above
    ratelimit.count_admin(deps, caller.client)
    try:
        secret = bearer_token(caller.authorization)
    except RegistryError:
        ratelimit.record_failed_auth(deps, ratelimit.ADMIN_AUTH, caller.client)
        raise
    if secret is None:
        raise _unauthenticated("Admin authentication required")
    if not hmac.compare_digest(token_hash(secret), deps.admin_token_sha256.lower()):
        ratelimit.record_failed_auth(deps, ratelimit.ADMIN_AUTH, caller.client)
        raise RegistryError(ErrorCode.FORBIDDEN, "Invalid admin token")
