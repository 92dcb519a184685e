"""Provider keys: a FIXED list of variable names, read from fixed places (docs/security.md).

Each name is looked up, in order, in

1. the process environment given to the broker;
2. the nearest directory at or above the project that holds ``.env.local`` or ``.env``
   (``.env.local`` wins over ``.env`` in that directory);
3. ``SPLICE_HOME/.env``.

No other variable is read from those files: a line whose name is not in
``PROVIDER_VARIABLES`` is skipped without keeping its value. A file that is not a regular
file (a FIFO would block the read forever), is over ``MAX_ENV_FILE_BYTES`` or is owned by
another user (the walk up from the project reaches shared directories such as ``/tmp``,
where anyone may leave a ``.env`` naming their own RPC URL or AI key) is skipped as an
unreadable one is; the walk still stops at its directory. So are the files of a directory
that lies in a write grant of a project above it (``enclosing_write_grant``,
project/tool_written.py): a tool granted ``fs.write: ["packages"]`` wrote
``packages/a/.env.local`` naming its own RPC URL and AI key, and ``splice mcp --data`` in
``packages/a`` (whose packages run nothing there) called providers with them; and so are
files a write grant names themselves (``fs.write: ["packages/.env"]``, the nearest file above
``packages/a``). ``ProviderKeys`` never shows a value in its ``repr``;
``secret_values()`` lists everything redaction must remove, including the long pieces of a
key-carrying RPC URL (path segments, query values and host labels).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from splice_build.records import dataclass, field
from splice_build.spec.project_state import ENV_FILES
from splice_build.spec.provider_variables import PROVIDER_VARIABLES

# A .env file holds a few lines; one larger than this (a link to a log, to /dev/zero) is
# skipped like an unreadable one, never read into memory.
MAX_ENV_FILE_BYTES = 1024 * 1024
# Pieces of a URL-valued key at least this long are treated as secrets on their own (an
# Alchemy or QuickNode key is a path segment; "v2" or "mainnet" are not secrets).
MIN_URL_SECRET_PIECE = 12
# The name and its ``=``; the value is the rest of the line, stripped. (Matched by the former
# ``=\s*(.*?)\s*$``, a value of spaces followed by a letter was a quadratic scan: the lazy group
# took one character at a time and ``\s*$`` ran to the end of the spaces each time; a checkout's
# .env of one such 64 KB line held splice secret-scan for 13 s.)
_NAME = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


@dataclass(frozen=True)
class ProviderKeys:
    """The configured provider keys; ``sources`` says where each one came from (no values)."""

    _values: Mapping[str, str] = field(default_factory=dict, repr=False)
    sources: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        assert name in PROVIDER_VARIABLES, f"BUG: {name} is not a provider variable"
        return self._values.get(name)

    def named_values(self) -> tuple[tuple[str, str], ...]:
        """``(variable, secret)`` pairs: each value, plus the long pieces of URL values."""
        found: list[tuple[str, str]] = []
        for name, value in self._values.items():
            found.append((name, value))
            if "://" in value:
                parts = urlsplit(value)
                pieces = [*parts.path.split("/"), *(v for _, v in parse_qsl(parts.query))]
                if parts.password:
                    pieces.append(parts.password)
                # Some endpoints carry the key as a host label (<key>.rpc.example), which
                # urllib3's DEBUG line "Starting new HTTPS connection" shows lower-cased.
                pieces += [p for p in (parts.hostname or "").split(".") if _key_like(p)]
                found += [(name, p) for p in pieces if len(p) >= MIN_URL_SECRET_PIECE]
        return tuple(dict.fromkeys(found))

    def secret_values(self) -> tuple[str, ...]:
        """Every string redaction must remove (see ``named_values``)."""
        return tuple(dict.fromkeys(value for _, value in self.named_values()))


def _key_like(label: str) -> bool:
    """A host label that looks like a key: letters and digits, no hyphen. The shared host's
    other labels name a chain or a provider (``arbitrum-mainnet``): a README or a config
    that names them is no leak, and ``splice secret-scan`` must not refuse it."""
    return "-" not in label and any(c.isdigit() for c in label) and any(c.isalpha() for c in label)


def parse_env_file(text: str) -> dict[str, str]:
    """The provider variables defined in a dotenv text (others are skipped unread)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _NAME.match(line)
        if match is None or match.group(1) not in PROVIDER_VARIABLES:
            continue
        value = line[match.end() :].strip()
        if value[:1] in ("'", '"') and value.find(value[0], 1) > 0:
            value = value[1 : value.find(value[0], 1)]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if value:
            found[match.group(1)] = value
    return found


def _read(path: Path) -> dict[str, str]:
    from splice_build.spec.regular_file import read_regular_file, this_user

    try:
        data = read_regular_file(path, limit=MAX_ENV_FILE_BYTES, owner=this_user())
    except OSError:  # missing, unreadable, a FIFO or device, too large, another user's
        return {}
    return parse_env_file(data.decode("utf-8", errors="replace"))


def _nearest_env_files(start: Path, env: Mapping[str, str], home: Path | None) -> list[Path]:
    for directory in (start, *start.parents):
        files = [directory / name for name in ENV_FILES if (directory / name).is_file()]
        if files:
            return [] if _tool_written([directory, *files], env, home) else files
    return []


def _tool_written(paths: list[Path], env: Mapping[str, str], home: Path | None) -> bool:
    """Whether any of ``paths`` (a directory and its ``.env`` files) lies in a write grant of
    a project above it: those files are then a tool's as much as the user's (a grant of
    ``packages`` or of ``packages/.env`` itself)."""
    from splice_build.project.home import SpliceHome
    from splice_build.project.tool_written import in_write_grant

    return in_write_grant(paths, home if home is not None else SpliceHome.from_env(env).path)


def load_keys(
    *, env: Mapping[str, str], project_root: Path | None, home: Path | None
) -> ProviderKeys:
    """Resolve every provider variable (see the module docstring for the order)."""
    layers: list[tuple[str, dict[str, str]]] = [
        ("environment", {n: env[n] for n in PROVIDER_VARIABLES if env.get(n)})
    ]
    if project_root is not None:
        found = _nearest_env_files(project_root, env, home)
        layers += [(str(path), _read(path)) for path in found]
    if home is not None:
        layers.append((str(home / ".env"), _read(home / ".env")))
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for source, found in layers:
        for name, value in found.items():
            if name not in values:
                values[name] = value
                sources[name] = source
    return ProviderKeys(values, sources)
