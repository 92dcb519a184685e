"""`splice demo`: the main job end to end on the embedded registry, saying what it did.

A project is created, ``@splice/example`` is added from the embedded registry (verified and
pinned in splice.lock), a tool runs in the sandbox, an installed file is tampered with and the
next call is refused before any code runs, then ``install`` restores the verified copy offline
and the call works again.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.cli import arg_types

if TYPE_CHECKING:
    from splice_build.cli.context import CommandContext
    from splice_build.sdk import Splice

NAME = "demo"
HELP = "show Splice end to end: add a skill from the embedded registry, run, tamper, restore"
NEEDS_PROJECT = False

DEMO_PACKAGE = "@splice/example"
DEMO_TOOL = "example.hello"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir", type=arg_types.path, help="project directory to use (default: a temporary one)"
    )
    parser.add_argument(
        "--name", default="Splice", help="name passed to example.hello (default: Splice)"
    )


def _call(splice: Splice, name: str) -> dict[str, Any]:
    from splice_build.errors import SpliceError

    try:
        return splice.run(DEMO_TOOL, {"name": name}).to_json()
    except SpliceError as exc:  # refused before any code ran
        return {"ok": False, "refused": True, "error": exc.to_dict()}


def _describe(result: dict[str, Any]) -> str:
    import json

    if result["ok"]:
        return f"ok in {result['durationMs']} ms → {json.dumps(result['output'])}"
    error = result["error"]
    return f"refused: {error['code']}: {error['message']}"


def _run_demo(project: Path, name: str, ctx: CommandContext) -> dict[str, Any]:
    from splice_build.project.project_file import init_project
    from splice_build.sdk import Splice

    say = ctx.out.progress
    root, created = init_project(project)
    # The embedded registry unless --registry names another: SPLICE_REGISTRY, the user config
    # or a served registry a project names would make the offline demo need a server.
    splice = Splice(
        root, registry=ctx.registry or "embedded", env=ctx.env, home=ctx.home, hints="cli"
    )
    made = "Created a project" if created else "Used the project"
    say(f"1. {made}: {root / 'splice.json'} (registry: {splice.registry_url})")

    report = splice.add([DEMO_PACKAGE])[0].to_json()
    say(
        f"2. Added {report['name']}@{report['version']}: verified {report['integrity']} "
        f"and pinned it in splice.lock"
    )

    first = _call(splice, name)
    say(
        f"3. Ran {DEMO_TOOL} in the Node sandbox (no files, network or environment): "
        f"{_describe(first)}"
    )

    installed = splice.check(DEMO_PACKAGE)
    tampered = installed.directory / "SKILL.md"
    with tampered.open("a", encoding="utf-8") as handle:
        handle.write("\nInjected by the demo.\n")
    refused = _call(splice, name)
    say(
        f"4. Appended a line to {tampered.relative_to(root)}; the next call is {_describe(refused)}"
    )

    splice.install()
    second = _call(splice, name)
    say(f"5. `splice install` restored the verified copy from the cache; {_describe(second)}")

    ok = bool(first["ok"]) and not refused["ok"] and bool(second["ok"])
    return {
        "ok": ok,
        "project": str(root),
        "package": report,
        "runs": {"first": first, "tampered": refused, "restored": second},
    }


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.cli.output import json_for_people

    if args.dir:
        from splice_build.project.directories import usable_directory

        # as init's: a file there was "in the way", hinted to be removed (`--dir /etc/passwd`)
        project = usable_directory(ctx.cwd / args.dir, "project directory")
        summary = _run_demo(project, args.name, ctx)
    else:
        with tempfile.TemporaryDirectory(prefix="splice-demo-") as tmp:
            summary = _run_demo(Path(tmp), args.name, ctx)
        # step 1 named it: say it is gone, and how to keep one to look at
        ctx.out.progress(f"Removed {tmp}: `splice demo --dir DIR` keeps the project")
    final = summary["runs"]["restored"]
    shown = final["output"] if final["ok"] else final["error"]
    ctx.out.result(summary, lambda _: json_for_people(shown))
    return 0 if summary["ok"] else 1
