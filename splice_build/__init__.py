"""Splice for Python: install, verify and run sandboxed agent skills.

``from splice_build import Splice`` is the SDK (splice_build/sdk.py), ``SpliceError`` and
``ErrorCode`` what its failures are (splice_build/errors.py): loaded when first named, so
that importing the package (every command does) loads neither."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees of the names loaded when first named
    from splice_build.errors import ErrorCode, SpliceError
    from splice_build.sdk import Splice

__all__ = ["ErrorCode", "Splice", "SpliceError", "__version__"]
__version__ = "0.1.0"

_LAZY = {
    "Splice": "splice_build.sdk",
    "SpliceError": "splice_build.errors",
    "ErrorCode": "splice_build.errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'splice_build' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
