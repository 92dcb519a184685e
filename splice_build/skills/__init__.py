"""The official skill packages shipped in the wheel (each subdirectory with a manifest.json)."""

from __future__ import annotations

from pathlib import Path


def skills_root() -> Path:
    return Path(__file__).resolve().parent


def official_skill_dirs() -> list[Path]:
    """Package directories of the official skills, sorted by directory name."""
    return sorted(p for p in skills_root().iterdir() if (p / "manifest.json").is_file())
