"""Every registry answer is checked before any field of it is used (docs/registry.md#validated-answers).

A registry is a remote party, and so is one the user logged in to (an impostor answers
``whoami`` or ``POST /auth/tokens`` as well as a search): a ``versions`` list of numbers, a ``latest`` that is not among
the versions, a name that is not a package id or an answer about another package must be
refused as what it is, ``REGISTRY_ERROR`` ("the registry answered …"), and never reach the
code that formats, sorts or installs. The structure is ``schemas/registry_answers.schema.json``
(one ``$defs`` entry ``<kind>Answer`` per endpoint); the cross-field rules no schema can say are here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal

from splice_build.errors import ErrorCode, RegistryError
from splice_build.spec.limits import MAX_MANIFEST_DEPTH
from splice_build.spec.validation import SchemaValidator, load_schema

Kind = Literal[
    "search",
    "package",
    "versions",
    "version",
    "provenance",
    "namespace",
    "keys",
    # the answers to the routes that act as a user
    "key",
    "signature",
    "whoami",
    "tokens",
    "createdToken",
    "revokedToken",
    "publish",
]
MAX_DETAILS = 5
MAX_DETAIL_CHARS = 200
# The deepest answer a registry can legitimately give: a version answer holds the manifest one
# level down, and nothing else nests as deep. A deeper one is refused before it is parsed.
MAX_ANSWER_DEPTH = MAX_MANIFEST_DEPTH + 1


def _is_package_id(text: str) -> bool:
    from splice_build.errors import SpecError
    from splice_build.spec.names import PackageId

    try:
        return PackageId.parse(text).id == text
    except SpecError:
        return False


def _is_version(text: str) -> bool:
    from splice_build.errors import SpecError
    from splice_build.spec.semver import Version

    try:
        Version.parse(text)
    except SpecError:
        return False
    return True


@functools.cache
def _validator(kind: Kind) -> SchemaValidator:
    """The schema of one endpoint: its ``$defs`` entry, with the shared ``$defs`` beside it."""
    whole = load_schema("registry_answers.schema.json")
    return SchemaValidator({**whole["$defs"][f"{kind}Answer"], "$defs": whole["$defs"]}, _FORMATS)


def _integrity(text: str) -> bool:
    from splice_build.spec.digests import is_integrity

    return is_integrity(text)


def _key_id(text: str) -> bool:
    from splice_build.spec.signing import is_key_id

    return is_key_id(text)


_FORMATS = {
    "package-id": _is_package_id,
    "version": _is_version,
    "integrity": _integrity,
    "key-id": _key_id,
}


def checked(
    kind: Kind,
    answer: object,
    path: str,
    *,
    package_id: str | None = None,
    version: str | None = None,
) -> dict[str, Any]:
    """``answer`` when it is a well-formed ``kind`` answer about what was asked; otherwise
    ``REGISTRY_ERROR`` naming the endpoint and up to five problems (values cut short)."""
    validator = _validator(kind)
    problems = validator.ordered(validator.check(answer))
    if not problems and isinstance(answer, Mapping):
        problems = _cross_field(kind, answer, package_id, version)
    if problems:
        raise malformed(path, problems)
    assert isinstance(answer, dict)
    return answer


def _cross_field(
    kind: Kind, answer: Mapping[str, Any], package_id: str | None, version: str | None
) -> list[str]:
    problems = []
    if package_id is not None and answer.get("name") != package_id:
        problems.append(f"name: an answer about {answer.get('name')}, not {package_id}")
    if version is not None and answer.get("version") != version:
        problems.append(f"version: an answer about {answer.get('version')}, not {version}")
    if kind == "package":
        listed = [entry["version"] for entry in answer["versions"]]
        latest = answer.get("latest")
        if latest is not None and latest not in listed:
            problems.append(f"latest: {latest} is not among the versions")
        if len(set(listed)) != len(listed):
            problems.append("versions: a version is listed twice")
    return problems


def documented(kind: Kind, answer: Mapping[str, Any]) -> dict[str, Any]:
    """The members of a checked ``answer`` its schema names, and no others: what a command
    prints as its own result (``splice info --json``) must not carry members a registry
    added, such as ``"ok": false`` with an ``"error"``, the shape of Splice's own failures."""
    named = _validator(kind).schema.get("properties", {})
    return {key: value for key, value in answer.items() if key in named}


def malformed(path: str, problems: list[str]) -> RegistryError:
    details = [p if len(p) <= MAX_DETAIL_CHARS else p[:MAX_DETAIL_CHARS] + "…" for p in problems]
    more = len(details) - MAX_DETAILS
    details = details[:MAX_DETAILS] + ([f"and {more} more"] if more > 0 else [])
    return RegistryError(
        ErrorCode.REGISTRY_ERROR,
        f"Registry error: the registry answered {path} with a malformed document",
        details=details,
        hint="The registry may be misbehaving or incompatible; nothing was used or kept.",
    )
