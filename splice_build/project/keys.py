"""Publisher signing keys on disk: ``SPLICE_HOME/keys/<name>.key`` (docs/compatibility.md#user-state, docs/compatibility.md#signatures).

A key file is an Ed25519 private key in PKCS#8 PEM, mode 0600, in a 0700 directory. Names
match ``^[a-z0-9][a-z0-9-]{0,39}$``. A key file is never overwritten: it is written to a temp
file and *linked* into place, which fails when the name exists (``KEY_EXISTS``), so two
concurrent ``keys generate`` cannot both win and a crash never leaves half a key under the
final name. ``cryptography`` is imported inside the functions that need it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, ProjectError, SpecError
from splice_build.project.atomic import atomic_write_bytes
from splice_build.records import dataclass, field
from splice_build.spec.regular_file import read_regular_file, this_user

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from splice_build.project.home import SpliceHome

KEY_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")  # docs/compatibility.md#user-state
DEFAULT_KEY_NAME = "default"
KEY_SUFFIX = ".key"
FILE_MODE = 0o600
DIR_MODE = 0o700


@dataclass(frozen=True)
class SigningKey:
    """A loaded private key with its public half and key id; ``sign`` returns base64."""

    name: str
    path: Path
    key_id: str
    public_key: str  # raw 32 bytes, standard base64
    _private: Ed25519PrivateKey = field(repr=False, compare=False)

    def sign(self, payload: bytes) -> str:
        from splice_build.spec.signing import encode_b64

        return encode_b64(self._private.sign(payload))


@dataclass(frozen=True)
class KeyFile:
    """A key listed from the keys directory (``key_id`` None when the file is unreadable)."""

    name: str
    path: Path
    key_id: str | None


def check_key_name(name: str) -> str:
    """The name itself, or SpecError(INVALID_NAME) (a usage error, exit 2)."""
    if not KEY_NAME_PATTERN.fullmatch(name):
        raise SpecError(
            ErrorCode.INVALID_NAME,
            f"Invalid key name {name!r}",
            hint="Key names are 1-40 characters: lowercase letters, digits and '-', "
            "starting with a letter or digit.",
        )
    return name


def key_path(home: SpliceHome, name: str) -> Path:
    return home.keys_dir / f"{check_key_name(name)}{KEY_SUFFIX}"


def generate_key(home: SpliceHome, name: str = DEFAULT_KEY_NAME) -> SigningKey:
    """Create ``keys/<name>.key``; raises ProjectError(KEY_EXISTS) when it already exists."""
    path = key_path(home, name)
    home.ensure()
    _ensure_private_dir(home.keys_dir)
    return create_key_file(path, name=name)


def create_key_file(path: Path, *, name: str) -> SigningKey:
    """Write a new Ed25519 key to ``path`` (0600) without ever replacing an existing file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Created only if absent (linked into place): a key is never overwritten.
    if not atomic_write_bytes(path, pem, mode=FILE_MODE, exclusive=True):
        raise ProjectError(
            ErrorCode.KEY_EXISTS,
            f"Key {name!r} already exists",
            details=[f"file: {path}"],
            hint="Choose another name (`splice keys generate <name>`); keys are never overwritten.",
        )
    return _signing_key(name, path, private)


def load_key(home: SpliceHome, name: str = DEFAULT_KEY_NAME) -> SigningKey:
    """Load ``keys/<name>.key``; raises ProjectError(KEY_NOT_FOUND) or (INVALID_CONFIG)."""
    path = key_path(home.check(), name)
    if not path.is_file():
        raise ProjectError(
            ErrorCode.KEY_NOT_FOUND,
            f"No signing key named {name!r}",
            details=[f"looked for: {path}"],
            hint=f"Create it with `splice keys generate {name}`.",
        )
    return load_key_file(path, name=name)


def key_refusals() -> tuple[type[Exception], ...]:
    """The exceptions with which ``cryptography`` refuses a PEM key: ``ValueError`` and
    ``TypeError`` (malformed, encrypted), ``UnsupportedAlgorithm`` (a curve it does not
    support: secp112r1) and ``InternalError`` (a key OpenSSL cannot set up: the X448
    identifier with an Ed25519 key's 32 bytes). Called in an ``except`` clause, so the import
    happens only when something was raised."""
    from cryptography.exceptions import InternalError, UnsupportedAlgorithm

    return (ValueError, TypeError, UnsupportedAlgorithm, InternalError)


def load_key_file(path: Path, *, name: str) -> SigningKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        # Another user's key file (put in the home before it was closed) would sign as you.
        data = read_regular_file(path, owner=this_user())
        private = serialization.load_pem_private_key(data, password=None)
    except (OSError, *key_refusals()) as exc:
        raise _invalid(path, "not a readable unencrypted PKCS#8 PEM private key") from exc
    if not isinstance(private, Ed25519PrivateKey):
        raise _invalid(path, "not an Ed25519 key")
    return _signing_key(name, path, private)


def list_keys(home: SpliceHome) -> list[KeyFile]:
    """Every ``<name>.key`` in the keys directory, sorted by name."""
    try:
        entries = list(home.check().keys_dir.iterdir())
    except FileNotFoundError:
        return []
    found = []
    for path in entries:
        name = path.name.removesuffix(KEY_SUFFIX)
        if path.suffix != KEY_SUFFIX or not KEY_NAME_PATTERN.fullmatch(name):
            continue
        try:
            key_id: str | None = load_key_file(path, name=name).key_id
        except ProjectError:
            key_id = None
        found.append(KeyFile(name, path, key_id))
    return sorted(found, key=lambda k: k.name)


def _signing_key(name: str, path: Path, private: Ed25519PrivateKey) -> SigningKey:
    from cryptography.hazmat.primitives import serialization

    from splice_build.spec.signing import encode_b64, key_id

    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return SigningKey(name, path, key_id(raw), encode_b64(raw), private)


def _ensure_private_dir(directory: Path) -> None:
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if directory.stat().st_mode & 0o077:
        directory.chmod(DIR_MODE)


def _invalid(path: Path, problem: str) -> ProjectError:
    return ProjectError(
        ErrorCode.INVALID_CONFIG,
        f"{path.name} is invalid: {problem}",
        details=[f"file: {path}"],
        hint="Restore the key from a backup, or generate a new one under another name.",
    )
