"""The opt-in reuse policy: when a sandbox process that served a call may serve the next one.

Given as ``splice.json`` ``"reuse"`` (``true`` for the defaults, or an object of limits), by
``splice mcp --reuse`` or by ``Splice(reuse=…)``; the runtime enforces it (runtime/reuse.py,
docs/runtime.md#opt-in-reuse)::

    "reuse": {"maxCalls": 100, "idleSeconds": 30, "maxMemoryMb": 192}
"""

from __future__ import annotations

from typing import Any

from splice_build.errors import UsageError
from splice_build.records import dataclass

# (JSON key, attribute, smallest, largest, integer only)
_LIMITS = (
    ("maxCalls", "max_calls", 1, 100_000, True),
    ("idleSeconds", "idle_seconds", 0.1, 3600, False),
    ("maxMemoryMb", "max_memory_mb", 64, 2048, True),
)


@dataclass(frozen=True)
class ReusePolicy:
    """A process is recycled after ``max_calls`` calls, ``idle_seconds`` without one, or once
    its resident memory exceeds ``max_memory_mb`` after a call (and after any failure)."""

    max_calls: int = 100
    idle_seconds: float = 30.0
    max_memory_mb: int = 192
    # Reused processes kept waiting at once, all packages together.
    max_idle: int = 4
    # CPU seconds a process may have used and still be kept (None: the sandbox's CPU limit
    # minus the longest call, runtime/reuse.py). The kernel's CPU limit counts a process's
    # whole life, so a process kept past it could be killed inside a call within its limits.
    max_cpu_seconds: float | None = None

    def __post_init__(self) -> None:
        """A policy of values outside the limits (or of another type) is ``USAGE``, as every
        wrong SDK argument is (README.md): a ``ValueError`` or ``TypeError`` had no code."""
        problems = policy_problems({key: getattr(self, attr) for key, attr, *_ in _LIMITS})
        idle = self.max_idle
        if isinstance(idle, bool) or not isinstance(idle, int) or idle < 1:
            problems.append("max_idle must be an integer of at least 1")
        cpu = self.max_cpu_seconds
        if cpu is not None and (
            isinstance(cpu, bool) or not isinstance(cpu, (int, float)) or not cpu > 0
        ):
            problems.append("max_cpu_seconds must be a number more than 0")
        if problems:
            raise UsageError(f"Invalid ReusePolicy: {problems[0]}", details=problems[1:])

    @classmethod
    def from_json(cls, value: Any) -> ReusePolicy | None:
        """The policy of a valid ``"reuse"`` value (None: reuse is off)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        return cls(**{attr: value[key] for key, attr, *_ in _LIMITS if key in value})


def policy_problems(value: Any, where: str = "reuse") -> list[str]:
    """What is wrong with a ``"reuse"`` value (empty when it is valid)."""
    if isinstance(value, bool):
        return []
    if not isinstance(value, dict):
        return [f"{where}: must be true, false or an object of limits"]
    known = [key for key, *_ in _LIMITS]
    unknown = [key for key in value if key not in known]
    problems = [
        f"{where}.{key}: unknown limit{_guess(key, known) if i < 20 else ''}"
        for i, key in enumerate(unknown)
    ]
    for key, _attr, low, high, integer in _LIMITS:
        if key not in value:
            continue
        number = value[key]
        kind = int if integer else (int, float)
        if isinstance(number, bool) or not isinstance(number, kind) or not low <= number <= high:
            what = "an integer" if integer else "a number"
            problems.append(f"{where}.{key}: must be {what} from {low} to {high}")
    return problems


def _guess(key: str, known: list[str]) -> str:
    """`` (did you mean "maxCalls"?)`` for a mistyped limit, compared cut at 100 characters:
    the file chooses the key, and only the first 20 are compared (as splice.json's unknown
    top-level keys are, project/project_file.py)."""
    import json

    from splice_build.spec.names import guessed

    return guessed(key[:100], known, json.dumps)
