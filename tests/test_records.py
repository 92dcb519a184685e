"""splice_build.records behaves as ``dataclasses`` for every class shape the project can write.

Each shape (up to three fields, each with any of the field options the project uses, a
frozen or mutable class, with or without ``eq``, with or without a base record) is declared
twice, once with each decorator, and the two classes are driven alike: the same calls to
``__init__``, then repr, equality, hashing, assignment, deletion, ``fields`` and ``replace``.
Exceptions are compared by type (the messages may differ).
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from splice_build import records

# The field options the project's classes use (None: a bare annotation).
OPTIONS: list[tuple[str, dict[str, Any] | None, Any]] = [
    ("required", None, records.MISSING),
    ("plain default", None, 7),
    ("default", {"default": None}, None),
    ("factory", {"default_factory": list}, None),
    ("no init, factory", {"default_factory": dict, "init": False}, None),
    ("no init, default", {"default": 3, "init": False}, None),
    ("no compare", {"default": 1, "compare": False, "repr": False}, None),
    ("no hash", {"default": 2, "hash": False}, None),
]


def _declare(module: Any, name: str, shape: tuple[int, ...], *, frozen: bool, eq: bool, base=None):
    """One class of ``shape`` (an option index per field) made by ``module``'s decorator."""
    namespace: dict[str, Any] = {"__annotations__": {}, "__qualname__": name}
    for i, option in enumerate(shape):
        _, spec, plain = OPTIONS[option]
        namespace["__annotations__"][f"f{i}"] = "Any"
        if spec is not None:
            namespace[f"f{i}"] = module.field(**spec)
        elif plain is not records.MISSING:
            namespace[f"f{i}"] = plain
    namespace["__annotations__"]["shared"] = "ClassVar[int]"
    namespace["shared"] = 5
    cls = type(name, (base,) if base is not None else (), namespace)
    return module.dataclass(frozen=frozen, eq=eq)(cls)


def _outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as exc:  # compared by type against the other implementation
        return "raised", type(exc).__mro__[1] if type(
            exc
        ).__name__ == "FrozenInstanceError" else type(exc)


def _state(obj: Any, names: list[str]) -> tuple[Any, ...]:
    return tuple(getattr(obj, n, "<unset>") for n in names)


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((10,), {}),
    ((10, 11), {}),
    ((10, 11, 12), {}),
    ((10, 11, 12, 13), {}),
    ((), {"f0": 20}),
    ((), {"f0": 20, "f1": 21}),
    ((), {"f0": 20, "f1": 21, "f2": 22}),
    ((10,), {"f0": 20}),
    ((10,), {"f1": 21, "f2": 22}),
    ((), {"f9": 1}),
    ((10, 11, 12), {"f9": 1}),
]


def _shapes() -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = [()]
    for size in (1, 2, 3):
        shapes += list(itertools.product(range(len(OPTIONS)), repeat=size))
    return shapes


def _declared_alike(shape, frozen, eq, base_shape=None):
    """(stdlib class, records class), or the exception type both raised at declaration."""
    pair = []
    for module in (dataclasses, records):
        base = None
        if base_shape is not None:
            base = _declare(module, "Base", base_shape, frozen=frozen, eq=eq)
        pair.append(
            _outcome(
                lambda m=module, b=base: _declare(m, "Shape", shape, frozen=frozen, eq=eq, base=b)
            )
        )
    (std_kind, std), (ours_kind, ours) = pair
    assert std_kind == ours_kind, (shape, std, ours)
    if std_kind == "raised":
        assert std is ours, (shape, std, ours)
        return None
    return std, ours


@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("eq", [True, False])
def test_every_shape_behaves_as_dataclasses(frozen: bool, eq: bool) -> None:
    checked = 0
    for shape in _shapes():
        declared = _declared_alike(shape, frozen, eq)
        if declared is None:
            continue
        std_cls, our_cls = declared
        names = [f.name for f in dataclasses.fields(std_cls)]
        assert [f.name for f in records.fields(our_cls)] == names
        assert our_cls.__match_args__ == std_cls.__match_args__
        assert (our_cls.__hash__ is None) == (std_cls.__hash__ is None)
        for args, kwargs in CALLS:
            std = _outcome(std_cls, *args, **kwargs)
            ours = _outcome(our_cls, *args, **kwargs)
            assert std[0] == ours[0], (shape, args, kwargs, std, ours)
            if std[0] == "raised":
                assert std[1] is ours[1], (shape, args, kwargs)
                continue
            a, b = std[1], ours[1]
            checked += 1
            assert _state(a, names) == _state(b, names)
            assert repr(a) == repr(b)
            twin_a = std_cls(*args, **kwargs)
            twin_b = our_cls(*args, **kwargs)
            assert (a == twin_a) == (b == twin_b)
            assert (a != twin_a) == (b != twin_b)
            assert (b == object()) is False
            std_hash, our_hash = _outcome(hash, a), _outcome(hash, b)
            assert std_hash[0] == our_hash[0]
            if std_hash[0] == "ok" and eq:
                assert (hash(a) == hash(twin_a)) == (hash(b) == hash(twin_b))
            for name in [*names, "extra"]:
                assert (
                    _outcome(lambda a=a, n=name: setattr(a, n, 99))[0]
                    == _outcome(lambda b=b, n=name: setattr(b, n, 99))[0]
                )
            assert _state(a, names) == _state(b, names)
            for name in names:
                assert (
                    _outcome(lambda a=a, n=name: delattr(a, n))[0]
                    == _outcome(lambda b=b, n=name: delattr(b, n))[0]
                )
            fresh_a, fresh_b = std_cls(*args, **kwargs), our_cls(*args, **kwargs)
            change = {f.name: 55 for f in dataclasses.fields(std_cls) if f.init}
            std_replaced = _outcome(dataclasses.replace, fresh_a, **change)
            our_replaced = _outcome(records.replace, fresh_b, **change)
            assert std_replaced[0] == our_replaced[0]
            if std_replaced[0] == "ok":
                assert _state(std_replaced[1], names) == _state(our_replaced[1], names)
    assert checked > 1000  # the space was walked, not skipped


def test_inherited_fields_come_first_and_follow_the_rules() -> None:
    compared = 0
    for base_shape in [(0,), (1,), (3,), (0, 1)]:
        for shape in [(), (0,), (1,), (4,), (1, 0)]:
            declared = _declared_alike(shape, True, True, base_shape)
            if declared is None:
                continue
            std_cls, our_cls = declared
            names = [f.name for f in dataclasses.fields(std_cls)]
            assert [f.name for f in records.fields(our_cls)] == names
            for args, kwargs in CALLS:
                std = _outcome(std_cls, *args, **kwargs)
                ours = _outcome(our_cls, *args, **kwargs)
                assert std[0] == ours[0], (base_shape, shape, args, kwargs)
                if std[0] == "ok":
                    compared += 1
                    assert repr(std[1]) == repr(ours[1])
    assert compared > 20


@records.dataclass(frozen=True)
class Pickled:
    name: str
    items: list[Any] = records.field(default_factory=list)


def test_a_frozen_record_survives_pickle_and_copy() -> None:
    import copy

    value = Pickled("a", [1])
    for twin in (pickle.loads(pickle.dumps(value)), copy.deepcopy(value), copy.copy(value)):
        assert twin == value
        assert twin is not value


def test_post_init_runs_after_the_fields_are_set() -> None:
    seen: list[tuple[int, list[Any]]] = []

    @records.dataclass(frozen=True)
    class Checked:
        value: int
        items: list[Any] = records.field(default_factory=list)

        def __post_init__(self) -> None:
            seen.append((self.value, self.items))
            if self.value < 0:
                raise ValueError("negative")
            object.__setattr__(self, "value", self.value * 2)

    assert Checked(3).value == 6
    assert seen == [(3, [])]
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)
    assert records.replace(Checked(1), value=5).value == 10


def test_methods_written_in_the_body_are_kept() -> None:
    @records.dataclass(frozen=True)
    class Custom:
        x: int

        def __repr__(self) -> str:
            return "custom"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 1

    assert repr(Custom(1)) == "custom"
    assert Custom(1) == Custom(2)
    assert hash(Custom(5)) == 1


def test_frozen_refusals_are_attribute_errors_and_fields_need_a_record() -> None:
    @records.dataclass(frozen=True)
    class Point:
        x: int
        limit: ClassVar[int] = 3

    point = Point(1)
    with pytest.raises(records.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    assert issubclass(records.FrozenInstanceError, AttributeError)
    assert [f.name for f in records.fields(point)] == ["x"]
    with pytest.raises(TypeError):
        records.fields(object())
    with pytest.raises(ValueError):
        records.field(default=1, default_factory=list)


def test_declaring_a_record_compiles_nothing() -> None:
    """The reason for the module: no ``exec``/``compile`` per class, no ``inspect``."""
    import builtins
    import subprocess
    import sys

    calls: list[str] = []
    original = builtins.exec

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append("exec")
        return original(*args, **kwargs)

    builtins.exec = spy
    try:

        @records.dataclass(frozen=True)
        class Plain:
            a: int
            b: str = "x"

    finally:
        builtins.exec = original
    assert calls == []
    assert Plain(1).b == "x"
    probe = "import sys, splice_build.records; print('inspect' in sys.modules, 'dataclasses' in sys.modules)"
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert shown.stdout.split() == ["False", "False"]
