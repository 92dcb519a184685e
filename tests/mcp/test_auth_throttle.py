"""Failed tokens of ``splice mcp --http`` are throttled per client (docs/mcp.md#streamable-http).

A real server process (the demo server: the transport of ``splice mcp --http``) and a real
guessing client, each loopback address another client. Before, a client guessed at the
server's full speed (680 tokens a second, every one answered 401) without end.
"""

from __future__ import annotations

import json
from typing import Any

from splice_build.mcp.transport.auth_throttle import OVERFLOW, AuthThrottle, ThrottlePolicy
from testing.mcp_clients import DEMO_TOKEN, Response, child_env, demo_argv, http_server, post

FAILURES = ThrottlePolicy().failures
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
UNAUTHORIZED = {"code": -32001, "message": "Unauthorized"}


def ping(url: str, token: str, source: str) -> Response:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return post(url, PING, headers, source)


def refused_for(seconds: int) -> dict[str, object]:
    return {
        "code": -32001,
        "message": "Too many failed authentications",
        "data": {"retryAfter": seconds, "io.spliceloom/error": {"code": "RATE_LIMITED"}},
    }


def throttled_server(failures: int, clients: int) -> Any:
    """The demo server counting ``clients`` at once, each blocked after ``failures`` failed
    tokens for 30 s at first: no pause of a loaded machine outlasts the block."""
    argv = demo_argv("http", "0", "--auth-throttle", f"{failures},{clients},30")
    return http_server(argv, env=child_env())


def test_a_guessing_client_is_blocked_before_its_token_is_compared() -> None:
    with throttled_server(FAILURES, ThrottlePolicy().clients) as (url, _process):
        guesses = [ping(url, f"guess-{index}-{DEMO_TOKEN}", "127.0.0.2") for index in range(12)]
        assert [guess.status_code for guess in guesses] == [401] * FAILURES + [429] * 2
        assert [guess.json()["error"] for guess in guesses[:FAILURES]] == [UNAUTHORIZED] * FAILURES
        blocked = guesses[FAILURES]
        wait = int(blocked.headers["retry-after"])
        assert 1 <= wait <= 30
        assert blocked.json() == {"jsonrpc": "2.0", "id": None, "error": refused_for(wait)}
        # The right token is refused too while the block lasts: a 200 would tell a blocked
        # guesser it had found it.
        assert ping(url, DEMO_TOKEN, "127.0.0.2").status_code == 429
        # Another client is not blocked, and its right token is answered.
        assert ping(url, DEMO_TOKEN, "127.0.0.3").json() == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {},
        }
        assert ping(url, "wrong", "127.0.0.3").status_code == 401
        # A request without a token guesses nothing and is not counted.
        bare = {"Content-Type": "application/json"}
        assert {post(url, PING, bare, "127.0.0.4").status_code for _ in range(15)} == {401}
        assert ping(url, DEMO_TOKEN, "127.0.0.4").status_code == 200


def test_many_source_addresses_get_no_more_guesses_than_the_counted_clients() -> None:
    """Three clients counted at once, two failures each: the 20 addresses past them share one
    more count, so 4 x 2 guesses are compared in all, and every other one is refused."""
    with throttled_server(2, 3) as (url, _process):
        statuses = [
            ping(url, f"guess-{index}", f"127.0.1.{index // 2 + 1}").status_code
            for index in range(46)
        ]
        assert statuses == [401] * 8 + [429] * 38
        # An address new to the server shares the block of the crowd beyond the bound, its
        # right token included (docs/mcp.md#streamable-http).
        assert ping(url, DEMO_TOKEN, "127.0.2.1").status_code == 429


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_blocks_double_up_to_their_bound_and_a_quiet_client_is_forgotten() -> None:
    clock = Clock()
    throttle = AuthThrottle(ThrottlePolicy(failures=3, window=60, max_block=8), clock)
    waits = []
    for _ in range(6):
        for _ in range(3):
            assert throttle.retry_after("10.0.0.1") is None
            throttle.failed("10.0.0.1")
        waits.append(throttle.retry_after("10.0.0.1"))
        clock.now += waits[-1]
    assert waits == [1, 2, 4, 8, 8, 8]
    clock.now += 60  # a window without a failure: forgotten, the next block the first again
    assert throttle.counted() == 0
    for _ in range(3):
        throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == 1


def test_failures_in_another_window_do_not_add_up() -> None:
    clock = Clock()
    throttle = AuthThrottle(ThrottlePolicy(failures=3, window=60), clock)
    for _ in range(5):
        throttle.failed("10.0.0.1")
        throttle.failed("10.0.0.1")
        clock.now += 59
        assert throttle.retry_after("10.0.0.1") is None
        clock.now += 2


def test_memory_is_bounded_whatever_the_number_of_addresses() -> None:
    clock = Clock()
    throttle = AuthThrottle(ThrottlePolicy(clients=100), clock)
    for index in range(20_000):
        throttle.failed(f"127.{index >> 16}.{(index >> 8) & 255}.{index & 255}")
    assert throttle.counted() == 101  # the 100 clients and the shared count beyond them
    assert throttle.retry_after("192.0.2.1") is not None  # the crowd's block: theirs too
    assert throttle.retry_after(OVERFLOW) is not None
    clock.now += ThrottlePolicy().window + ThrottlePolicy().max_block
    assert throttle.counted() == 0
    assert throttle.retry_after("192.0.2.1") is None
