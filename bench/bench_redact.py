"""Redaction of 1 MiB of adversarial text per pattern class (issue #18: < 50 ms each),
against 1 MiB of ordinary log text redacted in the same run (docs/security.md#redaction).

Each input is built to make a backtracking engine retry its pattern from every position (runs
of a keyword or prefix, near misses that fail at the last step); RE2 scans each in one pass.
The last row is a different worst case: text dense with real matches, where the cost is the
replacements themselves (about a microsecond each), not the scan.
"""

from __future__ import annotations

from bench.common import Row, median, time_callable

MIB = 1024 * 1024


# Every rule's literals without a match: each input starts with it, so no rule is skipped.
LITERALS = "-----BEGIN  splice_ gh_ sk- xox AKIA AIza eyJ authorization cookie Bearer Basic :// ?& = TOKEN\n"


def _fill(unit: str) -> str:
    return (LITERALS + unit * (MIB // len(unit) + 1))[:MIB]


ORDINARY = _fill(
    "2026-12-02 12:00:01 INFO fetched https://api.example.com/v1/items?page=2 in 35 ms\n"
)

# One adversarial input per class of docs/compatibility.md#redaction: (name, the index of the
# class's rule in redact.rules(), text).
ADVERSARIAL: tuple[tuple[str, int, str], ...] = (
    ("PEM header, never closed", 0, _fill("-----BEGIN " + "PRIVATE KEY " * 6 + "\n")),
    ("Splice token near misses", 1, _fill("splice_" + "A" * 42 + " ")),
    ("Splice prefix run", 1, _fill("splice_")),
    ("GitHub near misses", 2, _fill("ghp_" + "a" * 19 + " ")),
    ("sk- prefix run", 3, _fill("sk-")),
    ("Slack prefix run", 4, _fill("xoxb-")),
    ("AWS prefix run", 5, _fill("AKIA")),
    ("Google near misses", 6, _fill("AIza" + "-" * 34 + " ")),
    ("JWT prefixes", 7, _fill("eyJ-")),
    ("Authorization keyword run", 8, _fill("Authorization ")),
    ("Bearer near misses", 9, _fill("Bearer abcde ")),
    ("Cookie keyword run", 10, _fill("cookie ")),
    ("URL scheme dots", 11, _fill("a.")),
    ("query names", 12, _fill("?token&key")),
    ("NAME=value keyword run", 13, _fill("TOKEN")),
    ("one quoted value to the end", 13, _fill('API_KEY="' + "\\a" * MIB)),
)
DENSE = _fill("x ghp_" + "a" * 24 + " MY_TOKEN=v ")


def _ms(fn: object, repeat: int) -> float:
    return median(time_callable(fn, repeat=repeat)) * 1000  # type: ignore[arg-type]


def run(quick: bool = False) -> list[Row]:
    from splice_build.security.redact import redact, rules

    repeat = 3 if quick else 7
    rows = []
    for name, index, text in ADVERSARIAL:
        rule = rules()[index].apply
        took = _ms(lambda r=rule, t=text: r(t), repeat)
        base = _ms(lambda r=rule: r(ORDINARY), repeat)
        rows.append(
            Row(
                f"class {index + 1} on 1 MiB: {name}",
                took,
                "ms",
                "same on log lines",
                base,
                "< 50 ms",
            )
        )
    whole = max(_ms(lambda t=text: redact(t), repeat) for _name, _index, text in ADVERSARIAL)
    ordinary = _ms(lambda: redact(ORDINARY), repeat)
    rows.append(Row("redact(), slowest adversarial 1 MiB", whole, "ms", "log lines", ordinary))
    dense = _ms(lambda: redact(DENSE), repeat)
    rows.append(Row("redact(), 1 MiB dense with secrets (69k)", dense, "ms", "log lines", ordinary))
    return rows
