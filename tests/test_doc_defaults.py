"""The defaults and ranges `splice <command> --help` gives are ones the pages give: a user
reading docs/cli.md or docs/registry.md learns what `--limit`, `--data` or `--expires` are
when left out and how far they go. The pages named none of `search --limit`'s 20 and 1–100,
`registry --data`'s `./splice-registry-data`, `token --label`'s `default` or `--expires`'s
1–365 days."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tests.test_doc_links import PAGES

# What a help says of a value: "(default: 10)", "(1..100; default 20)", "(default 8788; …)".
_DEFAULT = re.compile(r"\bdefault:? ([\w./-]+)(?=[;)]|$)")
_RANGE = re.compile(r"\((\d+)\.\.(\d+)[;)]")
_WINDOW = 240  # characters after the option's name in which a page gives its value


def help_values(
    commands: dict[str, argparse.ArgumentParser],
) -> set[tuple[tuple[str, ...], str]]:
    """(an option's names, what its help gives: ``default 20`` or ``1..100``) of every
    command."""
    found = set()
    for parser in commands.values():
        for action in parser._actions:
            if not action.option_strings or not action.help:
                continue
            names = tuple(action.option_strings)
            found |= {(names, f"default {value}") for value in _DEFAULT.findall(action.help)}
            found |= {(names, f"{low}..{high}") for low, high in _RANGE.findall(action.help)}
    return {(names, value) for names, value in found if value != "default none"}


def _spellings(value: str) -> list[re.Pattern[str]]:
    """How a page may write ``default 20`` or ``1..100``."""
    if value.startswith("default "):
        given = re.escape(value.removeprefix("default "))
        return [re.compile(rf"\bdefault:? `?{given}(?![\w.-])")]
    low, high = (re.escape(end) for end in value.split(".."))
    return [re.compile(rf"\b{low}(?:–|\.\.| to ){high}\b")]


def values_not_given(pages: list[Path], values: set[tuple[tuple[str, ...], str]]) -> list[str]:
    """Each option and value no page gives within ``_WINDOW`` characters after one of the
    option's names (`-j` or `--jobs`)."""
    text = " ".join(" ".join(page.read_text(encoding="utf-8").split()) for page in pages)
    missing = []
    for names, value in sorted(values):
        windows = [
            text[found.end() : found.end() + _WINDOW]
            for name in names
            for found in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
        ]
        if not any(spelling.search(window) for window in windows for spelling in _spellings(value)):
            missing.append(f"{names[-1]}: {value}")
    return sorted(missing)


def _commands() -> dict[str, argparse.ArgumentParser]:
    from splice_build.cli.parser import build_parser, load_commands

    parser = build_parser(load_commands())
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_every_default_and_range_a_help_gives_is_in_the_pages() -> None:
    values = help_values(_commands())
    assert {(("--limit",), "default 20"), (("-j", "--jobs"), "1..64")} <= values
    assert values_not_given(PAGES, values) == []


def test_a_default_or_range_the_pages_do_not_give_is_found(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text(
        "`splice search q --limit N` (1–100,\ndefault 20); `--port` (default: `8787`).\n"
        "`--jobs N` runs N tasks, `-j N` (1 to 64).\n" + "More words. " * 30 + "default 4;\n"
        "`--dir` (default `.`).\n"
    )
    values = {
        (("--limit",), "default 20"),
        (("--limit",), "1..100"),
        (("--port",), "default 8787"),
        (("-j", "--jobs"), "default 4"),
        (("-j", "--jobs"), "1..64"),
        (("--dir",), "default ."),
        (("--key",), "default default"),
    }
    assert values_not_given([page], values) == ["--jobs: default 4", "--key: default default"]
