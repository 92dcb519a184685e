"""Value classes declared as with ``dataclasses``, made without compiling code at import.

The standard ``dataclasses`` module costs a cold command about 8 ms to import (it imports
``inspect``, which imports ``ast``, ``dis`` and ``tokenize``) and about 0.4 ms for each frozen
class it makes, because it writes every generated method as source text and compiles it with
``exec``. A cold ``splice run`` defines some fifty such classes and a no-op ``splice sync``
fifteen, which made the decorator one of the largest costs of the commands that must stay
light (docs/runtime.md, "Where the time goes"). This module gives the subset of the API the
project uses, with the same behaviour, built from closures instead:

- ``@dataclass`` and ``@dataclass(frozen=True, eq=True)``: ``__init__`` (positional and
  keyword arguments, defaults, ``field(default_factory=...)``, ``init=False`` fields,
  ``__post_init__``), ``__repr__``, ``__eq__`` and ``__hash__`` by the dataclass rules
  (frozen and comparable: hashed by the compared fields; mutable and comparable: unhashable;
  ``eq=False``: identity), and, when frozen, assignment and deletion refused with
  ``FrozenInstanceError``. Methods written in the class body are kept. Fields are inherited
  from base classes made by this decorator; ``ClassVar`` annotations are not fields.
- ``field``, ``fields``, ``replace``.

tests/test_records.py checks each behaviour against ``dataclasses`` itself.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

__all__ = ["MISSING", "Field", "FrozenInstanceError", "dataclass", "field", "fields", "replace"]

_T = TypeVar("_T")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
# Where a class keeps its fields (name → Field, inherited ones first).
_FIELDS = "__record_fields__"


class FrozenInstanceError(AttributeError):
    """An assignment to, or deletion of, a field of a frozen instance."""


class Field:
    """One declared field: its name and what ``field(...)`` said about it."""

    __slots__ = ("compare", "default", "default_factory", "hash", "init", "name", "repr")

    def __init__(
        self,
        default: Any,
        default_factory: Any,
        init: bool,
        repr: bool,
        hash: bool | None,
        compare: bool,
    ) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, init={self.init})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
) -> Any:
    """Options of one field, as ``dataclasses.field`` takes them."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, hash, compare)


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(*, frozen: bool = False, eq: bool = True) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field, Field))
def dataclass(
    cls: type[_T] | None = None, /, *, frozen: bool = False, eq: bool = True
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """Add the methods of a dataclass to ``cls`` (see the module's docstring)."""

    def wrap(cls: type[_T]) -> type[_T]:
        return _process(cls, frozen=frozen, eq=eq)

    return wrap if cls is None else wrap(cls)


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in declaration order."""
    try:
        return tuple(getattr(class_or_instance, _FIELDS).values())
    except AttributeError:
        raise TypeError("must be called with a dataclass type or instance") from None


def replace(obj: _T, /, **changes: Any) -> _T:
    """A new instance of ``obj``'s class with ``changes`` applied (``__post_init__`` runs)."""
    for f in getattr(obj, _FIELDS).values():
        if not f.init:
            if f.name in changes:
                raise ValueError(
                    f"field {f.name} is declared with init=False, it cannot be specified"
                )
            continue
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def _is_class_var(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return getattr(annotation, "__origin__", annotation) is ClassVar


def _own_fields(cls: type) -> list[Field]:
    """The fields the class body declares. As with ``dataclasses``, a default is whatever the
    class attribute of that name is (an inherited one too), and a ``field(...)`` object in
    the class body is replaced by its default (or removed when it has none)."""
    out = []
    # The class's own annotations (not its bases'), as Python 3.10+ gives them.
    for name, annotation in cls.__annotations__.items():
        if _is_class_var(annotation):
            continue
        value = getattr(cls, name, MISSING)
        f = value if isinstance(value, Field) else Field(value, MISSING, True, True, None, True)
        f.name = name
        if f.default is not MISSING and f.default.__class__.__hash__ is None:
            raise ValueError(
                f"mutable default {type(f.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        if isinstance(value, Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out.append(f)
    return out


def _process(cls: type[_T], *, frozen: bool, eq: bool) -> type[_T]:
    all_fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        all_fields.update(base.__dict__.get(_FIELDS, {}))
    for f in _own_fields(cls):
        all_fields[f.name] = f
    setattr(cls, _FIELDS, all_fields)
    chosen = tuple(all_fields.values())
    _add(cls, "__init__", _make_init(cls, chosen))
    _add(cls, "__repr__", _make_repr(tuple(f.name for f in chosen if f.repr)))
    compared = tuple(f.name for f in chosen if f.compare)
    if eq:
        _add(cls, "__eq__", _make_eq(compared))
    explicit_hash = "__hash__" in cls.__dict__ and not (
        cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__
    )
    if eq and not explicit_hash:
        if frozen:
            hashed = tuple(f.name for f in chosen if (f.compare if f.hash is None else f.hash))
            cls.__hash__ = _make_hash(hashed)  # type: ignore[method-assign]
        else:
            cls.__hash__ = None  # type: ignore[assignment]
    if frozen:
        names = frozenset(all_fields)
        cls.__setattr__ = _make_frozen_setattr(cls, names)  # type: ignore[method-assign]
        cls.__delattr__ = _make_frozen_delattr(cls, names)  # type: ignore[method-assign]
    cls.__match_args__ = tuple(f.name for f in chosen if f.init)  # type: ignore[attr-defined]
    return cls


def _add(cls: type, name: str, method: Callable[..., Any]) -> None:
    """Set a generated method unless the class body wrote its own."""
    if name not in cls.__dict__:
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)


def _make_init(cls: type, chosen: tuple[Field, ...]) -> Callable[..., None]:
    given = tuple(f for f in chosen if f.init)
    names = tuple(f.name for f in given)
    count = len(names)
    seen_default = False
    for f in given:
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default
    # init=False fields with a factory get a fresh value; a plain default stays the class
    # attribute, as with ``dataclasses``.
    computed = tuple(
        (f.name, f.default_factory)
        for f in chosen
        if not f.init and f.default_factory is not MISSING
    )
    post_init = getattr(cls, "__post_init__", None) is not None
    qualname = cls.__qualname__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        values = self.__dict__
        if kwargs or len(args) != count:
            if len(args) > count:
                raise TypeError(
                    f"{qualname}.__init__() takes {count + 1} positional arguments "
                    f"but {len(args) + 1} were given"
                )
            for f in given[len(args) :]:
                if f.name in kwargs:
                    continue
                if f.default_factory is not MISSING:
                    kwargs[f.name] = f.default_factory()
                elif f.default is not MISSING:
                    kwargs[f.name] = f.default
                else:
                    raise TypeError(f"{qualname}.__init__() missing required argument: {f.name!r}")
            for i in range(len(args)):
                if names[i] in kwargs:
                    raise TypeError(
                        f"{qualname}.__init__() got multiple values for argument {names[i]!r}"
                    )
                kwargs[names[i]] = args[i]
            if len(kwargs) != count:
                unknown = next(name for name in kwargs if name not in names)
                raise TypeError(
                    f"{qualname}.__init__() got an unexpected keyword argument {unknown!r}"
                )
            values.update(kwargs)
        else:
            values.update(zip(names, args, strict=True))
        for name, factory in computed:
            values[name] = factory()
        if post_init:
            self.__post_init__()

    return __init__


def _make_repr(shown: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _values_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of an instance's ``names`` attributes, read in C (``attrgetter``): equality
    and hashing run on every dict lookup of a record key, such as the warm pool's."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _make_eq(compared: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    values = _values_of(compared)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    return __eq__


def _make_hash(hashed: tuple[str, ...]) -> Callable[[Any], int]:
    values = _values_of(hashed)

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _make_frozen_setattr(cls: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if self.__class__ is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _make_frozen_delattr(cls: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if self.__class__ is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__
