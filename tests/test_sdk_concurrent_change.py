"""A call made while another process changes the project gets the old copy or the new one.

A long-lived caller (``splice mcp``, a program holding one ``Splice``) checks a package
without the project's lock, so ``splice add`` or ``update`` of it in another process can
commit in the middle of a call. Seen with a real ``splice mcp`` and 4 clients calling while
``splice add`` flipped @acme/greeter between a version asking for nothing and one asking for
an environment variable, 40 times: 28 of 745 calls failed, none of them for a reason of the
package's: ``PERMISSIONS_NOT_GRANTED`` (the new copy committed, this machine's record of its
grant not written yet), ``INSTALLED_PACKAGE_MODIFIED`` "changed after it was loaded" (the
copy replaced between the check and the process's start) and ``TOOL_LOAD_FAILED`` "Cannot
find module" (the old copy's files removed after its process's re-check)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from splice_build.sdk import Splice

GREETER = "@acme/greeter"
ASKS_FOR_SECRET = {"env": ["SECRET"]}
TOOL = """export default function hello() {
  return { version: "%s", secret: process.env.SECRET ?? null };
}
"""


def _project(tmp_path: Path) -> Splice:
    """@acme/greeter 1.1.0 (asking for SECRET, granted) installed over 1.0.0 (asking for
    nothing); 1.0.0 is still in the embedded registry, and SECRET is set for the tools."""
    from testing.registry_fixtures import embedded_store, publish

    store = embedded_store(Path(os.environ["SPLICE_HOME"]))
    for version, permissions in (("1.0.0", None), ("1.1.0", ASKS_FOR_SECRET)):
        publish(
            store,
            tmp_path / "work",
            version=version,
            permissions=permissions,
            files={"tools/hello.js": TOOL % version},
        )
    env = {**os.environ, "SECRET": "s3cr3t"}
    splice = Splice.init(tmp_path / "project", registry="embedded", broker=False, env=env)
    splice.add([f"{GREETER}@1.0.0"])
    splice.add([f"{GREETER}@1.1.0"], accept_permissions=True)
    return splice


def _output(splice: Splice) -> Any:
    result = splice.run("greeter.hello", {"name": "x"})
    assert result.ok, result.to_json()
    return result.output


@pytest.mark.node
def test_the_grant_is_recorded_before_the_transaction_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``add`` of the wider version: when ``.splice/tmp`` goes (what a reader waits for),
    this machine's record already grants the new copy what it asks (it was written after)."""
    from splice_build.install import transaction
    from splice_build.install.consent_record import read_record

    splice = _project(tmp_path)
    splice.add([f"{GREETER}@1.0.0"])
    seen = []
    real = transaction._drop_journal

    def drop_journal(layout: Any) -> None:
        record = read_record(splice.home.path, splice.project_root)
        seen.append(None if record is None else record.grant_for(GREETER).env)
        real(layout)

    monkeypatch.setattr(transaction, "_drop_journal", drop_journal)
    splice.add([f"{GREETER}@1.1.0"], accept_permissions=True)
    assert seen == [("SECRET",)]


@pytest.mark.node
def test_a_call_checking_the_new_copy_before_its_grant_is_recorded_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call's check begins, then another process commits the wider copy: it holds the
    project's lock, ``.splice/tmp`` is there and its grant is not recorded yet. The call
    waits for that change to end and runs the new copy under the grant recorded (it was
    PERMISSIONS_NOT_GRANTED at once, hint ``splice install``)."""
    from splice_build.install.consent_record import record_path, write_record
    from splice_build.install.transaction import project_lock
    from splice_build.spec.permissions import Permissions

    splice = _project(tmp_path)
    record = record_path(splice.home.path, splice.project_root)
    granted = record.read_bytes()
    committed, release = threading.Event(), threading.Event()

    def writer() -> None:
        with project_lock(splice.layout):
            splice.layout.tmp_dir.mkdir()
            write_record(
                splice.home.path, splice.project_root, {GREETER: Permissions.from_json({})}, {}
            )
            committed.set()
            release.wait(10)
            record.write_bytes(granted)
            splice.layout.tmp_dir.rmdir()

    thread = threading.Thread(target=writer)
    real = Splice._recovered

    def recovered_then_commit(self: Splice) -> None:
        real(self)
        if not thread.is_alive() and not committed.is_set():
            thread.start()
            committed.wait(10)
            threading.Timer(0.2, release.set).start()

    monkeypatch.setattr(Splice, "_recovered", recovered_then_commit)
    try:
        assert _output(splice) == {"version": "1.1.0", "secret": "s3cr3t"}
    finally:
        release.set()
        thread.join()
    assert committed.is_set(), "the other process's change never happened"


@pytest.mark.node
def test_a_call_whose_copy_is_replaced_after_its_check_runs_the_new_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``splice add`` of the version asking for less commits between the call's check and
    its process's start: the call runs the new copy under the new grant (it was
    INSTALLED_PACKAGE_MODIFIED, hint "load the package again")."""
    splice = _project(tmp_path)
    other = Splice(splice.project_root, registry="embedded")
    real = Splice.resolve_tool
    changed: list[str] = []

    def resolve_then_change(self: Splice, ref: str) -> Any:
        found = real(self, ref)
        if not changed:
            changed.append(other.add([f"{GREETER}@1.0.0"])[0].version)
        return found

    monkeypatch.setattr(Splice, "resolve_tool", resolve_then_change)
    assert _output(splice) == {"version": "1.0.0", "secret": None}
    assert changed == ["1.0.0"]
