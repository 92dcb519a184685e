"""Registry metadata stores: the ``MetadataStore`` protocol and its back ends.

Back ends by name (explicit registration, STYLE 2.4); a PostgreSQL store plugs in here.
"""

from __future__ import annotations

METADATA_BACKENDS = ("sqlite",)
