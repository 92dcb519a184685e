"""Typed reads of a vendor's decoded JSON answer, each failing as the vendor's failure.

A provider reads its vendor's answer only through ``Answer``: every read names the type it
expects, and a value of another type is a ``ProviderFailure`` (PROVIDER_ERROR, the next
provider tried) raised at that read, naming the endpoint and the value's path in the answer:
``exa POST /search: results[3].url is not a string``. Absent and ``null`` are the same
"not given" (``None``, an empty list); anything else of the wrong type is the vendor's
answer of an unexpected shape.

So a ``TypeError``, ``KeyError`` or the like that a provider raises is never the vendor's: it
is a bug of ours, which the broker logs at ERROR as a crash ("internal error").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from splice_build.broker.providers.interface import ProviderFailure
from splice_build.records import dataclass
from splice_build.spec.json_text import is_json_number
from splice_build.spec.untrusted_json import MAX_NUMBER_CHARS


@dataclass(frozen=True)
class Answer:
    """One value of a vendor's answer: ``where`` names the answer (``exa POST /search``),
    ``path`` the value in it (``results[3].url``; empty for the answer itself)."""

    value: Any
    where: str
    path: str = ""

    def wrong(self, what: str) -> ProviderFailure:
        """The vendor's failure for this value: ``<where>: <path> <what>``."""
        return ProviderFailure(f"{self.where}: {self.path or 'the answer'} {what}")

    def _at(self, key: str, value: Any) -> Answer:
        return Answer(value, self.where, f"{self.path}.{key}" if self.path else key)

    def as_object(self) -> Answer:
        """This value, which must be an object (``null`` is not one)."""
        if not isinstance(self.value, Mapping):
            raise self.wrong("is not an object")
        return self

    def field(self, key: str) -> Answer:
        """The field ``key`` of this object; of ``null`` (an object not given), ``null``."""
        if self.value is None:
            return self._at(key, None)
        return self._at(key, self.as_object().value.get(key))

    def has(self, key: str) -> bool:
        """Whether this object holds ``key`` (even as ``null``)."""
        return self.value is not None and key in self.as_object().value

    def entries(self) -> list[tuple[str, Answer]]:
        """The fields of this object (none for ``null``)."""
        if self.value is None:
            return []
        return [(key, self._at(key, v)) for key, v in self.as_object().value.items()]

    def items(self) -> list[Answer]:
        """The items of this list (none for ``null``)."""
        if self.value is None:
            return []
        if not isinstance(self.value, list):
            raise self.wrong("is not a list")
        return [Answer(item, self.where, f"{self.path}[{n}]") for n, item in enumerate(self.value)]

    def objects(self) -> list[Answer]:
        """The items of this list, each an object."""
        return [item.as_object() for item in self.items()]

    def text(self) -> str | None:
        if self.value is None or isinstance(self.value, str):
            return self.value
        raise self.wrong("is not a string")

    def number(self) -> int | float | None:
        """A JSON number (not ``true``/``false``, which Python counts as integers)."""
        if self.value is None or (
            isinstance(self.value, int | float) and not isinstance(self.value, bool)
        ):
            return self.value
        raise self.wrong("is not a number")

    def flag(self) -> bool | None:
        if self.value is None or isinstance(self.value, bool):
            return self.value
        raise self.wrong("is not a boolean")

    def price(self) -> float | None:
        """A market number as vendors send it, a JSON number or one written as a string
        (``"1.25"``), as a finite float; ``None`` for a string that is no JSON number's text
        or no finite number: ``float()`` also reads ``"NaN"``, ``"inf"`` and ``"1e999"``,
        which have no JSON form and could not be sent back to the tool, and ``"1_000"``,
        ``" 2.5"``, ``"+7"`` and digits of any script (``"٣.٥"`` was 3.5)."""
        if isinstance(self.value, str):
            if len(self.value) > MAX_NUMBER_CHARS or not is_json_number(self.value):
                return None
            number = float(self.value)
        else:
            given = self.number()
            if given is None:
                return None
            try:
                number = float(given)
            except OverflowError:  # an integer of hundreds of digits
                return None
        return number if math.isfinite(number) else None
