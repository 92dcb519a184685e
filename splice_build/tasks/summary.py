"""The outcome of a sync, per project: installed, restored, unchanged, failed (or would change).

Built from the :class:`GraphRun` of each project after the graph ran; the CLI prints it as
text or ``--json``::

    {"ok": bool, "check": bool, "root": str,
     "projects": [{"path", "status": "ok"|"changes"|"failed",
                   "installed": [{"name", "version"}], "restored": [...], "unchanged": [...],
                   "changes": [{"name", "action", "version", "reason"}], "error": {...}|null,
                   "warnings": [str]}],
     "tasks": {"executed", "upToDate", "failed"}}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice_build.errors import SpliceError
from splice_build.records import dataclass, field
from splice_build.tasks.reporter import TaskRecord

if TYPE_CHECKING:  # not imported at run time: the no-op fast path builds results too
    from splice_build.tasks.request import Change, GraphRun


@dataclass(frozen=True)
class Pinned:
    name: str
    version: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}


@dataclass(frozen=True)
class ProjectOutcome:
    path: str
    installed: tuple[Pinned, ...] = ()
    restored: tuple[Pinned, ...] = ()
    unchanged: tuple[Pinned, ...] = ()
    changes: tuple[Change, ...] = ()
    error: SpliceError | None = None
    # What the project's splice.json holds that this version does not read
    # (ProjectFile.unknown_keys): a misspelt key read as a project without packages.
    warnings: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        if self.error is not None:
            return "failed"
        return "changes" if self.changes else "ok"

    def to_json(self) -> dict[str, Any]:
        error = None
        if self.error is not None:
            error = {
                "code": str(self.error.code),
                "message": self.error.message,
                "details": list(self.error.details),
                "hint": self.error.hint,
            }
        return {
            "path": self.path,
            "status": self.status,
            "installed": [p.to_json() for p in self.installed],
            "restored": [p.to_json() for p in self.restored],
            "unchanged": [p.to_json() for p in self.unchanged],
            "changes": [c.to_json() for c in self.changes],
            "error": error,
            "warnings": list(self.warnings),
        }

    def line(self) -> str:
        """One human line: ``packages/a: 1 installed, 2 unchanged``. The path (a checkout's
        directory name) and a registry's words are each one line (security/terminal.py)."""
        from splice_build.security.terminal import one_line

        path = one_line(self.path)
        if self.error is not None:
            return f"{path}: failed: {one_line(self.error.message)} ({self.error.code})"
        if self.changes:
            # Imported only here: a no-op sync's lines never name a grant (issue #22 item 4).
            from splice_build.project.project_file import MAX_SHOWN_PROBLEMS
            from splice_build.spec.permissions import summary

            # A checkout's splice.json (up to 64 MiB) chooses how many changes there are: all
            # of them made one line of megabytes (a pre-commit hook, doit's TaskFailed);
            # ``--json`` lists every one.
            listed = ", ".join(
                f"{c.action} {c.package_id}{'@' + c.version if c.version else ''}"
                + (f" (asks for {one_line(summary(c.consent))})" if c.consent else "")
                for c in self.changes[:MAX_SHOWN_PROBLEMS]
            )
            more = len(self.changes) - MAX_SHOWN_PROBLEMS
            return f"{path}: would {listed}" + (f", and {more} more" if more > 0 else "")
        counts = [
            f"{len(items)} {word}"
            for word, items in (
                ("installed", self.installed),
                ("restored", self.restored),
                ("unchanged", self.unchanged),
            )
            if items
        ]
        return f"{path}: {', '.join(counts) or 'no packages'}"


@dataclass(frozen=True)
class SyncResult:
    root: str
    check: bool
    projects: tuple[ProjectOutcome, ...]
    tasks: TaskRecord = field(default_factory=TaskRecord)

    @property
    def ok(self) -> bool:
        return all(p.status == "ok" for p in self.projects)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "check": self.check,
            "root": self.root,
            "projects": [p.to_json() for p in self.projects],
            "tasks": self.tasks.to_json(),
        }

    def text(self) -> str:
        """The human form: a line per project, then the counts."""
        lines = [outcome.line() for outcome in self.projects]
        failed = sum(1 for p in self.projects if p.status == "failed")
        changed = sum(1 for p in self.projects if p.status == "changes")
        summary = f"{len(self.projects)} project(s): {failed} failed"
        if self.check:
            summary += f", {changed} would change"
        return "\n".join([*lines, summary])


def outcome_of(run: GraphRun) -> ProjectOutcome:
    """Sort each package of ``run`` into installed / restored / unchanged (kept intact)."""
    installed, restored, unchanged = [], [], []
    for package_id in run.ids:
        report = run.reports.get(package_id)
        kept = run.installed.get(package_id)
        if report is None:
            if kept is not None and run.error is None:
                unchanged.append(Pinned(package_id, kept.version))
            continue
        pinned = Pinned(package_id, report.version)
        if report.already_installed:
            unchanged.append(pinned)
        elif package_id in run.damaged:
            restored.append(pinned)
        else:
            installed.append(pinned)
    error = run.error if isinstance(run.error, SpliceError) else None
    return ProjectOutcome(
        run.label,
        tuple(installed),
        tuple(restored),
        tuple(unchanged),
        tuple(run.changes),
        error,
        () if run.project is None else tuple(run.project.unknown_keys()),
    )
