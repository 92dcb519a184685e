"""Wire constants of the registry HTTP API v2 (docs/compatibility.md#registry-api), shared by server and client."""

from __future__ import annotations

API_VERSION = 2
INTEGRITY_HEADER = "x-splice-integrity"
TARGZ_CONTENT_TYPE = "application/gzip"
BUNDLE_CONTENT_TYPE = "application/vnd.splice.bundle+json"
TOKEN_PREFIX = "splice_"
MAX_TOKEN_DAYS = 365
MAX_JSON_BODY = 64 * 1024  # docs/compatibility.md#registry-api
MAX_PUBLISH_BODY = (
    5 * 1024 * 1024
)  # docs/compatibility.md#registry-api, equals spec.limits.MAX_ARCHIVE_BYTES
DEFAULT_PORT = 8787
IMMUTABLE_CACHE = "public, max-age=31536000, immutable"
