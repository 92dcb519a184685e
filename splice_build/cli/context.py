"""What every command receives: parsed global options, paths and the output sink."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from splice_build.cli.output import Output
from splice_build.records import dataclass


@dataclass(frozen=True)
class CommandContext:
    json: bool
    color: bool
    verbose: bool
    registry: str | None
    cwd: Path
    env: Mapping[str, str]
    home: Path
    interactive: bool
    out: Output
    project_root: Path | None = None
