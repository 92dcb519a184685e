"""What isolation one sandbox process gets (``IsolationPlan``) and how it is chosen.

Modes (``SpliceRuntime(isolation=…)``, or the user's ``config.json`` key ``isolation``):

- ``auto`` (default): the OS layer where the kernel allows it, else the in-process guards
  alone; every result says which ran (``ToolResult.isolation``).
- ``require-os``: every layer of the OS layer (the namespaces, the file view, the seccomp
  filter, ``no_new_privs``) is required; any missing one is an error
  (``ISOLATION_UNAVAILABLE``, naming each), never a silent fallback.
- ``in-process``: the OS layer is not used (reported as such).

The plan is a frozen value: it is part of the sandbox spec, hence of the warm pool's key, so
a warm process always has exactly the layer its call needs. ``to_json`` is the ``isolation``
field of ``splice run --json`` and of MCP ``_meta["io.spliceloom/isolation"]``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, ProjectError, SandboxError
from splice_build.file_keys import change_key
from splice_build.records import dataclass, field
from splice_build.runtime.isolation import rlimits

if TYPE_CHECKING:
    from pathlib import Path

    from splice_build.runtime.isolation.support import IsolationSupport

MODES = ("auto", "require-os", "in-process")
DEFAULT_MODE = "auto"


@dataclass(frozen=True)
class IsolationPlan:
    """The layers applied between fork and exec of one sandbox process."""

    # user, PID, IPC, mount and network namespaces (the network one always empty: a tool's
    # requests are the parent's), a private /proc, no capabilities
    os_layer: bool
    pid_max: int | None  # the PID namespace's pid_max, when the kernel allows setting it
    no_new_privs: bool
    last_cap: int
    limits: rlimits.Limits = field(default_factory=rlimits.Limits)
    seccomp: bool = False  # the allow-list filter, no sockets (isolation/seccomp.py)
    file_view: bool = False  # a fresh root with only what the tool may see (fileview.py)
    reasons: tuple[str, ...] = ()  # why a layer is not applied (for the report)

    @property
    def namespaces(self) -> tuple[str, ...]:
        if not self.os_layer:
            return ()
        return ("user", "pid", "ipc", "mount", "net")

    def to_json(self) -> dict[str, Any]:
        processes: list[str] = []
        if self.limits.processes is not None:
            processes.append(f"RLIMIT_NPROC {self.limits.processes}")
        if self.pid_max is not None:
            processes.append(f"pid_max {self.pid_max}")
        out: dict[str, Any] = {
            "layer": "os" if self.os_layer else "in-process",
            "namespaces": list(self.namespaces),
            "network": "none" if self.os_layer else "host",
            "noNewPrivs": self.no_new_privs,
            "seccomp": "sockets denied" if self.seccomp else "off",
            "fileView": "minimal" if self.file_view else "host",
            "capabilities": "none" if self.os_layer else "inherited",
            "limits": self.limits.to_json(),
            "processLimit": processes,
        }
        if self.reasons:
            out["unavailable"] = list(self.reasons)
        return out


def check_mode(value: object, *, source: str) -> str:
    """``value`` if it is a mode; INVALID_CONFIG naming ``source`` otherwise."""
    if value not in MODES:
        raise ProjectError(
            ErrorCode.INVALID_CONFIG,
            f"{source}: isolation must be one of {', '.join(MODES)}, not {value!r}",
        )
    return str(value)


def configured_mode(env: Mapping[str, str], home: Path | None = None) -> str:
    """The user's ``isolation`` setting (``config.json`` of ``home``, the one a ``Splice``
    or runtime was given, else of ``SPLICE_HOME`` in ``env``), else ``auto``."""
    return ConfiguredMode(env, home).current()


class ConfiguredMode:
    """The user's ``isolation`` setting as ``config.json`` says it at each call: read again
    whenever the file's ``stat`` changed, else one ``stat``. A long-lived runtime
    (``splice mcp``, one ``Splice``) read it once, at its start: switched from
    ``in-process`` back to ``auto`` while a ``splice mcp --reuse`` served, the next calls
    still ran in-process, in the very process kept from before."""

    def __init__(self, env: Mapping[str, str], home: Path | None = None) -> None:
        from splice_build.project.home import SpliceHome

        self._user = SpliceHome(home) if home is not None else SpliceHome.from_env(env)
        # (the file's stat before it was read, the mode read): one value, so that threads
        # reading at once never pair one state's stat with another's mode
        self._read: tuple[tuple[int, ...] | None, str] | None = None

    def current(self) -> str:
        """The mode now; INVALID_CONFIG (at every call, never remembered) for a bad file."""
        seen = _stat_key(self._user.config_file)  # before the read: a later change is seen
        read = self._read
        if read is not None and read[0] == seen:
            return read[1]
        value = self._user.read_config().get("isolation", DEFAULT_MODE)
        mode = check_mode(value, source=str(self._user.config_file))
        self._read = (seen, mode)
        return mode


def _stat_key(path: Path) -> tuple[int, ...] | None:
    """What tells one state of ``path`` from another (None: no such file, or unreadable):
    its ``change_key`` and its owner, on which the read depends (another user's file is
    refused, project/home.py)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (*change_key(st), st.st_uid)


def plan_for(mode: str, support: IsolationSupport) -> IsolationPlan:
    """The plan of a sandbox process under ``mode`` (the same for every package: a network
    grant changes what the parent fetches, never the tool's own network).

    Raises ``SandboxError(ISOLATION_UNAVAILABLE)`` for ``require-os`` when any of its layers
    is missing (``IsolationSupport.missing_required``).
    """
    if mode == "require-os" and support.missing_required():
        raise unavailable_error(support)
    os_layer = mode != "in-process" and support.namespaces
    reasons = () if os_layer else support.reasons(mode)
    seccomp = mode != "in-process" and support.seccomp.available
    if mode != "in-process" and not seccomp:
        reasons = (*reasons, f"seccomp: {support.seccomp.detail}")
    file_view = os_layer and support.file_view
    if os_layer and not file_view:
        reasons = (*reasons, f"file view: {support.file_view_reason}")
    in_user_namespace = os_layer and not support.root
    return IsolationPlan(
        os_layer=os_layer,
        seccomp=seccomp,
        file_view=file_view,
        pid_max=rlimits.PID_MAX if os_layer and support.pid_max else None,
        no_new_privs=support.no_new_privs,
        last_cap=support.last_cap,
        limits=rlimits.Limits(
            processes=rlimits.PROCESSES if in_user_namespace else None
        ).within_hard_limits(),
        reasons=reasons,
    )


def unavailable_error(support: IsolationSupport) -> SandboxError:
    return SandboxError(
        ErrorCode.ISOLATION_UNAVAILABLE,
        "The OS isolation layer is required (isolation = require-os) but part of it is "
        "unavailable here: " + ", ".join(m.partition(":")[0] for m in support.missing_required()),
        details=support.missing_required(),
        hint="run `splice doctor` for the layers this machine allows",
    )
