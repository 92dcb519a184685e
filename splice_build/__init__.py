"""Splice for Python: install, verify and run sandboxed agent skills."""

from __future__ import annotations

__version__ = "0.1.0"
