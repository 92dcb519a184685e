"""The Python API's checks of a caller's arguments (``Splice`` in sdk.py, ``splice_tasks`` in
tasks/pipeline.py), made before anything is read or written.

A program embedding Splice can pass anything: ``None``, bytes, a ``Path``, a generator, an
object whose ``__fspath__`` answers a number. Each of their arguments that is not parsed by
a spec parser (names, refs and ranges raise their own codes) is checked here, so a wrong
type or shape is a ``USAGE`` error naming the argument, never a ``TypeError`` from deep
inside a command or a path that silently means another directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from splice_build.errors import ErrorCode, ProjectError, UsageError


def kind(value: object) -> str:
    """How a refused value is named in a message: its type only, so a caller's hostile
    ``__str__``/``__repr__`` never runs and a huge value is never copied into an error."""
    return type(value).__name__


def path_arg(value: object, what: str) -> Path:
    """``value`` (a ``str`` or an ``os.PathLike`` giving one) as a ``Path``.

    Bytes are refused (a project path is text, as in ``splice.json``), and so is a NUL:
    ``Path`` would accept it, every lookup of it would fail, and the walk up to a project
    would silently open a parent directory's project instead.
    """
    try:
        text = os.fspath(value)  # type: ignore[call-overload]
    except TypeError:
        raise UsageError(f"{what} must be a path (str or os.PathLike), not {kind(value)}") from None
    if not isinstance(text, str):
        raise UsageError(f"{what} must be a text path, not {kind(text)}")
    if "\0" in text:
        raise UsageError(f"{what} contains a NUL character")
    if not encodable(text):
        raise UsageError(f"{what} holds a character no file name can carry (a lone surrogate)")
    return Path(str.__str__(text))


def encodable(text: str) -> bool:
    """Whether ``text`` can be given to the operating system, as a file name or in the
    environment: a lone surrogate other than those standing for an undecodable byte (the
    ones ``os.fsdecode`` makes) cannot, and every ``open``/``stat``/``exec`` of it raised a
    bare ``UnicodeEncodeError`` out of the SDK."""
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return True


def absolute_arg(value: object, what: str) -> Path:
    """``path_arg``'s path made absolute now, against the working directory as it is.

    A host may remove its working directory (a temporary directory cleaned up, a release
    directory replaced): ``os.path.abspath`` of a relative path then raised a bare
    ``FileNotFoundError`` out of ``Splice(...)`` and ``Splice.init``."""
    path = path_arg(value, what)
    if path.is_absolute():
        return Path(os.path.normpath(path))
    try:
        return Path(os.path.abspath(path))
    except FileNotFoundError:
        raise UsageError(
            f"{what} is a relative path, and this program's working directory no longer exists",
            hint="pass an absolute path, or change to an existing directory first",
        ) from None


def working_directory() -> Path:
    """The working directory; ``NOT_A_PROJECT`` when it was removed (no project is there)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise ProjectError(
            ErrorCode.NOT_A_PROJECT,
            "this program's working directory no longer exists: no project can be found from it",
            hint="pass the project's path, or change to an existing directory first",
        ) from None


def names_arg(values: object, what: str) -> list[object]:
    """The items of ``values``, a list (or any iterable) of names; a single string is refused
    rather than read as a list of one-character names."""
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
        raise UsageError(f"{what} must be a list of package names, not {kind(values)}")
    return list(values)


_Parsed = TypeVar("_Parsed")


def named(parse: Callable[[str], _Parsed], text: str) -> _Parsed:
    """``parse(text)`` (``PackageId.parse``, ``PackageRef.parse``); an ``INVALID_NAME`` for
    ``files`` or ``splice/files`` (the name as ``splice search`` lists it, less its ``@`` or
    namespace) gets the hint of the whole name: the message's example alone left a user
    guessing the namespace. So does ``@Splice/Files``, whose hint is the name in lower case
    (names are lower case only; the message said which letters, not which name). The CLI's
    parser (cli/arg_types.py) and the SDK's calls alike."""
    from splice_build.errors import SpecError

    try:
        return parse(text)
    except SpecError as exc:
        hint = None
        if exc.code is ErrorCode.INVALID_NAME and not exc.hint and isinstance(text, str):
            hint = _whole_name_hint(text)
        if hint is None:
            raise
        raise SpecError(exc.code, exc.message, details=exc.details, hint=hint) from None


def _whole_name_hint(text: str) -> str | None:
    """The hint of ``named`` for ``text``, a name that is not a package id; None when it is
    no near miss of one."""
    from splice_build.spec.names import is_valid_name

    name = text.removeprefix("@").partition("@")[0]  # what follows is the range, not echoed
    parts = name.lower().split("/")
    if len(parts) == 2 and all(is_valid_name(part) for part in parts):
        return f"Did you mean @{'/'.join(parts)}?"
    if len(parts) == 1 and is_valid_name(name):  # ``files`` or ``@files``
        return f"Names are @namespace/name: `splice search {name}` finds it."
    return None


def env_arg(value: object) -> dict[str, str]:
    """A copy of ``env``: a mapping of ``str`` to ``str`` (the environment of ``os.environ``)."""
    if not isinstance(value, Mapping):
        raise UsageError(f"env must be a mapping of str to str, not {kind(value)}")
    copy = dict(value)
    for key, item in copy.items():
        if not (isinstance(key, str) and isinstance(item, str)):
            raise UsageError(
                f"env must map str to str, not {kind(key)} to {kind(item)}",
            )
        if "\0" in key or "\0" in item or "=" in key or not (encodable(key) and encodable(item)):
            raise UsageError("env holds a name or value an environment cannot carry")
    return {str.__str__(k): str.__str__(v) for k, v in copy.items()}
