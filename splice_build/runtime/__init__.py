"""The sandbox runtime: ``SpliceRuntime``, ``LoadedPackage``, ``ToolResult``.

Names are resolved lazily so importing ``splice_build.runtime`` costs nothing until used::

    from splice_build.runtime import SpliceRuntime

    runtime = SpliceRuntime(project_root="/path/to/project")
    pkg = runtime.load("/path/to/package")
    result = runtime.execute(pkg, "hello", {"name": "Dim"})
    result.to_json()  # {"ok": True, "package": ..., "tool": "hello", "output": ..., ...}
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees of the names resolved when first used
    from splice_build.runtime.capabilities import CapabilityBroker
    from splice_build.runtime.loader import LoadedPackage
    from splice_build.runtime.result import ToolError, ToolResult
    from splice_build.runtime.runtime import SpliceRuntime

__all__ = ["CapabilityBroker", "LoadedPackage", "SpliceRuntime", "ToolError", "ToolResult"]

_WHERE = {
    "CapabilityBroker": "splice_build.runtime.capabilities",
    "LoadedPackage": "splice_build.runtime.loader",
    "SpliceRuntime": "splice_build.runtime.runtime",
    "ToolError": "splice_build.runtime.result",
    "ToolResult": "splice_build.runtime.result",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
