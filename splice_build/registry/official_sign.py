"""Re-sign the official skills with the release key: the maintainers' task (docs/signing.md#the-official-key).

``python -m splice_build.registry.official_sign --key FILE`` (or ``doit sign_official`` with
``SPLICE_OFFICIAL_KEY_FILE``) packs every official skill, signs the integrity of the packed
bytes with the private release key and writes ``splice_build/skills/signatures.json``. The
private key is read from the file named on the command line or in the environment, never from
the repository; a key whose id is not the shipped official key is refused, so the data can
only ever hold signatures the shipped public key verifies. Packing is deterministic, so the
same sources always give the same integrity and the file changes only when a skill does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from splice_build.registry.official import SIGNATURES_FILE, official_skills

KEY_ENV = "SPLICE_OFFICIAL_KEY_FILE"


def signatures_for(key_file: Path) -> list[dict[str, str]]:
    """One entry per official skill version: package, version, integrity and the signature."""
    from splice_build.errors import ErrorCode, SpecError
    from splice_build.project.keys import load_key_file
    from splice_build.spec.official_key import official_key
    from splice_build.spec.pack import pack_directory
    from splice_build.spec.signing import signing_payload

    key = load_key_file(key_file, name="official-publisher")
    shipped = official_key()
    if key.key_id != shipped.key_id:
        raise SpecError(
            ErrorCode.SIGNATURE_INVALID,
            f"{key_file} holds {key.key_id}, not the shipped official key {shipped.key_id}",
            hint="Sign with the release key the maintainers hold.",
        )
    entries = []
    for skill in official_skills():
        integrity = pack_directory(skill.directory).integrity
        payload = signing_payload(skill.package_id, skill.version, integrity)
        entries.append(
            {
                "package": skill.package_id,
                "version": skill.version,
                "integrity": integrity,
                "keyId": key.key_id,
                "publicKey": key.public_key,
                "signature": key.sign(payload),
            }
        )
    return entries


def main(argv: list[str] | None = None) -> int:
    from splice_build.project.atomic import atomic_write_bytes
    from splice_build.skills import skills_root

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", type=Path, help=f"the private release key (else ${KEY_ENV})")
    args = parser.parse_args(argv)
    key_file = args.key or (Path(os.environ[KEY_ENV]) if os.environ.get(KEY_ENV) else None)
    if key_file is None:
        parser.error(f"give --key FILE or set {KEY_ENV}")
    from splice_build.errors import SpliceError

    try:
        entries = signatures_for(key_file)
    except SpliceError as exc:  # a wrong or unreadable key: a coded line, not a traceback
        print(f"error: {exc.message} ({exc.code.value})", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 1
    text = json.dumps({"signatures": entries}, indent=2) + "\n"
    target = skills_root() / SIGNATURES_FILE
    atomic_write_bytes(target, text.encode("utf-8"))
    print(f"signed {len(entries)} official skill versions into {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
