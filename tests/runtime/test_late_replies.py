"""A capability call a tool left running answers after its execution ended: the answer is
dropped, and nothing is written to the descriptors its session had (closed, and perhaps
another file's by then)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from testing.fake_providers import skill_runtime
from testing.hostile_packages import write_package

pytestmark = pytest.mark.node

LEAVES_A_CALL = (
    "export default async (i, ctx) => { ctx.capability('web.search', { query: 'q' })"
    ".catch(() => {}); await new Promise((done) => setTimeout(done, 100)); return {}; };"
)


class Held:
    """A broker whose calls answer once ``release`` is set."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def call(self, request: Any) -> Any:
        self.started.set()
        self.release.wait()
        return {"status": "LIVE"}


def test_a_late_answer_writes_to_no_descriptor_of_its_ended_session(tmp_path: Path) -> None:
    """The answer of a call still running when its execution ended woke the session through
    the wake pipe it had closed: the byte went to whatever file had that number by then (a
    file opened after the execution here; another execution's channel to its tool, or a file
    a server writes)."""
    broker = Held()
    runtime = skill_runtime(tmp_path / "project", broker)
    package = runtime.load(
        write_package(
            tmp_path / "packages", LEAVES_A_CALL, permissions={"capabilities": ["web.search"]}
        )
    )
    try:
        assert runtime.execute(package, "t", {}).ok
        assert broker.started.wait(30)
        # The lowest free numbers, the session's among them: files a server might be writing.
        files = [os.open(tmp_path / f"f{n}", os.O_RDWR | os.O_CREAT, 0o600) for n in range(32)]
    finally:
        broker.release.set()
    for thread in [t for t in threading.enumerate() if t.name.startswith("splice-capability")]:
        thread.join()
    written = {fd: os.fstat(fd).st_size for fd in files}
    for fd in files:
        os.close(fd)
    assert set(written.values()) == {0}, written
