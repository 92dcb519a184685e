"""The sandbox runs ``host/bundle.mjs``: it is what the modules give, and the rules that
make it refuse what they do not cover (splice_build/runtime/host_bundle.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from splice_build.runtime.host_bundle import BUNDLE, ENTRY, BundleError, bundle
from splice_build.runtime.host_files import host_dir, host_entry
from splice_build.runtime.node import find_node


def test_the_bundle_is_what_the_modules_give() -> None:
    assert host_entry() == host_dir() / BUNDLE
    assert host_entry().read_text(encoding="utf-8") == bundle(host_dir()), (
        "host/bundle.mjs is stale: run `python -m splice_build.runtime.host_bundle`"
    )


def test_every_host_module_is_in_the_bundle() -> None:
    text = host_entry().read_text(encoding="utf-8")
    modules = sorted(p.name for p in host_dir().glob("*.mjs") if p.name != BUNDLE)
    assert (
        sorted(line[len("// ---- ") :] for line in text.splitlines() if line.startswith("// ---- "))
        == modules
    )
    assert text.rstrip().endswith(
        "await serveJobs(channel, runJob, (err) => hostFailure('reading the next job', err));"
    )


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


REFUSED = {
    "export let": {ENTRY: "import { n } from './a.mjs';\n", "a.mjs": "export let n = 1;\n"},
    "export var": {ENTRY: "import { n } from './a.mjs';\n", "a.mjs": "export var n = 1;\n"},
    "default import": {ENTRY: "import a from './a.mjs';\n", "a.mjs": "export const n = 1;\n"},
    "namespace import": {
        ENTRY: "import * as a from './a.mjs';\n",
        "a.mjs": "export const n = 1;\n",
    },
    "renamed import": {
        ENTRY: "import { n as m } from './a.mjs';\n",
        "a.mjs": "export const n = 1;\n",
    },
    "built-in import": {ENTRY: "import fs from 'node:fs';\n"},
    "re-export": {
        ENTRY: "import { n } from './a.mjs';\n",
        "a.mjs": "export { n } from './b.mjs';\n",
        "b.mjs": "export const n = 1;\n",
    },
    "export list": {
        ENTRY: "import { n } from './a.mjs';\n",
        "a.mjs": "const n = 1;\nexport { n };\n",
    },
    "default export": {ENTRY: "import './a.mjs';\n", "a.mjs": "export default 1;\n"},
    "destructured export": {
        ENTRY: "import { n } from './a.mjs';\n",
        "a.mjs": "export const { n } = { n: 1 };\n",
    },
    "a name not exported": {
        ENTRY: "import { m } from './a.mjs';\n",
        "a.mjs": "export const n = 1;\n",
    },
    "second name of one export": {
        ENTRY: "import { m } from './a.mjs';\n",
        "a.mjs": "export const n = 1, m = 2;\n",
    },
    "cycle": {
        ENTRY: "import './a.mjs';\n",
        "a.mjs": "import './b.mjs';\n",
        "b.mjs": "import './a.mjs';\n",
    },
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_syntax_outside_the_rules_is_refused(tmp_path: Path, case: str) -> None:
    with pytest.raises(BundleError):
        bundle(_write(tmp_path / "host", REFUSED[case]))


@pytest.mark.node
def test_modules_run_in_es_order_with_their_exports(tmp_path: Path) -> None:
    """The bundle of a small module graph prints what Node prints running the modules:
    evaluation order (each module once, imports first, in source order), shared state,
    hoisted functions, a multi-line import and the entry's top-level await."""
    files = {
        ENTRY: (
            "import './log.mjs';\n"
            "import { b } from './b.mjs';\n"
            "import {\n  a,\n  again,\n} from './a.mjs';\n"
            "process._rawDebug(['entry', a(), b, again.count].join(' '));\n"
            "await Promise.resolve();\n"
            "process._rawDebug('after await');\n"
        ),
        "log.mjs": "process._rawDebug('log');\nexport const shared = { count: 0 };\n",
        "a.mjs": (
            "import { shared } from './log.mjs';\n"
            "shared.count += 1;\n"
            "process._rawDebug('a');\n"
            "export function a() { return helper(); }\n"
            "function helper() { return 'A'; }\n"
            "export const again = shared;\n"
        ),
        "b.mjs": (
            "import { a } from './a.mjs';\nprocess._rawDebug('b');\nexport const b = a() + 'B';\n"
        ),
    }
    host = _write(tmp_path / "host", files)
    (host / BUNDLE).write_text(bundle(host), encoding="utf-8")
    node = str(find_node().path)
    outputs = [
        subprocess.run([node, str(host / name)], capture_output=True, text=True, check=True).stderr
        for name in (ENTRY, BUNDLE)
    ]
    assert outputs[0] == "log\na\nb\nentry A AB 1\nafter await\n"
    assert outputs[1] == outputs[0]
