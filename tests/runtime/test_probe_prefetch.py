"""`splice run` starts the machine probes (isolation support, the loader's listing of Node's
files) before it verifies the package from bytes (docs/runtime.md#where-the-time-goes): what
the sandbox set-up then collects must be exactly what it would have asked for itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

_ASK = """
import sys
from splice_build.runtime.isolation import fileview, support
from splice_build.runtime.node import find_node

node = find_node().path
if sys.argv[1] == "prefetched":
    support.prefetch()
    fileview.prefetch_node_files(node)
    support.prefetch()  # a second call starts nothing more
    fileview.prefetch_node_files(node)
print(repr(support.detect()))
print(repr(fileview.node_files(node)))
print(len(fileview._listing))
"""


def _answers(mode: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _ASK, mode], capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


@pytest.mark.node
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probes are Linux's")
def test_prefetched_probes_give_the_answers_asked_directly() -> None:
    direct = _answers("direct")
    prefetched = _answers("prefetched")
    assert prefetched == direct
    assert prefetched[-1] == "0"  # the started listing was collected, not left behind
    assert "namespaces=" in prefetched[0]


def test_detect_after_detect_starts_no_probe() -> None:
    from splice_build.runtime.isolation import support

    found = support.detect()
    support.prefetch()  # already known: nothing is forked
    assert support._started is None
    assert support.detect() is found
