"""What the registry's libraries do by default and `splice registry serve` must not.

A request value holding U+0000 is 400 BAD_REQUEST on both stores (docs/registry.md#limits):
PostgreSQL cannot hold NUL in text, and its store answered these 503 STORAGE_UNAVAILABLE
(psycopg refused the parameter), where the SQLite store answered 200 or 404. No answer names
the server's software (uvicorn adds ``server: uvicorn`` unless told not to).
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from testing.registry_server import ADMIN_TOKEN, RunningRegistry

ANON = ""
# method, path, JSON body, who asks: every kind of value that reaches a statement (query
# string, path parameter, JSON member; an anonymous read and the admin's routes)
REQUESTS = [
    ("GET", "/packages/search?q=a%00b", None, ANON),
    ("POST", "/admin/users/a%00b/tokens", {}, ADMIN_TOKEN),
    ("POST", "/admin/tokens/tok_%00/revoke", None, ADMIN_TOKEN),
    ("PUT", "/admin/namespaces/acme", {"owner": "al\x00ice"}, ADMIN_TOKEN),
]


def _ask(
    server: RunningRegistry, method: str, path: str, body: object, token: str
) -> tuple[int, object]:
    address = urlsplit(server.url)
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())["error"]
    finally:
        conn.close()


def test_a_nul_character_is_a_bad_request_on_both_stores(server: RunningRegistry) -> None:
    answers = [_ask(server, method, path, body, who) for method, path, body, who in REQUESTS]
    expected = {"code": "BAD_REQUEST", "message": "Text may not hold a NUL character (U+0000)"}
    assert answers == [(400, expected)] * len(REQUESTS)


def test_no_answer_names_the_server_software(server: RunningRegistry) -> None:
    address = urlsplit(server.url)
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        conn.request("GET", "/health")
        answer = conn.getresponse()
        answer.read()
    finally:
        conn.close()
    assert (answer.status, answer.getheader("server")) == (200, None)
