"""`splice demo`: the main job end to end on the bundled example skill, saying what it did."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from splice_build.cli.context import CommandContext

NAME = "demo"
HELP = "show Splice end to end: a project, the example skill, a sandboxed call"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", help="project directory to use (default: a temporary one)")
    parser.add_argument("--name", default="Splice", help="name passed to example.hello")


def _example_dir() -> Path:
    from splice_build.skills import official_skill_dirs

    return next(d for d in official_skill_dirs() if d.name == "example")


def _run_demo(project: Path, name: str, ctx: CommandContext) -> dict[str, object]:
    from splice_build.project.project_file import init_project
    from splice_build.runtime import SpliceRuntime
    from splice_build.spec.pack import pack_directory

    steps: list[dict[str, object]] = []
    root, _ = init_project(project)
    ctx.out.progress(f"1. Created a project: {root / 'splice.json'}")
    steps.append({"step": "init", "project": str(root)})

    packed = pack_directory(_example_dir())
    ctx.out.progress(
        f"2. Packed and validated {packed.manifest.id}@{packed.manifest.version}: "
        f"{len(packed.files)} files, {packed.size} bytes, {packed.integrity}"
    )
    steps.append({"step": "pack", "package": packed.manifest.id, "integrity": packed.integrity})

    runtime = SpliceRuntime(project_root=root, env={})
    package = runtime.load(_example_dir())
    result = runtime.execute(package, "hello", {"name": name}).to_json()
    status = "ok" if result["ok"] else f"failed: {result['error']['code']}"
    ctx.out.progress(
        f"3. Ran example.hello in the Node sandbox (no files, network or environment): "
        f"{status} in {result['durationMs']} ms"
    )
    steps.append({"step": "run", "result": result})
    return {"ok": bool(result["ok"]), "project": str(root), "steps": steps}


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.dir:
        summary = _run_demo(ctx.cwd / args.dir, args.name, ctx)
    else:
        with tempfile.TemporaryDirectory(prefix="splice-demo-") as tmp:
            summary = _run_demo(Path(tmp), args.name, ctx)
    run_step = summary["steps"][-1]["result"]  # type: ignore[index]
    output = run_step.get("output") if run_step["ok"] else run_step["error"]
    ctx.out.result(summary, lambda: _text(output))
    return 0 if summary["ok"] else 1


def _text(output: object) -> str:
    import json

    return json.dumps(output, indent=2, ensure_ascii=False)
