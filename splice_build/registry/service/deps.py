"""What every service function works on: the two stores, the clock and the settings.

``previous_blobs`` are artifact stores a registry used before its current one (the data
directory's files after a switch to S3): versions recorded there stay readable, and
``POST /admin/artifacts/migrate`` copies them into ``blobs``.
"""

from __future__ import annotations

from splice_build.records import dataclass, field
from splice_build.registry.blobs.interface import BlobStore
from splice_build.registry.db.interface import MetadataStore
from splice_build.registry.service.clock import Clock, system_clock
from splice_build.registry.service.ratelimit import RateLimits
from splice_build.spec.js_date import iso_string


@dataclass(frozen=True)
class Deps:
    meta: MetadataStore
    blobs: BlobStore
    clock: Clock = system_clock
    admin_token_sha256: str | None = None  # hex; None disables the admin API (ADMIN_DISABLED)
    limits: RateLimits = field(default_factory=RateLimits)
    previous_blobs: tuple[BlobStore, ...] = ()

    def now(self) -> float:
        return self.clock()

    def now_iso(self) -> str:
        return iso_string(self.clock())
