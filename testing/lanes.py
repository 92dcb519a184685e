"""Run the steps of a fault walk two at a time, each lane in its own directories.

A walk (tests/faults/test_killed_walk.py, test_failed_walk.py) runs a real ``splice`` once
per step, then more ``splice`` runs to check the recovery. Each step starts from its own
fresh copy of the project and ``SPLICE_HOME``, so the steps are independent; each is bound
by its subprocesses (start-up, imports, mostly one core). Two lanes walk the same steps in
about half the wall time on a machine of two cores.

A lane is a number, ``0 .. LANES - 1``: the directories a step may use are named by its
lane (never shared by two steps at once, with a kill hook and a log of their own). Steps
are taken in order; after a failure no new step starts, the running ones end, and the
lowest failing step is raised with a note naming it: the step a serial walk would have
stopped at, since every lower step was taken before it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

LANES = 2


def each_lane(run: Callable[[int], T]) -> list[T]:
    """``run(lane)`` on every lane at once (a lane's set-up); the results by lane."""
    with ThreadPoolExecutor(LANES) as pool:
        return list(pool.map(run, range(LANES)))


def each_step(count: int, run: Callable[[int, int], T]) -> list[T]:
    """``run(step, lane)`` for every step ``1 .. count``, ``LANES`` at a time; the results
    in step order."""
    steps = iter(range(1, count + 1))
    taking = threading.Lock()
    results: dict[int, T] = {}
    failures: dict[int, BaseException] = {}

    def walk(lane: int) -> None:
        while True:
            with taking:
                step = None if failures else next(steps, None)
            if step is None:
                return
            try:
                results[step] = run(step, lane)
            except BaseException as exc:  # an assertion, pytest's fail, a timeout: all stop
                exc.add_note(f"at step {step} of {count} (lane {lane})")
                with taking:
                    failures[step] = exc
                return

    with ThreadPoolExecutor(LANES) as pool:
        list(pool.map(walk, range(LANES)))
    if failures:
        raise failures[min(failures)]
    return [results[step] for step in range(1, count + 1)]
