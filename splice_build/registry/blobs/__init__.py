"""Registry artifact stores: the ``BlobStore`` protocol and its back ends.

Back ends by name (explicit registration, STYLE 2.4); an S3-compatible store plugs in here.
"""

from __future__ import annotations

BLOB_BACKENDS = ("fs", "memory")
