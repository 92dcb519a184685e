"""Whether a set of files is a valid package (docs/compatibility.md#package-format).

A package is judged from its files alone, however they arrived (a directory being packed,
an archive being read, an installed copy): a valid manifest.json, a valid SKILL.md, an
existing file for every tool entry, safe paths that one file system can hold side by side
(``entry_rules.PathClaims``), no hidden files or ``node_modules``, and the size and count
limits. Every problem is reported, each naming its file.
"""

from __future__ import annotations

from collections.abc import Mapping

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.entry_rules import PathClaims
from splice_build.spec.limits import MAX_FILE_BYTES, MAX_FILES, MAX_SKILL_MD_BYTES
from splice_build.spec.manifest import MANIFEST_FILE, Manifest
from splice_build.spec.paths import (
    MAX_SEGMENT_BYTES,
    is_safe_relative_path,
    long_segment,
    utf16_sort_key,
)
from splice_build.spec.validation import is_blank

SKILL_FILE = "SKILL.md"


def validate_skill_md(data: bytes) -> list[str]:
    """Why SKILL.md is not acceptable: too big, not UTF-8, has NUL bytes, or is blank."""
    if len(data) > MAX_SKILL_MD_BYTES:
        return [f"{SKILL_FILE} exceeds {MAX_SKILL_MD_BYTES} bytes"]
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return [f"{SKILL_FILE} is not valid UTF-8"]
    if "\0" in text:
        return [f"{SKILL_FILE} must be text (contains NUL bytes)"]
    if is_blank(text):
        return [f"{SKILL_FILE} is empty"]
    return []


def validate_package_files(
    files: Mapping[str, bytes], *, directory: str | None = None, command: str = "pack"
) -> Manifest:
    """The package's manifest, when ``files`` (package-relative path → bytes) form a valid package.

    Raises SpecError INVALID_PACKAGE with one detail per problem. ``directory``: where the
    files were collected, named in the hint when it holds no ``manifest.json`` (``splice
    publish`` run in the project rather than in the package), with ``command`` as the
    ``splice`` command that names the package's directory.
    """
    problems: list[str] = []
    manifest = _manifest(files, problems)
    if len(files) > MAX_FILES:
        problems.append(f"package has {len(files)} files (max {MAX_FILES})")
    problems += _path_problems(files)
    if SKILL_FILE in files:
        problems += validate_skill_md(files[SKILL_FILE])
    else:
        problems.append(f"{SKILL_FILE} is missing")
    if manifest is not None:
        problems += [
            f'tool "{tool.name}": entry file "{tool.entry}" is missing'
            for tool in manifest.tools
            if tool.entry not in files
        ]
    if problems:
        hint = None
        if directory is not None and MANIFEST_FILE not in files:
            hint = no_manifest_hint(directory, command)
        raise SpecError(
            ErrorCode.INVALID_PACKAGE, "Package is invalid", details=problems, hint=hint
        )
    assert manifest is not None
    return manifest


def no_manifest_hint(directory: str, command: str) -> str:
    """The hint for a directory that holds no ``manifest.json``: most often the project, or
    the directory above the package, where ``splice <command>`` was run without naming the
    package (the hint of ``splice validate`` told it to ``splice pack``)."""
    return (
        f"{directory} holds no {MANIFEST_FILE}: run the command in the package's "
        f"directory, or name it (`splice {command} ./my-skill`)"
    )


def no_manifest(directory: str, command: str) -> SpecError:
    """``INVALID_PACKAGE`` for a directory with no ``manifest.json`` at its top
    (``spec/pack.collect_package``)."""
    return SpecError(
        ErrorCode.INVALID_PACKAGE,
        "Package is invalid",
        details=[f"{MANIFEST_FILE} is missing"],
        hint=no_manifest_hint(directory, command),
    )


def _manifest(files: Mapping[str, bytes], problems: list[str]) -> Manifest | None:
    if MANIFEST_FILE not in files:
        problems.append(f"{MANIFEST_FILE} is missing")
        return None
    try:
        return Manifest.from_json(bytes(files[MANIFEST_FILE]))
    except SpecError as exc:
        # Field problems get the file name; file-level ones ("manifest.json is not valid
        # JSON", "manifest: must be a JSON object") already say it.
        problems += [
            d if d.startswith("manifest") else f"{MANIFEST_FILE}: {d}" for d in exc.details
        ]
        return None


def _path_problems(files: Mapping[str, bytes]) -> list[str]:
    """Unsafe, hidden, ``node_modules``, oversized and clashing paths (``PathClaims``), in path
    order."""
    problems: list[str] = []
    claims = PathClaims()  # paths one file system could not hold side by side
    for path in sorted(files, key=utf16_sort_key):
        if not is_safe_relative_path(path, allow_dot=False):
            problems.append(f'unsafe file path "{path}"')
            continue
        if long_segment(path) is not None:
            problems.append(f'file "{path}" has a name longer than {MAX_SEGMENT_BYTES} bytes')
            continue
        if any(segment.startswith(".") or segment == "node_modules" for segment in path.split("/")):
            problems.append(
                f'disallowed file "{path}": hidden files and node_modules are not allowed in packages'
            )
        if len(files[path]) > MAX_FILE_BYTES:
            problems.append(f'file "{path}" exceeds {MAX_FILE_BYTES} bytes')
        clash = claims.claim(path)
        if clash is not None:
            problems.append(f'{clash.title.lower()} "{path}": {clash.reason}')
    return problems
