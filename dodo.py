"""The project's own pipeline: `doit lint`, `doit test`, `doit bench`.

Also an example of Splice's own doit targets (docs/doit.md): `doit splice:install`,
`doit splice:verify` and `doit splice:sync` for the project in ``$SPLICE_PROJECT``. They
exist only when that variable is set: this repository holds no splice.json, and
``splice_tasks`` refuses a directory that is no project as soon as it is called.
"""

from __future__ import annotations

import os
import sys

DOIT_CONFIG = {
    "default_tasks": ["lint", "test"],
    "verbosity": 2,
    "backend": "sqlite3",
    "dep_file": ".doit.db",
}


def task_lint() -> dict:
    """ruff format --check and ruff check over the package, tests and benchmarks (as .ci/run)."""
    targets = "splice_build tests testing bench dodo.py" + (
        " fuzz" if os.path.isdir("fuzz") else ""
    )
    return {
        "actions": [f"ruff format --check {targets}", f"ruff check {targets}"],
        "verbosity": 2,
    }


def task_test() -> dict:
    """The README's test command."""
    return {"actions": [f"{sys.executable} -m pytest -q"], "verbosity": 2}


def task_bench() -> dict:
    """Every benchmark, printing ratios against baselines measured in the same run."""
    return {"actions": [f"{sys.executable} -m bench"], "verbosity": 2, "uptodate": [False]}


def task_splice():  # type: ignore[no-untyped-def]
    """Splice's doit targets; other tasks may `task_dep` on e.g. "splice:install"."""
    project = os.environ.get("SPLICE_PROJECT")
    if project:
        from splice_build.tasks import splice_tasks

        yield from splice_tasks(project)


def task_sign_official() -> dict:
    """Maintainers: re-sign the official skills with the release key in $SPLICE_OFFICIAL_KEY_FILE
    (held outside the repository; docs/signing.md#the-official-key)."""
    return {
        "actions": [f"{sys.executable} -m splice_build.registry.official_sign"],
        "verbosity": 2,
        "uptodate": [False],
    }
