"""What a type checker sees of the SDK: the package says it is typed (``py.typed``), the names
``splice_build`` and ``splice_build.runtime`` load when first used are visible to it, and each
``Splice`` method keeps its own signature through the decorator that adds the SDK's hints and
its return type after the method named ``list``."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_package_says_it_is_typed() -> None:
    # Without py.typed, mypy --strict of a program importing the installed package stopped at
    # 'Cannot find implementation or library stub for module named "splice_build"'.
    assert (REPO / "splice_build" / "py.typed").is_file()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["splice_build"]


def _type_checking_imports(module: str) -> set[str]:
    """The names ``module`` imports under ``if TYPE_CHECKING:``."""
    path = REPO / Path(*module.split(".")) / "__init__.py"
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    names |= {alias.asname or alias.name for alias in statement.names}
    return names


@pytest.mark.parametrize(
    ("module", "lazy"), [("splice_build", "_LAZY"), ("splice_build.runtime", "_WHERE")]
)
def test_every_lazily_loaded_name_is_seen_by_a_type_checker(module: str, lazy: str) -> None:
    # The lazy __getattr__ made `from splice_build import Splice` an Any to mypy: no call on it
    # was checked.
    loaded = importlib.import_module(module)
    names = set(getattr(loaded, lazy))
    assert names <= _type_checking_imports(module)
    assert names <= set(loaded.__all__) and names <= set(dir(loaded))


_USER = """\
from splice_build import Splice

splice = Splice("project")
reveal_type(splice.run("example.hello", {"name": "Ada"}))
reveal_type(splice.add(["@splice/example"]))
splice.run(1, {})
splice.add(["@splice/example"], accept_permission=True)
reveal_type(splice.outdated())
"""


def test_a_users_program_is_checked_against_the_sdks_signatures(tmp_path: Path) -> None:
    # The decorator adding the SDK's hints was typed Callable[..., T]: `splice.run(1, {})` and
    # a misspelt keyword passed mypy --strict.
    (tmp_path / "user.py").write_text(_USER, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert 'user.py:4: note: Revealed type is "splice_build.runtime.result.ToolResult"' in lines
    assert any(line.startswith('user.py:5: note: Revealed type is "list[') for line in lines)
    assert any(line.startswith("user.py:6: error: Argument 1") for line in lines), done.stdout
    assert any(line.startswith("user.py:7: error: Unexpected keyword") for line in lines)
    # The methods after Splice.list read their `list[...]` return as that method: Any.
    assert 'user.py:8: note: Revealed type is "list[dict[str, Any]]"' in lines
