"""Calling code that must refuse a FIFO, never wait on it, without hanging the test run.

``returns_without_waiting(call, fifo)`` runs ``call`` in a thread. Should it still be blocked
after ``seconds`` (a plain ``open`` or ``read`` of the FIFO waits for a writer forever), the
FIFO is opened for writing and closed, which hands its reader the end of the file, and the
test fails: the code waited.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def returns_without_waiting(call: Callable[[], T], fifo: Path, seconds: float = 10) -> T:
    """What ``call()`` returns (or raises), provided it did not wait on ``fifo``."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # re-raised in the test's thread
            outcome.append((False, exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # a reader waits: this opens
        worker.join(seconds)
        pytest.fail(f"waited on the FIFO {fifo}")
    [(returned, value)] = outcome
    if not returned:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]
