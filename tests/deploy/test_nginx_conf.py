"""docs/deploy/nginx.conf against the servers' own timings, without starting anything
(the running deployment is test_deploy.py)."""

from __future__ import annotations

import re

from splice_build.connections import KEEP_ALIVE_SECONDS
from testing.deploy import NGINX_CONF

_UPSTREAM = re.compile(r"^upstream (\S+) \{\n(.*?)^\}", re.MULTILINE | re.DOTALL)
_SECONDS = re.compile(r"^\s*keepalive_timeout (\d+)s;", re.MULTILINE)


def test_nginx_drops_a_kept_alive_connection_before_the_instance_does() -> None:
    """An upstream whose connections nginx keeps must close them before an instance closes
    them for idleness: else a request nginx writes at that moment fails, and a POST (a
    publish) comes back 502 with the instance left out for ``fail_timeout``."""
    kept = {
        name: body
        for name, body in _UPSTREAM.findall(NGINX_CONF.read_text(encoding="utf-8"))
        if re.search(r"^\s*keepalive \d+;", body, re.MULTILINE)
    }
    assert kept, "the registry's connections are kept alive"
    for name, body in kept.items():
        found = _SECONDS.search(body)
        assert found is not None, f"upstream {name} keeps nginx's 60 s default"
        assert int(found.group(1)) < KEEP_ALIVE_SECONDS, name
