"""Importable test helpers (pre-commit's testing/ package): real binaries, real files."""
