"""What the longest file-grant list a manifest may hold costs the client (spec/project_state.py,
spec/outside_grants.py, spec/permissions.py ``describe``).

``@acme/deep`` asks ``fs.read`` of 1,000 entries (schemas/permissions.schema.json maxItems),
each 128 names deep (testing/manifests.py ``deep_grants``), none of them made: the real CLI adds it from a served registry (``splice registry serve``) into a fresh
project, then lists the project and runs its tool. Each row is the command's CPU time (user
+ system of the process and its children), the median of the rounds, against
``splice list`` of a project whose package asks nothing in the same rounds.
``SPLICE_BENCH_BEFORE=<older checkout>`` times each command with that checkout on
``PYTHONPATH`` too, in the same rounds, with a SPLICE_HOME of its own.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from bench.bench_sync import _wall_and_cpu
from bench.common import REPO, Row, median, precompile

NONE = {"fs": {"read": [], "write": []}, "network": [], "env": []}


def _cpu(env: dict[str, str], cwd: Path, *args: str) -> float:
    return _wall_and_cpu([sys.executable, "-m", "splice_build", *args], cwd, env)[1]


def run(quick: bool = False) -> list[Row]:
    from testing.manifests import deep_grants
    from testing.registry_fixtures import new_project, publish
    from testing.registry_server import registry_server

    precompile()
    rounds = 3 if quick else 7
    trees = {"this tree": str(REPO)}
    if os.environ.get("SPLICE_BENCH_BEFORE"):
        trees["before"] = os.environ["SPLICE_BENCH_BEFORE"]
        precompile(Path(trees["before"]))
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-grant-lists-") as tmp:
        store = Path(tmp) / "data"
        deep = {**NONE, "fs": {"read": deep_grants(), "write": []}}
        publish(store, Path(tmp) / "work", name="deep", permissions=deep)
        publish(store, Path(tmp) / "work", name="plain", permissions=NONE)
        with registry_server(store, admin=False) as server:
            for index in range(rounds):
                order = list(trees) if index % 2 == 0 else list(reversed(trees))
                for label in order:
                    base = Path(tmp) / f"{index}-{label}"
                    env = {"HOME": str(base), "SPLICE_HOME": str(base / "home")}
                    env["PYTHONPATH"] = trees[label]
                    registry = ("--registry", server.url)
                    for name in ("plain", "deep"):
                        project = new_project(base / name)
                        add = ("add", f"@acme/{name}", "--accept-permissions")
                        taken = {
                            "splice add": _cpu(env, project, *registry, *add),
                            "splice list": _cpu(env, project, "list"),
                            "cold splice run": _cpu(env, project, "run", f"{name}.hello", "name=x"),
                        }
                        for command, cpu in taken.items():
                            samples.setdefault((f"{command}, {name}", label), []).append(cpu)
    plain = median(samples["splice list, plain", "this tree"]) * 1000
    rows = []
    for command in ("splice add", "splice list", "cold splice run"):
        mine = median(samples[f"{command}, deep", "this tree"]) * 1000
        rows.append(Row(f"{command}, 1,000 deep reads", mine, "ms", "plain splice list", plain))
        if "before" in trees:
            old = median(samples[f"{command}, deep", "before"]) * 1000
            rows.append(Row(f"{command}, 1,000 deep reads: this tree", mine, "ms", "before", old))
    return rows
