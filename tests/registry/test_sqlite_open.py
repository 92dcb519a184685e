"""Several processes opening one new SQLite store at once (the first CLI calls on a fresh
home): each gets a working store, none sees SQLite's lock error."""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path

ROUNDS = 20
OPENERS = 6


def _open(path: str, start: object, answers: object) -> None:
    from splice_build.registry.db.sqlite import SqliteMetadataStore

    try:
        start.wait()  # type: ignore[attr-defined]
        store = SqliteMetadataStore(path)
        store.user_by_name("nobody")
        store.close()
        answers.put("")  # type: ignore[attr-defined]
    except BaseException:
        answers.put(traceback.format_exc())  # type: ignore[attr-defined]


def test_openers_of_a_new_store_all_succeed(tmp_path: Path) -> None:
    import splice_build.registry.db.sqlite  # noqa: F401  (imported once, before the forks)

    context = multiprocessing.get_context("fork")
    failures = []
    for round_number in range(ROUNDS):
        path = str(tmp_path / f"round{round_number}" / "registry.db")
        Path(path).parent.mkdir()
        start, answers = context.Barrier(OPENERS), context.Queue()
        openers = [
            context.Process(target=_open, args=(path, start, answers)) for _ in range(OPENERS)
        ]
        for opener in openers:
            opener.start()
        failures += [a for a in (answers.get(timeout=60) for _ in openers) if a]
        for opener in openers:
            opener.join(timeout=60)
    assert failures == [], failures[0]
