"""A silent doit reporter that records which tasks executed, were up to date or failed.

The counts are part of every graph result (``tasks: {executed, upToDate, failed}``), which is
how incrementality is tested: by counting tasks, not by timing them.
"""

from __future__ import annotations

from typing import Any

from splice_build.records import dataclass, field

# doit refuses a task name holding "=" and reads a task_dep holding "*" as a pattern (which
# may then not even match its own task): each is written as its escape. A workspace label
# already writes a backslash as two (project/workspace.py), so a name stays unique.
_NOT_IN_TASK_NAMES = str.maketrans({"=": "\\x3d", "*": "\\x2a"})


def task_name(step: str, label: str) -> str:
    """A project's task: ``lock:<label>``, or plain ``lock`` for ``splice install``'s one."""
    return f"{step}:{label.translate(_NOT_IN_TASK_NAMES)}" if label else step


@dataclass
class TaskRecord:
    executed: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, list[str]]:
        return {
            "executed": list(self.executed),
            "upToDate": list(self.up_to_date),
            "failed": list(self.failed),
        }


def reporter_class(record: TaskRecord) -> type:
    """A reporter class (doit instantiates it) writing into ``record`` and nowhere else."""

    class RecordingReporter:
        def __init__(self, outstream: Any, options: Any) -> None:
            self.record = record

        def initialize(self, tasks: Any, selected_tasks: Any) -> None:
            return None

        def get_status(self, task: Any) -> None:
            return None

        def execute_task(self, task: Any) -> None:
            self.record.executed.append(task.name)

        def add_failure(self, task: Any, fail: Any) -> None:
            self.record.failed.append(task.name)

        def add_success(self, task: Any) -> None:
            return None

        def skip_uptodate(self, task: Any) -> None:
            self.record.up_to_date.append(task.name)

        def skip_ignore(self, task: Any) -> None:
            return None

        def cleanup_error(self, exception: Any) -> None:
            return None

        def runtime_error(self, msg: str) -> None:
            self.record.failed.append(f"<runtime: {msg}>")

        def teardown_task(self, task: Any) -> None:
            return None

        def complete_run(self) -> None:
            return None

    return RecordingReporter
