"""The official ``@splice`` publisher key shipped in the wheel (docs/signing.md#the-official-key).

``schemas/official_publisher.json`` holds the *public* half of the release key the maintainers
sign official skills with; the private half never enters the repository. Every package of
the ``@splice`` namespace, from any registry, must carry a valid signature by this key: it is
the trust anchor a registry cannot replace, because it comes with the client, not the answer.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass

DATA_FILE = "official_publisher.json"


@dataclass(frozen=True)
class OfficialKey:
    namespace: str
    key_id: str
    public_key: str  # raw 32 bytes, standard base64


@cache
def official_key() -> OfficialKey:
    """The shipped key, its id recomputed from the public key (a mismatch is a broken wheel)."""
    from splice_build.spec.signing import decode_public_key, key_id

    text = resources.files("splice_build.schemas").joinpath(DATA_FILE).read_text("utf-8")
    data = json.loads(text)
    public = data["publicKey"]
    actual = key_id(decode_public_key(public))
    if actual != data["keyId"]:
        raise SpecError(
            ErrorCode.SIGNATURE_INVALID,
            f"the shipped official key id {data['keyId']} does not match its key ({actual})",
        )
    return OfficialKey(str(data["namespace"]), actual, public)


def is_official(package_id: str) -> bool:
    """Whether ``package_id`` is in the namespace only the official key may sign."""
    return package_id[1:].split("/", 1)[0] == official_key().namespace
