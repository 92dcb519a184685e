"""A web provider is never asked to fetch a special-use or network-internal name
(``schemas/special_use_names.json``, broker/targets.py): ``router.lan``, ``nas.home.arpa``
and ``localhost.localdomain`` used to reach the provider, only ``.local`` and ``.internal``
were refused."""

from __future__ import annotations

import json
from importlib import resources

from splice_build.broker import Broker
from splice_build.broker.keys import ProviderKeys
from splice_build.broker.providers.memory import MemoryProvider
from splice_build.broker.targets import non_public_names

SPELLINGS = ("{}", "host.{}", "a.b.{}", "HOST.{}.", "host%2e{}", "host．{}")


def _listed() -> list[str]:
    text = (resources.files("splice_build.schemas") / "special_use_names.json").read_text()
    data = json.loads(text)
    return [*data["specialUse"], *data["private"]]


def test_every_listed_name_and_every_name_under_one_is_refused() -> None:
    web = MemoryProvider("web", {"web.extract": {"pages": []}, "web.map": {"links": []}})
    broker = Broker(keys=ProviderKeys({}), providers={"web": web})
    names = _listed()
    assert {"lan", "arpa", "localdomain", "local", "internal"} <= set(names)
    assert non_public_names() == frozenset(names)
    urls = [f"http://{form.format(name)}/" for name in names for form in SPELLINGS]
    urls += ["http://localhost.localdomain/", "https://nas.home.arpa/", "http://router.lan/"]
    for url in urls:
        for capability, args in (("web.extract", {"urls": [url]}), ("web.map", {"url": url})):
            result = broker.call(
                {"package": "@t/p", "tool": "t", "capability": capability, "args": args}
            )
            assert (result["status"], result.get("code")) == ("ERROR", "INVALID_INPUT"), url
    assert web.calls == []  # no provider was asked


def test_public_names_that_merely_contain_a_listed_label_pass() -> None:
    from splice_build.broker.capabilities import argument_problems

    for url in (
        "https://lan.example.com/",
        "https://local.example.org/x",
        "https://test.example.net/",
        "https://example.com/",
        "https://arpa.example.com/",
        "http://8.8.8.8/",
    ):
        assert argument_problems("web.extract", {"urls": [url]}) == [], url
