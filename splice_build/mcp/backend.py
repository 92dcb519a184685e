"""The installed-skills backend: the project's packages, through the SDK's ``Splice``.

Every request re-reads the lock and re-checks the packages from bytes (files digest and
permission grant, done by ``Splice.tools``/``installed``/``run``): a package modified while
the server runs disappears from ``tools/list`` and ``resources/list``, and a call of one of
its tools is refused with the loader's code (``INSTALLED_PACKAGE_MODIFIED``, …), its paths
shown as ``<package>`` / ``<project>``. Names that match no locked package are unknown (-32602).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, NotDerivedError, SpliceError
from splice_build.mcp.interface import (
    Refused,
    Resource,
    ResourceContents,
    ToolOutcome,
    UnknownResource,
    UnknownTool,
)
from splice_build.mcp.mapping import META_PREFIX
from splice_build.records import replace

if TYPE_CHECKING:
    from splice_build.sdk import Splice

INSTRUCTIONS = (
    "These tools are Splice skills installed in this project. Each call runs in the Splice "
    "sandbox (a fresh Node.js process) with only the permissions its package declares: see "
    'the tool\'s annotations and _meta["io.spliceloom/permissions"]. Before using a '
    "package's tools, read its SKILL.md resource (splice://packages/@<ns>/<name>/SKILL.md)."
)

# Resolution failures that mean "no such tool" rather than "that package may not run".
_UNKNOWN_CODES = frozenset(
    {ErrorCode.NOT_INSTALLED, ErrorCode.AMBIGUOUS_TOOL, ErrorCode.TOOL_NOT_FOUND}
)


def skill_uri(package_id: str) -> str:
    return f"splice://packages/{package_id}/SKILL.md"


def _mcp_prefix(package_id: str) -> str:
    namespace, name = package_id.removeprefix("@").split("/", 1)
    return f"{namespace}_{name}_"


class InstalledBackend:
    """``Backend`` over one project's installed packages."""

    def __init__(self, splice: Splice) -> None:
        self._splice = splice
        self._root = Path(splice.project_root)

    # tools -------------------------------------------------------------------------------
    def list_tools(self) -> Sequence[Mapping[str, Any]]:
        with self._refusals_scrubbed():
            descriptors = self._splice.tools()
        return sorted(descriptors, key=lambda descriptor: str(descriptor["package"]))

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        # MCP names only: ``<ns>_<name>_<tool>`` always has "_" (names and tools never do),
        # so "hello" or "example.hello" do not reach the SDK's friendlier resolution.
        if "_" not in name or "." in name or "@" in name:
            raise UnknownTool(name)
        try:
            result = self._splice.run(name, arguments)  # resolves, re-verifies, then runs
        except SpliceError as exc:
            if exc.code not in _UNKNOWN_CODES:
                raise self._scrubbed(exc) from exc
            self._refuse_if_locked(name)
            raise UnknownTool(name) from exc
        envelope = result.to_json()
        outcome = ToolOutcome.from_result_json(envelope)
        if "isolation" not in envelope:
            return outcome
        # Which isolation ran (issue #14): the call result's _meta["io.spliceloom/isolation"].
        return replace(outcome, meta={f"{META_PREFIX}isolation": envelope["isolation"]})

    def _refuse_if_locked(self, name: str) -> None:
        """A locked package whose check fails explains why its tool is not served: one
        missing is unknown, one this machine never checked against its artifact (a fresh
        clone's) is not (``splice install`` serves it)."""
        for entry in self._splice.list():
            package_id = str(entry["name"])
            if not name.startswith(_mcp_prefix(package_id)):
                continue
            try:
                self._splice.check(package_id)
            except SpliceError as exc:
                if exc.code != ErrorCode.NOT_INSTALLED or isinstance(exc, NotDerivedError):
                    raise self._scrubbed(exc) from exc

    @contextlib.contextmanager
    def _refusals_scrubbed(self) -> Iterator[None]:
        """A refusal of the project's state (a broken ``splice.lock``, …) leaves as
        ``Refused``, scrubbed: the protocol answers it with its code, not as an internal
        error."""
        try:
            yield
        except SpliceError as exc:
            raise Refused(self._scrubbed(exc)) from exc

    def _scrubbed(self, exc: SpliceError) -> SpliceError:
        """The same error with absolute paths replaced by ``<package>`` / ``<project>``."""
        from splice_build.security.redact import PathSanitizer

        paths: dict[Path | str, str] = {}
        for root in {self._root, self._root.resolve()}:
            paths[root] = "<project>"
            for package in (root / ".splice" / "packages").glob("@*/*"):
                paths[package] = "<package>"
        scrub = PathSanitizer.for_paths(paths)
        return SpliceError(
            exc.code,
            scrub(exc.message),
            details=[scrub(detail) for detail in exc.details],
            hint=scrub(exc.hint) if exc.hint else None,
        )

    # resources ---------------------------------------------------------------------------
    def list_resources(self) -> Sequence[Resource]:
        with self._refusals_scrubbed():
            installed = self._splice.installed()
        return [
            Resource(uri=skill_uri(package.id), name=f"{package.id} SKILL.md")
            for package in sorted(installed, key=lambda package: package.id)
        ]

    def read_resource(self, uri: str) -> ResourceContents:
        from splice_build.mcp.mapping import shown_document
        from splice_build.spec.digests import sha256_hex
        from splice_build.spec.limits import MAX_SKILL_MD_BYTES
        from splice_build.spec.package import SKILL_FILE
        from splice_build.spec.regular_file import read_regular_file

        # Only listed URIs are served: the client's string is compared, never turned into a path.
        with self._refusals_scrubbed():
            installed = self._splice.installed()
        for package in installed:
            if skill_uri(package.id) == uri:
                path = Path(package.directory) / SKILL_FILE
                try:
                    data = read_regular_file(path, limit=MAX_SKILL_MD_BYTES)
                    if sha256_hex(data) == package.skill_sha:
                        return ResourceContents(uri=uri, text=shown_document(data.decode("utf-8")))
                except (OSError, UnicodeDecodeError):
                    pass
                # Changed since its tree was verified (gone, a FIFO, other bytes): the package
                # is no longer intact, so it is not served.
                break
        raise UnknownResource(uri)
