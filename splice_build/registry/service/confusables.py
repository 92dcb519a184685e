"""Names that look like reserved ones are refused when they are created (docs/registry.md#confusable-names).

A new namespace is refused when its skeleton (``schemas/confusables.json``: TR39-like
prototypes, digit/letter swaps, separators dropped) equals the skeleton of a reserved namespace
(``spl1ce``, ``off1cial``, ``s-p-l-i-c-e``), when one of its dash-separated parts is a brand
(``splice-official``, ``acme-splice``), or when it is a brand joined to a reserved name
(``spliceofficial``). A new package name outside a reserved namespace is refused by the same
brand rules (``@acme/splice``, ``@acme/spl1ce-tools``). The reserved names are the store's
own (``reserved`` namespaces), so the list lives in one place; only names that are created
are checked, so nothing that exists today stops working.

A new namespace is also refused when its skeleton equals that of any existing namespace the
publisher neither owns nor maintains (``acrne`` or ``ac-me`` once ``acme`` exists): otherwise
anyone could claim a look-alike of a real publisher's namespace and wait for a typo. Names of
one owner may look alike (``acme`` may add ``ac-me``).
"""

from __future__ import annotations

import functools
import json
import unicodedata
from importlib import resources

from splice_build.errors import ErrorCode, RegistryError
from splice_build.records import dataclass
from splice_build.registry.db.interface import User
from splice_build.registry.service.deps import Deps


@dataclass(frozen=True)
class _Table:
    prototypes: dict[str, str]
    sequences: dict[str, str]
    separators: tuple[str, ...]
    brands: tuple[str, ...]


@functools.cache
def _table() -> _Table:
    path = resources.files("splice_build").joinpath("schemas", "confusables.json")
    data = json.loads(path.read_text("utf-8"))
    return _Table(
        dict(data["prototypes"]),
        dict(data["sequences"]),
        tuple(data["separators"]),
        tuple(data["brands"]),
    )


def skeleton(text: str, *, keep_separators: bool = False) -> str:
    """What ``text`` looks like: equal skeletons are confusable."""
    table = _table()
    folded = unicodedata.normalize("NFKC", text).casefold()
    out = "".join(table.prototypes.get(char, char) for char in folded)
    for sequence, prototype in table.sequences.items():
        while sequence in out:
            out = out.replace(sequence, prototype)
    if not keep_separators:
        for separator in table.separators:
            out = out.replace(separator, "")
    return out


def _parts(text: str) -> list[str]:
    marked = skeleton(text, keep_separators=True)
    for separator in _table().separators:
        marked = marked.replace(separator, "\0")
    return [part for part in marked.split("\0") if part]


def _brand_clash(text: str, reserved: list[str]) -> str | None:
    """The brand ``text`` borrows: as one of its parts, or joined to a reserved name."""
    brands = [(brand, skeleton(brand)) for brand in _table().brands]
    whole = skeleton(text)
    for brand, look in brands:
        if look == whole or look in _parts(text):
            return brand
    reserved_looks = {skeleton(name) for name in reserved}
    for brand, look in brands:
        for other in reserved_looks:
            if whole in (look + other, other + look):
                return brand
    return None


@functools.lru_cache(maxsize=65_536)
def _look(name: str) -> str:
    """``skeleton`` of an existing name, remembered: every new namespace compares with all."""
    return skeleton(name)


def _refused(what: str, name: str, like: str, *, kind: str = "reserved") -> RegistryError:
    return RegistryError(
        ErrorCode.NAME_CONFUSABLE,
        f"{what} {name} is too close to the {kind} name {like}",
        details=[f"{name} looks like {like} (digits for letters, look-alike characters, case)"],
        hint="Choose a name that does not imitate a reserved one.",
    )


def refuse_confusable_namespace(deps: Deps, namespace: str, user: User) -> None:
    """Raise ``NAME_CONFUSABLE`` when a namespace ``user`` is about to create imitates a
    reserved one, or an existing one that is not ``user``'s (owned or maintained)."""
    reserved = deps.meta.reserved_namespaces()
    if namespace in reserved:
        return  # the reserved namespace itself: authorize_publish already decided
    look = skeleton(namespace)
    for name in reserved:
        if skeleton(name) == look:
            raise _refused("Namespace", f"@{namespace}", f"@{name}")
    brand = _brand_clash(namespace, reserved)
    if brand is not None:
        raise _refused("Namespace", f"@{namespace}", f"@{brand}")
    owns, maintains = deps.meta.namespaces_of(user.id)
    own = {namespace, *owns, *maintains}
    for name in deps.meta.namespace_names():
        if name not in own and _look(name) == look:
            raise _refused("Namespace", f"@{namespace}", f"@{name}", kind="existing")


def refuse_confusable_package(deps: Deps, namespace: str, name: str) -> None:
    """Raise ``NAME_CONFUSABLE`` when a new package name outside a reserved namespace
    borrows a brand."""
    reserved = deps.meta.reserved_namespaces()
    if namespace in reserved:
        return
    brand = _brand_clash(name, reserved)
    if brand is not None:
        raise _refused("Package name", f"@{namespace}/{name}", f"@{brand}")
