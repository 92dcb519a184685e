"""`splice info <pkg>[@range]`: a package's metadata, the selected version, its tools."""

from __future__ import annotations

import argparse
from typing import Any

from splice_build.cli.context import CommandContext

NAME = "info"
HELP = "show a package's versions, permissions and tools"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", help="@namespace/name[@range]")


def _installed(ctx: CommandContext, package_id: str) -> str | None:
    """The locked version when the command runs inside a project that has the package."""
    from splice_build.errors import ProjectError
    from splice_build.project.lockfile import load_lockfile
    from splice_build.project.project_file import find_project_root

    try:
        lock = load_lockfile(find_project_root(ctx.cwd))
    except ProjectError:
        return None
    entry = lock.get(package_id)
    return str(entry.version) if entry is not None else None


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
    permissions = manifest.get("permissions") or {}
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
        "signature: unsigned" if not selected.get("signatures") else "signature: present",
    ]
    if data.get("installed"):
        lines.append(f"installed: {data['installed']}")
    lines.append("Permissions:")
    shown = [
        f"  {k}: {', '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in permissions.items()
        if v
    ]
    lines += shown or ["  none"]
    lines.append("Tools:")
    for tool in data.get("tools", []):
        lines.append(
            f"  {tool['name']}({_properties(tool.get('inputSchema') or {})})  {tool['description']}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.errors import ErrorCode, RegistryError
    from splice_build.project.home import SpliceHome
    from splice_build.registry.client.open import open_configured
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.names import PackageRef
    from splice_build.spec.semver import max_satisfying
    from splice_build.spec.tools import describe_tools

    ref = PackageRef.parse(args.package)
    package_id = ref.package.id
    opened = open_configured(
        flag=ctx.registry, env=ctx.env, cwd=ctx.cwd, home=SpliceHome.from_env(ctx.env)
    )
    try:
        package = opened.client.package(package_id)
        chosen = max_satisfying([v["version"] for v in package.get("versions", [])], ref.range)
        if chosen is None:
            raise RegistryError(
                ErrorCode.NO_MATCHING_VERSION,
                f"No version of {package_id} matches {ref.range}",
                details=[
                    f"available: {', '.join(v['version'] for v in package.get('versions', []))}"
                ],
            )
        selected = opened.client.version(package_id, str(chosen))
    finally:
        opened.client.close()
    tools = describe_tools(Manifest.from_dict(selected["manifest"]))
    data = {
        **package,
        "selected": selected,
        "tools": tools,
        "installed": _installed(ctx, package_id),
    }
    ctx.out.result(data, lambda: _text(data))
    return 0
