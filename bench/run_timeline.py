"""One cold ``splice run <pkg>.<tool>`` with a timeline: run as ``python -m bench.run_timeline
<argv…>`` in the project, it wraps the run path's steps with clocks (nothing else changes)
and prints one JSON object of milliseconds on stderr's last line. ``bench_runtime`` runs it
in fresh processes and reports the medians as the breakdown of the whole-process row."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

_T0 = time.perf_counter()
_spans: dict[str, float] = {}


def _timed(owner: Any, attribute: str, label: str) -> None:
    """Replace ``owner.attribute`` by a wrapper adding its wall time to ``label``."""
    inner: Callable[..., Any] = getattr(owner, attribute)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            _spans[label] = _spans.get(label, 0.0) + time.perf_counter() - start

    setattr(owner, attribute, wrapper)


def main(argv: list[str]) -> None:
    from splice_build.cli import main as cli_main
    from splice_build.cli.commands import run as run_cmd  # noqa: F401  (imported as main does)

    imported = time.perf_counter()
    from splice_build import sdk
    from splice_build.project import lockfile
    from splice_build.runtime import runtime, sandbox, session
    from splice_build.runtime.isolation import support

    imported_all = time.perf_counter()
    _timed(lockfile, "load_lockfile", "lock load")
    _timed(sdk, "check_installed", "from-bytes verification + grant check")
    _timed(support, "_start", "isolation probes: fork")
    _timed(runtime.SpliceRuntime, "_isolation_support", "isolation probes: wait")
    _timed(runtime, "load_package", "manifest load")
    _timed(sandbox, "start", "sandbox start (fork, namespaces, file view, seccomp, exec)")
    _timed(session.Session, "run", "Node start + host load + tool run + IPC")
    _timed(sandbox.SandboxProcess, "close", "teardown (reap, namespace exit)")
    start = time.perf_counter()
    status = cli_main.main(argv)
    end = time.perf_counter()
    spans = {k: v * 1000 for k, v in _spans.items()}
    spans["run path imports (cli, run command)"] = (imported - _T0) * 1000
    spans["run path imports (sdk, runtime, sandbox)"] = (imported_all - imported) * 1000
    spans["cli main() total"] = (end - start) * 1000
    spans["script total (first line to the result)"] = (end - _T0) * 1000
    spans["status"] = status
    sys.stderr.write("\n" + json.dumps(spans) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
