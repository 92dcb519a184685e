"""Cost of terminal sanitising (``security.terminal.terminal_safe``, docs/security.md#terminal-output)
on 1 MiB of text, against one ``str.encode("utf-8")`` of the same text in the same run (the
least any writer of that text pays): plain text, text with one escape sequence, and text
made only of characters to escape (a tool that logs nothing but ``ESC``)."""

from __future__ import annotations

from bench.common import Row, ratio_row, time_callable

MIB = 1 << 20


def _inputs() -> dict[str, str]:
    line = "hello world, ünïcødé 漢字 " * 40 + "\n"
    plain = (line * (MIB // len(line) + 1))[:MIB]
    return {
        "plain": plain,
        "plain + one ESC sequence": plain[:-8] + "\x1b]52;c;\x07",
        "only characters to escape": ("\x1b\x9b\u202e\u200b" * (MIB // 4))[:MIB],
    }


def run(quick: bool = False) -> list[Row]:
    from splice_build.security.terminal import terminal_safe

    repeat = 3 if quick else 15
    rows = []
    for name, text in _inputs().items():
        ours = time_callable(lambda t=text: terminal_safe(t), repeat=repeat)
        baseline = time_callable(lambda t=text: t.encode("utf-8", "surrogatepass"), repeat=repeat)
        rows.append(ratio_row(f"terminal_safe, 1 MiB {name}", ours, "encode", baseline))
    return rows
