"""Wire constants of the registry HTTP API v2 (docs/compatibility.md#registry-api), shared by server and client."""

from __future__ import annotations

import re

API_VERSION = 2
INTEGRITY_HEADER = "x-splice-integrity"
TARGZ_CONTENT_TYPE = "application/gzip"
BUNDLE_CONTENT_TYPE = "application/vnd.splice.bundle+json"
TOKEN_PREFIX = "splice_"
# docs/compatibility.md#auth-and-tokens: the prefix and the base64url (no padding) of 32 bytes
TOKEN_PATTERN = re.compile(r"splice_[A-Za-z0-9_-]{43}")
MAX_TOKEN_LENGTH = 200  # the longest bearer a registry looks up
MAX_TOKEN_DAYS = 365
MAX_JSON_BODY = 64 * 1024  # docs/compatibility.md#registry-api
MAX_PUBLISH_BODY = (
    5 * 1024 * 1024
)  # docs/compatibility.md#registry-api, equals spec.limits.MAX_ARCHIVE_BYTES
DEFAULT_PORT = 8787
IMMUTABLE_CACHE = "public, max-age=31536000, immutable"
