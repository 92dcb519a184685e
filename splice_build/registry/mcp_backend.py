"""The registry's MCP server (``POST /mcp``): discovery only, over our own JSON-RPC ``Server``.

docs/compatibility.md#mcp. Agents search the registry, inspect a package version (its tools with the
input/output schemas of the published manifest) and read its SKILL.md, decoded from the
stored artifact. Nothing here runs a skill: the registry has no sandbox; tools run where the
Splice runtime runs (``splice mcp``, the SDK).

``RegistryDiscoveryBackend`` is an ``mcp.interface.Backend``. ``RegistryMcpServer`` adapts
the generic ``Server`` in two places: its tools are the registry's own (listed as they are,
not mapped from an installed package's descriptor with a sandbox note), and it has a
resource *template* instead of listed resources. Registry errors (unknown package, no
matching version, invalid arguments) become ``isError`` results ``CODE: message``.

What ``registry_package_info`` reads of a version's manifest (its description, permissions and
tools) is written once per process and kept by the version's identity (``ManifestView``): a
2 MiB manifest of lists nested 8 deep took 0.83 s of the server's CPU for every call. Making
one is charged to the caller's budget of costly reads, as the anonymous ``GET`` of the same
version is (http/answer_cache.py): the endpoint names the caller's charge with ``charged_to``.
A version's SKILL.md is kept the same way: reading it from the stored artifact (its digest,
up to 16 MiB inflated and every tar header read) took 49 ms of CPU for the largest archive a
registry accepts, for the same text at every read.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any

from splice_build.errors import ErrorCode, RegistryError, SpecError
from splice_build.mcp.interface import (
    Resource,
    ResourceContents,
    ServerInfo,
    ToolOutcome,
    UnknownResource,
    UnknownTool,
)
from splice_build.mcp.protocol import Log, Server, Session
from splice_build.records import dataclass
from splice_build.registry.api import API_VERSION
from splice_build.registry.db.interface import Version
from splice_build.registry.http.answer_cache import Charge, KeptCache
from splice_build.registry.service import read
from splice_build.registry.service.artifacts import read_artifact
from splice_build.registry.service.deps import Deps
from splice_build.registry.service.read import Keyed
from splice_build.spec import json_text

if TYPE_CHECKING:
    from splice_build.spec.names import PackageRef

SEARCH = "registry_search"
PACKAGE_INFO = "registry_package_info"
MAX_QUERY = 100
MAX_SEARCH_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 10
SKILL_DOC = "SKILL.md"
TEMPLATE = "splice://registry/{namespace}/{name}/{version}/SKILL.md"
_TEMPLATE_URI = re.compile(
    r"^splice://registry/([a-z0-9-]+)/([a-z0-9-]+)/([0-9A-Za-z.+-]+|latest)/SKILL\.md$"
)
INSTRUCTIONS = (
    "Discover Splice skills: search the registry and inspect packages (tool names, "
    "input/output schemas, permissions). This server does not execute skills; install them "
    "with `splice add` and run them through `splice mcp` or the Splice SDK."
)
_DISCOVERY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}

TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": SEARCH,
        "title": "Search Splice packages",
        "description": "Search the Splice registry by package name and description.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY,
                    "description": "Search text",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "description": f"Maximum results (default {DEFAULT_SEARCH_LIMIT})",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "description": {"type": "string"},
                            "latest": {"type": "string"},
                        },
                        "required": ["name", "description", "latest"],
                    },
                },
            },
            "required": ["query", "results"],
        },
        "annotations": {"title": "Search Splice packages", **_DISCOVERY},
    },
    {
        "name": PACKAGE_INFO,
        "title": "Inspect a Splice package",
        "description": (
            "Metadata of a package version: description, versions, integrity, permissions and "
            "every tool with its input/output JSON Schema taken from the published manifest."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "package": {
                    "type": "string",
                    "minLength": 3,
                    "maxLength": 140,
                    "description": "Package id, e.g. @splice/example",
                },
                "version": {
                    "type": "string",
                    "maxLength": 64,
                    "description": "Version or range (default: latest)",
                },
            },
            "required": ["package"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "description": {"type": "string"},
                "latest": {"type": "string"},
                "versions": {"type": "array", "items": {"type": "string"}},
                "versionCount": {"type": "integer"},
                "versionsTruncated": {"type": "boolean"},
                "integrity": {"type": "string"},
                "publishedAt": {"type": "string"},
                "permissions": {"type": "object"},
                "tools": {"type": "array", "items": {"type": "object"}},
                "skillDoc": {"type": "string"},
            },
            "required": [
                "name",
                "version",
                "description",
                "latest",
                "versions",
                "integrity",
                "permissions",
                "tools",
                "skillDoc",
            ],
        },
        "annotations": {"title": "Inspect a Splice package", **_DISCOVERY},
    },
)
_PUBLIC_TOOL_KEYS = ("name", "qualifiedName", "mcpName", "description", "inputSchema")


def _invalid(message: str) -> RegistryError:
    return RegistryError(ErrorCode.INVALID_INPUT, message)


def _shallow_manifest(namespace: str, name: str, row: Version) -> Any:
    """The stored manifest, read only when the C decoder can read it (about 1,000 levels).

    A manifest may nest a ``default`` a million levels deep; parsing, checking and writing it
    again in pure Python took about 10 s of the server's CPU for every call (and before that it
    ended in an internal error). Such a version is refused at the cost of the C decoder's
    refusal; ``GET /packages/:ns/:name/:version`` still carries it (``json_text.parse_shallow``).
    """
    value = json_text.parse_shallow(row.manifest)
    if isinstance(value, json_text.Encoded):
        raise RegistryError(
            ErrorCode.RESULT_TOO_LARGE,
            f"@{namespace}/{name}@{row.version}: its manifest nests too deep for {PACKAGE_INFO};"
            f" read it with GET /packages/{namespace}/{name}/{row.version}",
        )
    return value


@dataclass(frozen=True)
class ManifestView:
    """What ``registry_package_info`` answers of a manifest, written (``json_text.dumps``) as
    the answer will carry it: kept parsed, a 2 MiB manifest of lists nested 8 deep was 83 MB
    of Python objects; written, 2 MiB, and the answer holding it is written in 40 ms."""

    description: str
    permissions: json_text.Encoded
    tools: json_text.Encoded

    def size(self) -> int:
        """Bytes its strings take in this process (``sys.getsizeof``)."""
        texts = (self.description, self.permissions.text, self.tools.text)
        return sum(sys.getsizeof(text) for text in texts)


_charge: ContextVar[Charge] = ContextVar("registry_mcp_charge")


@contextmanager
def charged_to(charge: Charge) -> Iterator[None]:
    """Calls made within are charged to ``charge`` (a caller's budget of costly reads):
    none is made without one (``LookupError``)."""
    token = _charge.set(charge)
    try:
        yield
    finally:
        _charge.reset(token)


def _manifest_view(namespace: str, name: str, row: Version) -> ManifestView:
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.tools import describe_tools

    # Parsed here and only written out: two deep copies of its schemas were 3.7 s of the
    # server's CPU for a 2 MiB manifest of lists nested 8 deep, per call.
    manifest = Manifest.from_dict(_shallow_manifest(namespace, name, row), owned=True)
    tools = []
    for descriptor in describe_tools(manifest, shared=True):
        tool = {key: descriptor[key] for key in _PUBLIC_TOOL_KEYS}
        if "outputSchema" in descriptor:
            tool["outputSchema"] = descriptor["outputSchema"]
        tool["annotations"] = descriptor["annotations"]
        tools.append(tool)
    return ManifestView(
        manifest.description,
        json_text.Encoded(json_text.dumps(manifest.permissions.to_json())),
        json_text.Encoded(json_text.dumps(tools)),
    )


def _skill_doc_uri(package_id: str, version: str) -> str:
    namespace, name = package_id.removeprefix("@").split("/", 1)
    return f"splice://registry/{namespace}/{name}/{version}/{SKILL_DOC}"


def _skill_document(deps: Deps, package_id: str, row: Version) -> str | None:
    """The SKILL.md of ``row``'s stored artifact as a client shows it; ``None``: it has none.
    The artifact's bytes must match the version row."""
    from splice_build.mcp.mapping import shown_document
    from splice_build.spec.archive import read_archive
    from splice_build.spec.digests import integrity_of

    data = read_artifact(deps, row)
    if integrity_of(data) != row.integrity:
        raise RegistryError(
            ErrorCode.ARTIFACT_STORAGE_FAILED,
            f"Stored artifact of {package_id}@{row.version} does not match its integrity",
        )
    document = read_archive(data).get(SKILL_DOC)
    if document is None:
        return None
    return shown_document(document.decode("utf-8", errors="replace"))


class RegistryDiscoveryBackend:
    """Search, package info and SKILL.md of one registry's store; never runs anything."""

    def __init__(self, deps: Deps) -> None:
        self._deps = deps
        self._views: KeptCache[ManifestView] = KeptCache(
            lambda document: document.build(), ManifestView.size
        )
        self._documents: KeptCache[str | None] = KeptCache(
            lambda document: document.build(), sys.getsizeof
        )

    # -- tools ------------------------------------------------------------------------

    def list_tools(self) -> Sequence[Mapping[str, Any]]:
        return TOOLS

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        if name == SEARCH:
            return ToolOutcome(ok=True, output=self._search(arguments))
        if name == PACKAGE_INFO:
            return ToolOutcome(ok=True, output=self._package_info(arguments))
        raise UnknownTool(name)

    def _search(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        query = arguments.get("query")
        limit = arguments.get("limit", DEFAULT_SEARCH_LIMIT)
        if not isinstance(query, str) or not 1 <= len(query) <= MAX_QUERY:
            raise _invalid(f"query must be a string of 1-{MAX_QUERY} characters")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise _invalid(f"limit must be an integer between 1 and {MAX_SEARCH_LIMIT}")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise _invalid(f"limit must be an integer between 1 and {MAX_SEARCH_LIMIT}")
        found = read.search(self._deps, query, limit=limit, kind=None)
        results = [
            {"name": hit["name"], "description": hit["description"], "latest": hit["latest"]}
            for hit in found["results"]
        ]
        return {"query": found["query"], "results": results}

    def _package_info(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        from splice_build.spec.names import PackageRef

        package = arguments.get("package")
        wanted = arguments.get("version")
        if not isinstance(package, str):
            raise _invalid("package must be a string")
        if wanted is not None and not isinstance(wanted, str):
            raise _invalid("version must be a string")
        ref = PackageRef.parse(f"{package}@{wanted}" if wanted else package)
        namespace, name = ref.package.namespace, ref.package.name
        summary = read.package(self._deps, namespace, name)
        shown = [entry["version"] for entry in summary["versions"]]
        versions = shown
        if summary["versionsTruncated"]:  # a range may want one of the older versions
            versions = [v.version for v in self._deps.meta.versions(summary["name"])]
        row = self._version(ref.package.id, self._resolve(ref, summary["latest"], versions))
        # The manifest never changes (migrations/0002_immutability.sql); its integrity too.
        key = (PACKAGE_INFO, summary["name"], row.version, row.integrity)
        build = partial(_manifest_view, namespace, name, row)
        view = self._views.get(Keyed(key, build, cost=len(row.manifest)), _charge.get())
        return {
            "name": summary["name"],
            "version": row.version,
            "description": view.description,
            "latest": summary["latest"],
            "versions": shown,
            "versionCount": summary["versionCount"],
            "versionsTruncated": summary["versionsTruncated"],
            "integrity": row.integrity,
            "publishedAt": row.published_at,
            "permissions": view.permissions,
            "tools": view.tools,
            "skillDoc": _skill_doc_uri(summary["name"], row.version),
        }

    @staticmethod
    def _resolve(ref: PackageRef, latest: str, versions: Sequence[str]) -> str:
        """``latest`` (no version given) is the registry's latest; a range picks the highest."""
        from splice_build.spec.semver import RangeKind, max_satisfying

        if ref.range.kind is RangeKind.LATEST:
            return latest
        best = max_satisfying(versions, ref.range)
        if best is None:
            raise RegistryError(
                ErrorCode.NOT_FOUND, f'No version of {ref.package.id} matches "{ref.range}"'
            )
        return str(best)

    def _version(self, package_id: str, version: str) -> Version:
        row = self._deps.meta.version(package_id, version)
        if row is None:
            raise RegistryError(ErrorCode.NOT_FOUND, f"Version {package_id}@{version} not found")
        return row

    # -- resources --------------------------------------------------------------------

    def list_resources(self) -> Sequence[Resource]:
        return ()  # SKILL.md documents are reached through the template

    def read_resource(self, uri: str) -> ResourceContents:
        """The SKILL.md of the stored artifact, kept by the version's identity."""
        match = _TEMPLATE_URI.match(uri)
        if match is None:
            raise UnknownResource(uri)
        namespace, name, version = match.groups()
        try:
            summary = read.package(self._deps, namespace, name)
            number = summary["latest"] if version == "latest" else version
            row = self._version(summary["name"], number)
        except (RegistryError, SpecError) as exc:
            raise UnknownResource(uri) from exc
        # The artifact never changes (migrations/0002_immutability.sql). Its cost is charged
        # by the CPU it took (at most ~0.05 s), none up front: it parses no stored text.
        key = (SKILL_DOC, summary["name"], row.version, row.integrity)
        build = partial(_skill_document, self._deps, summary["name"], row)
        document = self._documents.get(Keyed(key, build), _charge.get())
        if document is None:
            raise UnknownResource(uri)
        return ResourceContents(uri=uri, text=document)


class RegistryMcpServer(Server):
    """``Server`` with the registry's tools listed as they are and one resource template."""

    def __init__(self, backend: RegistryDiscoveryBackend, *, log: Log | None = None) -> None:
        info = ServerInfo(
            name="splice-registry",
            title="Splice Registry",
            version=f"api-{API_VERSION}",
            instructions=INSTRUCTIONS,
        )
        super().__init__(backend, info, log=log)
        self._backend_tools = backend.list_tools
        self._methods["tools/list"] = self._registry_tools
        self._methods["resources/templates/list"] = self._templates

    def _registry_tools(self, _params: dict[str, Any], session: Session) -> dict[str, Any]:
        tools = []
        for tool in self._backend_tools():
            listed = dict(tool)
            if not session.structured:
                listed.pop("outputSchema", None)  # outputSchema exists from 2025-06-18 (6.1)
            tools.append(listed)
        return {"tools": tools}

    @staticmethod
    def _templates(_params: dict[str, Any], _session: Session) -> dict[str, Any]:
        template = {
            "uriTemplate": TEMPLATE,
            "name": "Package SKILL.md",
            "description": "Documentation of a published package version (version may be 'latest').",
            "mimeType": "text/markdown",
        }
        return {"resourceTemplates": [template]}


def registry_mcp_server(deps: Deps, *, log: Log | None = None) -> RegistryMcpServer:
    return RegistryMcpServer(RegistryDiscoveryBackend(deps), log=log)
