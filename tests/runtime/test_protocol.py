"""Hostile-frame decoding (runtime/protocol.py) and the host's code catalogue."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime.protocol import (
    CapabilityRequest,
    FetchBody,
    FetchBodyEnd,
    FetchCancel,
    FetchPull,
    FetchRequest,
    Job,
    ProtocolViolation,
    ResultError,
    ResultOk,
    encode_capability_result,
    parse_child_message,
)

HOST = Path(__file__).resolve().parents[2] / "splice_build" / "runtime" / "host"


def test_host_codes_are_error_codes() -> None:
    text = (HOST / "codes.mjs").read_text(encoding="utf-8")
    block = text.split("HOST_CODES = Object.freeze({", 1)[1].split("});", 1)[0]
    codes = re.findall(r"(\w+): '(\w+)'", block)
    assert codes, "no codes parsed"
    for key, value in codes:
        assert key == value
        assert value in ErrorCode.__members__


JOB = "0123456789abcdef" * 2
_JOB_FIELD = b',"job":"' + JOB.encode() + b'"}'


def _result(frame: bytes) -> bytes:
    """``frame`` (a result without its job id, ending in ``}``) answering the job ``JOB``."""
    assert frame.endswith(b"}")
    return frame[:-1] + _JOB_FIELD


def test_valid_messages() -> None:
    assert parse_child_message(
        _result(b'{"type":"result","ok":true,"output":{"a":[1,2.5,"x",null]}}')
    ) == ResultOk({"a": [1, 2.5, "x", None]}, JOB)
    assert parse_child_message(
        _result(b'{"type":"result","ok":false,"error":{"code":"TOOL_ERROR","message":"m"}}')
    ) == ResultError("TOOL_ERROR", "m", JOB)
    assert parse_child_message(
        b'{"type":"capability","id":3,"name":"web.search","args":{"q":1}}'
    ) == CapabilityRequest(3, "web.search", {"q": 1})


@pytest.mark.parametrize(
    "frame",
    [
        _result(b'{"type":"result","ok":true,"output":' + b"[" * 2000 + b"]" * 2000 + b"}"),
        _result(b'{"type":"result","ok":true,"output":' + b"[" * 513 + b"]" * 513 + b"}"),
        _result(b'{"type":"result","ok":true,"output":' + b"9" * 5000 + b"}"),
        _result(b'{"type":"result","ok":true,"output":1' + b"0" * 500 + b".5}"),
        _result(b'{"type":"result","ok":true,"output":1e999}'),
        _result(b'{"type":"result","ok":true,"output":NaN}'),
        _result(b'{"type":"result","ok":true,"output":Infinity}'),
        _result(b'{"type":"result","ok":true,"output":"\\ud800"}'),
        _result(b'{"type":"result","ok":true,"output":{"\\udfff":1}}'),
        _result(b'{"type":"result","ok":true,"output":1,"x":2}'),
        _result(b'{"type":"result","ok":true}'),
        _result(b'{"type":"result","ok":"yes","output":1}'),
        _result(b'{"type":"result","ok":false,"error":{"code":1,"message":"m"}}'),
        _result(b'{"type":"result","ok":false,"error":{"code":"X","message":"m","stack":"s"}}'),
        b'{"type":"capability","id":"1","name":"x","args":{}}',
        b'{"type":"capability","id":true,"name":"x","args":{}}',
        b'{"type":"capability","id":0,"name":"x","args":{}}',
        b'{"type":"capability","id":1,"name":"' + b"n" * 200 + b'","args":{}}',
        b'{"type":"result","ok":true,"output":1}',
        b'{"type":"result","ok":true,"output":1,"job":1}',
        b'{"type":"result","ok":true,"output":1,"job":"' + JOB.upper().encode() + b'"}',
        b'{"type":"result","ok":true,"output":1,"job":"' + JOB[:31].encode() + b'"}',
        b'{"type":"result","ok":true,"output":1,"job":"' + JOB.encode() + b'x"}',
        b'{"type":"result","ok":false,"error":{"code":"X","message":"m"}}',
        b'{"type":"other"}',
        b"[1]",
        b"\xff\xfe",
        b"{",
    ],
)
def test_hostile_frames_raise_protocol_violation(frame: bytes) -> None:
    with pytest.raises(ProtocolViolation):
        parse_child_message(frame)


def test_deep_frame_never_raises_recursion_error() -> None:
    frame = _result(
        b'{"type":"result","ok":true,"output":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    )
    with pytest.raises(ProtocolViolation):
        parse_child_message(frame)


def test_surrogate_pair_is_fine() -> None:
    assert parse_child_message(
        _result(b'{"type":"result","ok":true,"output":"\\ud83d\\ude00"}')
    ) == ResultOk("😀", JOB)


def test_encodings_are_single_lines() -> None:
    job = Job(entry_url="file:///p/t.mjs", input={"a": "x\ny"}, context={}, env={"A": "b"}).encode()
    assert job.endswith(b"\n") and job.count(b"\n") == 1
    reply = encode_capability_result(4, error=("PERMISSION_DENIED", "no"))
    assert (
        reply
        == b'{"type":"capability-result","id":4,"error":{"code":"PERMISSION_DENIED","message":"no"}}\n'
    )


def test_output_exactly_at_the_depth_limit_is_accepted() -> None:
    from splice_build.runtime.limits import MAX_OUTPUT_DEPTH

    depth = MAX_OUTPUT_DEPTH
    frame = _result(b'{"type":"result","ok":true,"output":' + b"[" * depth + b"]" * depth + b"}")
    message = parse_child_message(frame)
    assert isinstance(message, ResultOk)
    assert isinstance(message.output, list)


# --- fetch frames ---------------------------------------------------------------------------


def _fetch(**overrides: object) -> bytes:
    frame: dict[str, object] = {
        "type": "fetch",
        "id": 1,
        "url": "https://api.example.com/x",
        "method": "GET",
        "headers": [["accept", "text/plain"]],
        "redirect": "follow",
        "body": False,
    }
    frame.update(overrides)
    return json.dumps(frame).encode()


def test_valid_fetch_frames() -> None:
    assert parse_child_message(_fetch()) == FetchRequest(
        1, "https://api.example.com/x", "GET", (("accept", "text/plain"),), "follow", False
    )
    assert parse_child_message(_fetch(headers=[["X-A", "1"]])).headers == (("x-a", "1"),)
    data = base64.b64encode(b"\x00\xffbody").decode()
    assert parse_child_message(
        json.dumps({"type": "fetch-body", "id": 1, "data": data}).encode()
    ) == FetchBody(1, b"\x00\xffbody")
    assert parse_child_message(b'{"type":"fetch-body-end","id":2}') == FetchBodyEnd(2)
    assert parse_child_message(b'{"type":"fetch-pull","id":2,"chunks":16}') == FetchPull(2, 16)
    assert parse_child_message(b'{"type":"fetch-cancel","id":2}') == FetchCancel(2)


@pytest.mark.parametrize(
    "frame",
    [
        _fetch(id=0),
        _fetch(id=2**31),
        _fetch(id="1"),
        _fetch(url=""),
        _fetch(url="x" * (16 * 1024 + 1)),
        _fetch(url=5),
        _fetch(method="GE T"),
        _fetch(method="G" * 33),
        _fetch(method=""),
        _fetch(redirect="follow-me"),
        _fetch(body="yes"),
        _fetch(headers={"a": "b"}),
        _fetch(headers=[["a"]]),
        _fetch(headers=[["a", 1]]),
        _fetch(headers=[["bad name", "v"]]),
        _fetch(headers=[["a", "line\r\nInjected: 1"]]),
        _fetch(headers=[["a", "nul\x00"]]),
        _fetch(headers=[["a", "\u0100"]]),
        _fetch(headers=[["a", "v"]] * 257),
        _fetch(headers=[[f"h{i}", "v" * 1000] for i in range(70)]),
        _fetch(extra=1),
        b'{"type":"fetch-body","id":1,"data":"not base64!"}',
        b'{"type":"fetch-body","id":1,"data":"abc"}',
        b'{"type":"fetch-body","id":1,"data":"' + b"A" * (350 * 1024) + b'"}',
        b'{"type":"fetch-body","id":1}',
        b'{"type":"fetch-pull","id":1,"chunks":0}',
        b'{"type":"fetch-pull","id":1,"chunks":17}',
        b'{"type":"fetch-pull","id":1,"chunks":1.5}',
        b'{"type":"fetch-cancel","id":1,"why":"x"}',
        b'{"type":"fetch-body-end"}',
    ],
)
def test_hostile_fetch_frames_raise_protocol_violation(frame: bytes) -> None:
    with pytest.raises(ProtocolViolation):
        parse_child_message(frame)


# One valid frame of each kind the child sends, and a value of every JSON type (an object and
# an array, which no set or dict lookup can take, included).
_EVERY_KIND = [
    json.loads(_result(b'{"type":"result","ok":true,"output":1}')),
    json.loads(_result(b'{"type":"result","ok":false,"error":{"code":"E","message":"m"}}')),
    {"type": "capability", "id": 1, "name": "search", "args": {}},
    json.loads(_fetch()),
    {"type": "fetch-body", "id": 1, "data": "AA=="},
    {"type": "fetch-body-end", "id": 1},
    {"type": "fetch-pull", "id": 1, "chunks": 1},
    {"type": "fetch-cancel", "id": 1},
]
_EVERY_TYPE = [None, True, False, 0, -1, 1.5, "", "follow", [], [1], {}, {"": "0"}]


@pytest.mark.parametrize("valid", _EVERY_KIND, ids=lambda f: f"{f['type']}-{f.get('ok', '')}")
def test_every_field_of_every_frame_of_every_type_is_a_message_or_a_violation(
    valid: dict[str, object],
) -> None:
    """Each field of each kind of frame, and of a result's error, given a value of each JSON
    type: the decoder answers with a message or ProtocolViolation, nothing else. A fetch's
    ``redirect`` as an object raised TypeError (unhashable) out of it."""
    frames = []
    for key in valid:
        for value in _EVERY_TYPE:
            frames.append({**valid, key: value})
    if isinstance(valid.get("error"), dict):
        for key in ("code", "message"):
            for value in _EVERY_TYPE:
                frames.append({**valid, "error": {"code": "E", "message": "m", key: value}})
    for frame in frames:
        try:
            parse_child_message(json.dumps(frame).encode())
        except ProtocolViolation:
            continue


def test_the_job_carries_no_network_policy() -> None:
    frame = json.loads(Job(entry_url="file:///x.js", input={}, context={}, env={}).encode())
    assert "netPolicy" not in frame and "testResolver" not in frame
    assert frame["fetch"] == {"maxInFlight": 6, "chunkBytes": 256 * 1024, "initialCredit": 8}
