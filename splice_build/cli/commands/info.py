"""`splice info <pkg>[@range]`: a package's metadata, the selected version, its tools."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from splice_build.cli import arg_types
from splice_build.cli.context import CommandContext

NAME = "info"
HELP = "show a package's versions, permissions and tools"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", type=arg_types.package_ref, help="@namespace/name[@range]")


def _project_root(ctx: CommandContext) -> Path | None:
    """The real directory of the project around the working directory, if any (fs grants
    are shown as the paths the runtime would grant there)."""
    from splice_build.errors import ProjectError
    from splice_build.project.project_file import find_project_root

    try:
        return Path(os.path.realpath(find_project_root(ctx.cwd)))
    except ProjectError:
        return None


def _installed(ctx: CommandContext, root: Path | None, package_id: str) -> dict[str, Any] | None:
    """The locked version, its grant and whether the installed copy would run, when run
    inside a project that has the package: a clone's lock names a version no install has put
    there yet, so the lock alone is no word that it is installed."""
    from splice_build.errors import ProjectError
    from splice_build.project.lockfile import Unknown, load_lockfile
    from splice_build.security.addresses import grants_connection

    if root is None:
        return None
    try:
        lock = load_lockfile(root)
    except ProjectError:
        return None
    entry = lock.get(package_id)
    if entry is None:
        return None
    grant = entry.permissions
    return {
        "version": entry.version,
        "signedBy": entry.signed_by,
        "grant": None
        if isinstance(grant, Unknown)
        else grant.describe(root, grants=grants_connection),
        **_copy_status(ctx, root, package_id),
    }


def _copy_status(ctx: CommandContext, root: Path, package_id: str) -> dict[str, Any]:
    """``splice list``'s row for the package (checked from bytes): ``status`` ``ok`` /
    ``missing`` / ``invalid``, with the refusal's ``code`` and ``hint`` when not ok."""
    from splice_build.errors import SpliceError
    from splice_build.sdk import Splice

    try:
        rows = Splice(root, registry=ctx.registry, env=ctx.env, home=ctx.home, hints="cli").list()
    except SpliceError as exc:  # the project's state or the home cannot be read
        return {"status": "invalid", "code": str(exc.code), "hint": exc.hint}
    row = next(row for row in rows if row["name"] == package_id)
    return {key: row[key] for key in ("status", "code", "hint") if key in row}


def _signature_status(selected: dict[str, Any]) -> str:
    """Checked locally, never taken from the registry's word: verified / INVALID / unsigned."""
    from splice_build.errors import SpecError
    from splice_build.spec.signing import check_signatures

    signatures = selected.get("signatures")
    try:
        outcome = check_signatures(
            signatures if isinstance(signatures, list) else [],
            package_id=str(selected.get("name")),
            version=str(selected.get("version")),
            integrity=str(selected.get("integrity")),
        )
    except SpecError as exc:
        return f"INVALID ({'; '.join(exc.details) or exc.message})"
    return f"verified {outcome.signed_by}" if outcome.signed_by else "unsigned"


def _properties(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for key, spec in props.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        parts.append(f"{key}{'' if key in required else '?'}: {kind}")
    return ", ".join(parts)


def _text(data: dict[str, Any]) -> str:
    selected = data["selected"]
    manifest = selected["manifest"]
    lines = [
        f"{data['name']}@{selected['version']}",
        f"  {data.get('description', '')}",
        f"latest: {data.get('latest')}",
        f"versions: {', '.join(v['version'] for v in data.get('versions', []))}",
        f"license: {manifest.get('license', '-')}",
        f"homepage: {manifest.get('homepage', '-')}",
        f"published: {selected.get('publishedAt')} by {selected.get('publishedBy')}",
        f"integrity: {selected['integrity']}",
        f"size: {selected['size']} bytes",
        f"signature: {data['signature']}",
    ]
    installed = data.get("installed")
    if installed and installed["status"] == "ok":
        lines.append(f"installed: {installed['version']}")
    elif installed:
        code = f", {installed['code']}" if installed.get("code") else ""
        lines.append(
            f"locked: {installed['version']} (installed copy: {installed['status']}{code})"
        )
        if installed.get("hint"):
            lines.append(f"  hint: {installed['hint']}")
    if installed and installed["grant"] is not None:
        lines.append("granted in splice.lock: " + ("; ".join(installed["grant"]) or "none"))
    lines.append("Permissions:")
    lines += [f"  {line}" for line in data["permissions"]]
    lines.append("Tools:")
    for tool in data.get("tools", []):
        lines.append(
            f"  {tool['name']}({_properties(tool.get('inputSchema') or {})})  {tool['description']}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.cli.commands.add import warn_of_unknown_keys
    from splice_build.install.resolve import (
        all_version_entries,
        no_matching_version,
        package_answer,
    )
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.answers import documented
    from splice_build.registry.client.open import open_configured
    from splice_build.security.addresses import grants_connection
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.names import PackageRef
    from splice_build.spec.semver import max_satisfying
    from splice_build.spec.tools import describe_tools

    ref = PackageRef.parse(args.package)
    package_id = ref.package.id
    root = _project_root(ctx)
    if root is not None:  # a misspelt "registy" asked another registry, silently
        warn_of_unknown_keys(ctx, root)
    opened = open_configured(
        flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=SpliceHome.from_env(ctx.env)
    )
    try:
        package = package_answer(opened.client, package_id)
        entries = package.get("versions", [])
        if package.get("versionsTruncated") is True:  # the rest are on the /versions pages
            entries = all_version_entries(opened.client, package_id)
        available = [str(v["version"]) for v in entries]
        chosen = max_satisfying(available, ref.range)
        if chosen is None:
            raise no_matching_version(package_id, str(ref.range), available, "info")
        selected = opened.client.version(package_id, str(chosen))
    finally:
        opened.client.close()
    manifest = Manifest.from_dict(selected["manifest"])
    data = {
        **documented("package", package),  # a registry's own members are not ours to print
        "selected": documented("version", selected),
        "tools": describe_tools(manifest),
        "permissions": manifest.permissions.describe(root, grants=grants_connection),
        "signature": _signature_status(selected),
        "installed": _installed(ctx, root, package_id),
    }
    ctx.out.result(data, _text)
    return 0
