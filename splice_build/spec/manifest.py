"""manifest.json (spec v1): validated with every problem at once, then normalized.

docs/compatibility.md#manifest. ``schemas/manifest.schema.json`` holds the structure; this module adds
what a schema cannot say: ``specVersion`` is checked first and alone (a manifest of another
spec version is not read further), tool input/output must be valid tool-schema subsets (and
input an object schema), tool names are unique, and an agent or dependency list may not name
the package itself. Permissions are checked by ``spec.permissions``, and may not reach the
project's own state (``spec.project_state``) unless ``check_project_state=False``: only a
reader that reports that rule itself (``check_installed``) turns it off.

The normalized manifest is what registries store and compare: fixed key order
(``specVersion, namespace, name, version, description, runtime, permissions, tools`` then
``license, homepage, agent, dependencies`` when present), ``runtime`` defaulted to
``{"type": "node"}``, and every ``x-*`` extension key dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass, field
from splice_build.spec import json_text
from splice_build.spec.names import PackageId, is_valid_name, is_valid_package_id
from splice_build.spec.paths import is_safe_relative_path
from splice_build.spec.permissions import Permissions
from splice_build.spec.project_state import project_state_problems
from splice_build.spec.schema_subset import MAX_ERRORS, check_schema
from splice_build.spec.semver import is_valid_range, is_valid_version
from splice_build.spec.validation import Problem, SchemaValidator, compile_schema, js_literal

SPEC_VERSION = 1
SUPPORTED_SPEC_VERSIONS = (1,)
MANIFEST_FILE = "manifest.json"
DEFAULT_TOOL_TIMEOUT_MS = 10_000


@functools.cache
def _schema() -> SchemaValidator:
    return compile_schema(
        "manifest.schema.json",
        formats={
            "semver": is_valid_version,
            "package-path": lambda path: is_safe_relative_path(path, allow_dot=False),
            "package-id": is_valid_package_id,
            "dependency-range": lambda text: text != "latest" and is_valid_range(text),
        },
    )


@dataclass(frozen=True)
class Tool:
    """One tool of a manifest. ``input``/``output`` are checked schemas: treat them as read-only."""

    name: str
    description: str
    entry: str
    input: Mapping[str, Any] = field(hash=False)
    output: Mapping[str, Any] | None = field(default=None, hash=False)
    timeout_ms: int | None = None

    @property
    def effective_timeout_ms(self) -> int:
        return self.timeout_ms if self.timeout_ms is not None else DEFAULT_TOOL_TIMEOUT_MS

    def to_json(self, *, shared: bool = False) -> dict[str, Any]:
        """Normalized key order: ``name, description, entry, input, output?, timeoutMs?``
        (``shared``: see ``Manifest.to_json``)."""
        copy = _shared if shared else json_text.copy
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "entry": self.entry,
            "input": copy(self.input),
        }
        if self.output is not None:
            out["output"] = copy(self.output)
        if self.timeout_ms is not None:
            out["timeoutMs"] = self.timeout_ms
        return out


@dataclass(frozen=True)
class Manifest:
    """A valid, normalized manifest; build it with ``from_json`` or ``from_dict``."""

    spec_version: int
    namespace: str
    name: str
    version: str
    description: str
    runtime: Mapping[str, str] = field(hash=False)
    permissions: Permissions
    tools: tuple[Tool, ...]
    license: str | None = None
    homepage: str | None = None
    agent: Mapping[str, Any] | None = field(default=None, hash=False)
    dependencies: Mapping[str, str] | None = field(default=None, hash=False)

    @classmethod
    def from_json(cls, text: str | bytes, *, check_project_state: bool = True) -> Manifest:
        """Parse manifest.json text or bytes (a UTF-8 BOM is accepted).

        Raises SpecError INVALID_MANIFEST whose details list every problem.
        """
        if isinstance(text, bytes | bytearray | memoryview):
            try:
                # Like TextDecoder: strict UTF-8, one leading BOM dropped while decoding.
                text = bytes(text).decode("utf-8").removeprefix("\ufeff")
            except UnicodeDecodeError:
                raise _invalid(["manifest.json is not valid UTF-8"]) from None
        try:
            raw = json_text.parse(text.removeprefix("\ufeff"))
        except ValueError as exc:
            raise _invalid([f"manifest.json is not valid JSON: {exc}"]) from None
        # Nothing else holds the parsed value: its schemas are kept, not copied (a copy of a
        # million-level default cost the registry about a second of CPU per publish).
        return cls._from_parsed(raw, check_project_state, owned=True)

    @classmethod
    def from_dict(
        cls, obj: object, *, check_project_state: bool = True, owned: bool = False
    ) -> Manifest:
        """Validate and normalize a parsed manifest; raises SpecError INVALID_MANIFEST.

        ``owned``: nothing else holds ``obj``, so its schemas are kept, not copied (as
        ``from_json`` keeps those it parsed)."""
        return cls._from_parsed(obj, check_project_state, owned=owned)

    @classmethod
    def _from_parsed(cls, obj: object, check_project_state: bool, *, owned: bool) -> Manifest:
        errors, permissions = _validate(obj, check_project_state)
        if errors:
            raise _invalid(errors)
        assert isinstance(obj, dict)
        return _build(obj, permissions, owned=owned)

    @property
    def id(self) -> str:
        return f"@{self.namespace}/{self.name}"

    @property
    def package_id(self) -> PackageId:
        return PackageId(self.namespace, self.name)

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def to_json(self, *, shared: bool = False) -> dict[str, Any]:
        """The normalized manifest, in the exact key order of docs/compatibility.md#manifest.

        Its tool schemas and agent are copies, unless ``shared``: then they are the manifest's
        own, for a caller that only writes the value out and changes nothing of it (a publish
        encodes it; a copy of a million-level default cost a second of CPU).
        """
        out: dict[str, Any] = {
            "specVersion": self.spec_version,
            "namespace": self.namespace,
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "runtime": dict(self.runtime),
            "permissions": self.permissions.to_json(),
            "tools": [tool.to_json(shared=shared) for tool in self.tools],
        }
        if self.license is not None:
            out["license"] = self.license
        if self.homepage is not None:
            out["homepage"] = self.homepage
        if self.agent is not None:
            out["agent"] = self.agent if shared else json_text.copy(self.agent)
        if self.dependencies is not None:
            out["dependencies"] = dict(self.dependencies)
        return out


def _invalid(errors: list[str]) -> SpecError:
    return SpecError(ErrorCode.INVALID_MANIFEST, "manifest.json is invalid", details=errors)


def _validate(raw: object, check_project_state: bool = True) -> tuple[list[str], Permissions]:
    """Every problem of ``raw`` (empty when valid) and its permissions when they are valid."""
    if not isinstance(raw, dict):
        return ["manifest: must be a JSON object"], Permissions()
    # specVersion short-circuits: the rest of a manifest of another version means nothing to us.
    if "specVersion" not in raw:
        return ["specVersion: is required"], Permissions()
    spec_version = raw["specVersion"]
    if isinstance(spec_version, bool) or spec_version not in SUPPORTED_SPEC_VERSIONS:
        supported = ", ".join(map(str, SUPPORTED_SPEC_VERSIONS))
        return [
            f"specVersion: unsupported version {js_literal(spec_version)} (supported: {supported})"
        ], Permissions()

    schema = _schema()
    problems = schema.check(raw)
    permission_errors: list[str] = []
    permissions = Permissions()
    if "permissions" in raw:
        permissions = Permissions.parse_into(raw["permissions"], permission_errors, "permissions")
        if check_project_state:
            judged = permissions
            if permission_errors:
                judged = Permissions.well_formed(raw["permissions"])
            permission_errors += project_state_problems(judged)
    problems += [Problem(("permissions",), line) for line in permission_errors]
    problems += _tool_problems(raw.get("tools"))
    problems += _self_reference_problems(raw)
    return schema.ordered(problems), permissions


def _tool_problems(tools: object) -> list[Problem]:
    """Tool-schema subsets of input/output (at most ``MAX_ERRORS`` problems listed in all),
    ``input.type == "object"``, unique names."""
    if not isinstance(tools, list):
        return []
    problems: list[Problem] = []
    names: set[str] = set()
    # Schema problems listed for the whole manifest: each tool's schemas may hold thousands,
    # each naming a long path; past the budget an invalid schema still says it is invalid.
    room = MAX_ERRORS
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            continue
        name = tool.get("name")
        if isinstance(name, str) and name:
            if name in names:
                problems.append(
                    Problem(("tools", i, "name"), f'tools[{i}].name: duplicate tool name "{name}"')
                )
            names.add(name)
        if "input" in tool:
            errors = check_schema(tool["input"], f"tools[{i}].input", limit=room)
            if not errors and tool["input"].get("type") != "object":
                errors.append(f'tools[{i}].input.type: tool input must be "object"')
            problems += [Problem(("tools", i, "input"), e) for e in errors]
            room = max(0, room - len(errors))
        if "output" in tool:
            errors = check_schema(tool["output"], f"tools[{i}].output", limit=room)
            problems += [Problem(("tools", i, "output"), e) for e in errors]
            room = max(0, room - len(errors))
    return problems


def _self_reference_problems(raw: dict[str, Any]) -> list[Problem]:
    """An agent may not list itself or a skill twice; a package may not depend on itself."""
    namespace, name = raw.get("namespace"), raw.get("name")
    self_id = f"@{namespace}/{name}" if is_valid_name(namespace) and is_valid_name(name) else None
    problems: list[Problem] = []
    agent = raw.get("agent")
    skills = agent.get("skills") if isinstance(agent, dict) else None
    if isinstance(skills, list):
        seen: set[str] = set()
        for skill in skills:
            if not is_valid_package_id(skill):
                continue
            if skill == self_id:
                problems.append(
                    Problem(
                        ("agent", "skills"), f"agent.skills: an agent cannot list itself ({skill})"
                    )
                )
            elif skill in seen:
                problems.append(
                    Problem(("agent", "skills"), f'agent.skills: duplicate package "{skill}"')
                )
            seen.add(skill)
    dependencies = raw.get("dependencies")
    if isinstance(dependencies, dict) and self_id in dependencies:
        problems.append(
            Problem(
                ("dependencies",), f"dependencies: a package cannot depend on itself ({self_id})"
            )
        )
    return problems


def _shared(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return value


def _build(raw: dict[str, Any], permissions: Permissions, *, owned: bool) -> Manifest:
    """The normalized manifest of a valid ``raw`` (``x-*`` keys dropped everywhere); its
    schemas are ``raw``'s own when ``owned`` (nothing else holds ``raw``), else copies."""
    copy = _shared if owned else json_text.copy
    runtime = {"type": "node"}
    if "minNodeVersion" in raw.get("runtime", {}):
        runtime["minNodeVersion"] = raw["runtime"]["minNodeVersion"]
    tools = tuple(
        Tool(
            name=t["name"],
            description=t["description"],
            entry=t["entry"],
            input=copy(t["input"]),
            output=copy(t["output"]) if "output" in t else None,
            timeout_ms=int(t["timeoutMs"]) if "timeoutMs" in t else None,
        )
        for t in raw.get("tools", ())
    )
    agent = None
    if "agent" in raw:
        source = raw["agent"]
        agent = {"instructions": source["instructions"], "skills": list(source["skills"])}
        if "model" in source:
            agent["model"] = source["model"]
        if "examples" in source:
            agent["examples"] = list(source["examples"])
    return Manifest(
        spec_version=SPEC_VERSION,
        namespace=raw["namespace"],
        name=raw["name"],
        version=raw["version"],
        description=raw["description"],
        runtime=runtime,
        permissions=permissions,
        tools=tools,
        license=raw.get("license"),
        homepage=raw.get("homepage"),
        agent=agent,
        dependencies=dict(raw["dependencies"]) if "dependencies" in raw else None,
    )
