"""The names README.md and docs/*.md give are the repository's: every path of the repository a
page names exists (and every test it names as `tests/x.py::test_y` is defined there), every upper-case name in code (an error code, a variable, a skill's
refusal) is one the code spells or one of the outside names listed here, and
docs/architecture.md's layout table has one row for each module of `splice_build/` and
none for a module that is gone. A renamed module or code leaves no stale page behind."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from tests.test_doc_links import PAGES, REPO

PACKAGE = REPO / "splice_build"
_TOP = ("splice_build", "tests", "testing", "bench", "docs", "fuzz", ".ci")
_SPAN = re.compile(r"`([^`\n]+)`")
_UPPER = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`")
# Code blocks, code spans and link targets, blanked before plain text is searched for paths.
_PLAIN_HIDDEN = re.compile(r"^```.*?^```|`[^`\n]*`|\]\([^)\s]*\)", re.M | re.S)
_PLAIN_PATH = re.compile(r"(?<![\w/.-])((?:\.ci|[a-z_]+)/[\w./-]*\.[a-z]+)\b")

# Upper-case names the pages give that belong to others (AWS, git, Node.js, OpenSSL, Linux).
OUTSIDE_NAMES = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_SECRET_ACCESS_KEY",
        "ERR_FS_CP_EEXIST",
        "ERR_UNHANDLED_REJECTION",
        "GIT_DIR",
        "GIT_INDEX_FILE",
        "HTTPS_PROXY",
        "NODE_TLS_REJECT_UNAUTHORIZED",
        "OPENSSL_CONF",
        "PR_CAP_AMBIENT",
        "PR_SET_DUMPABLE",
        "PR_SET_MM",
        "PR_SET_PTRACER",
        "PR_SET_SPECULATION_CTRL",
        "PR_SET_VMA",
        "RENAME_EXCHANGE",
    }
)


def _where(page: Path, root: Path, text: str, offset: int) -> str:
    return f"{page.relative_to(root)}:{text.count(chr(10), 0, offset) + 1}"


def _named_paths(text: str) -> Iterator[re.Match[str]]:
    """The code spans of ``text``, then the file paths written as plain text (a name with a
    suffix after a directory, outside code and links: ``(splice_build/errors.py)``)."""
    yield from _SPAN.finditer(text)
    hidden = _PLAIN_HIDDEN.sub(lambda found: " " * len(found.group()), text)
    yield from _PLAIN_PATH.finditer(hidden)


def missing_paths(pages: list[Path], root: Path = REPO) -> list[str]:
    """Each path in code (`tests/x.py`, `runtime/host/*.mjs`), or a file's path in plain text,
    that starts with a directory of the repository or of the package and matches no file, as
    'page:line: path'; a path with a placeholder (`<topic>`, `{name}`) is no file's name."""
    package = root / "splice_build"
    subpackages = {p.name for p in package.iterdir() if p.is_dir()}
    missing = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in _named_paths(text):
            path, _, name = match.group(1).partition("::")
            path, name = path.rstrip(".,:"), re.split(r"[^\w]", name)[0]
            first = path.split("/")[0]
            if "/" not in path or re.search(r"[<>{}\s]", path):
                continue
            if first in _TOP:
                base = root
            elif first in subpackages:
                base = package
            else:
                continue
            found = list(base.glob(path))
            if not found or (name and not _defines(found[0], name)):
                named = f"{path}::{name}" if found else path
                missing.append(f"{_where(page, root, text, match.start())}: {named}")
    return missing


def _defines(module: Path, name: str) -> bool:
    """Whether the Python file ``module`` defines a function or class ``name`` (a test a
    page names as `tests/x.py::test_y`), at any indentation."""
    source = module.read_text(encoding="utf-8")
    return (
        re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", source, re.M)
        is not None
    )


def unknown_upper_names(pages: list[Path], source: str, root: Path = REPO) -> list[str]:
    """Each upper-case name in code that the source never spells and no outsider owns."""
    spelled = set(re.findall(r"\b[A-Z][A-Z0-9_]*\b", source))
    unknown = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in _UPPER.finditer(text):
            name = match.group(1)
            if name not in OUTSIDE_NAMES and name not in spelled:
                unknown.append(f"{_where(page, root, text, match.start())}: {name}")
    return unknown


def _source() -> str:
    files = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".mjs", ".json", ".md")]
    return "\n".join(p.read_text(encoding="utf-8") for p in [*files, REPO / "dodo.py"])


def layout_rows(page: Path) -> set[str]:
    """The modules docs/architecture.md's layout table names in its first column."""
    section = page.read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in re.findall(r"^\| ([^|]+) \|", section, re.M):
        names.update(_SPAN.findall(row))
    return names


def package_modules(package: Path) -> set[str]:
    """The package's top-level modules (`errors.py`) and directories (`spec/`, `schemas/`)."""
    return {p.name for p in package.glob("*.py") if p.name != "__init__.py"} | {
        f"{p.name}/" for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"
    }


def test_every_repository_path_the_docs_name_exists() -> None:
    assert missing_paths(PAGES) == []


def test_every_upper_case_name_the_docs_give_is_spelled_by_the_code() -> None:
    source = _source()
    assert "PERMISSIONS_NOT_GRANTED" in source  # the walk read the catalogue
    assert unknown_upper_names(PAGES, source) == []
    assert OUTSIDE_NAMES.isdisjoint(re.findall(r"\b[A-Z][A-Z0-9_]*\b", source))


def test_every_code_of_the_catalogue_is_named_by_a_page() -> None:
    """A user who gets a code can look it up: each one of splice_build/errors.py is named."""
    from splice_build.errors import ErrorCode

    words = (re.findall(r"\b[A-Z][A-Z0-9_]+\b", page.read_text(encoding="utf-8")) for page in PAGES)
    named = {word for page in words for word in page}
    assert [code.value for code in ErrorCode if code.value not in named] == []


# The hook runtime/forks.py calls in a forked child: no user calls it.
_SDK_HOOKS = frozenset({"forget_after_fork"})


def test_sdk_md_names_every_public_method_and_property_of_splice() -> None:
    """docs/sdk.md is the SDK's contract: a method or property of ``Splice`` it does not name
    (``registry_url`` was one) is one a user cannot know is there, or what it promises."""
    from splice_build.sdk import Splice

    text = (REPO / "docs" / "sdk.md").read_text(encoding="utf-8")
    public = {name for name in vars(Splice) if not name.startswith("_")} - _SDK_HOOKS
    assert {"run_resolved", "registry_url", "init"} <= public
    named = re.compile(r"`(?:await )?(?:Splice\.|splice\.)?(\w+)")
    assert sorted(public - set(named.findall(text))) == []


def test_sdk_md_names_every_class_a_method_of_splice_returns() -> None:
    """What a call gives back is part of the contract: sdk.md said `load(ref)` checks a copy
    and never what it returns (a ``LoadedPackage``), nor what `add()` and `install()` do."""
    import inspect

    from splice_build.sdk import Splice

    text = (REPO / "docs" / "sdk.md").read_text(encoding="utf-8")
    public = [getattr(Splice, n) for n in vars(Splice) if not n.startswith("_")]
    annotations = [str(inspect.signature(m).return_annotation) for m in public if callable(m)]
    returned = {name for given in annotations for name in re.findall(r"\b[A-Z]\w+", given)}
    returned -= {"Any", "None"}
    assert {"InstallReport", "InstalledPackage", "ToolResult"} <= returned
    assert sorted(name for name in returned if f"`{name}`" not in text) == []


def test_every_name_the_python_api_exports_is_named_by_a_page() -> None:
    """What ``__all__`` offers a program is looked up in the pages: `ToolError`, the type of
    a ``ToolResult``'s ``error``, exported by ``splice_build.runtime``, was named by none."""
    import importlib

    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    modules = ("splice_build", "splice_build.sdk", "splice_build.runtime", "splice_build.tasks")
    exported = {name for m in modules for name in importlib.import_module(m).__all__}
    assert {"Splice", "ToolResult", "splice_tasks"} <= exported
    assert sorted(name for name in exported - {"__version__"} if f"`{name}" not in text) == []


def test_sdk_md_names_every_keyword_splice_takes() -> None:
    """What ``Splice(...)`` takes is part of the SDK's contract: sdk.md named no ``home`` and
    said nothing of ``broker=False`` or of the default broker."""
    import inspect

    from splice_build.sdk import Splice

    text = (REPO / "docs" / "sdk.md").read_text(encoding="utf-8")
    keywords = [name for name in inspect.signature(Splice).parameters if name != "self"]
    assert "home" in keywords
    assert [name for name in keywords if not re.search(rf"\b{name}=", text)] == []


def test_compatibility_md_lists_the_refused_ranges_of_the_network_policy() -> None:
    """The network guard's refused ranges, as compatibility.md lists them, are those of
    schemas/netpolicy.json: the page left out ::ffff:0:0:0/96 and the rule that an IPv6
    address outside 2000::/3 is never public."""
    import json

    policy = json.loads((PACKAGE / "schemas" / "netpolicy.json").read_text(encoding="utf-8"))
    text = (REPO / "docs" / "compatibility.md").read_text(encoding="utf-8")
    text = " ".join(text.split("### Network guard", 1)[1].split("\n### ", 1)[0].split())
    for family, lead, end in (
        ("ipv4", "Refused IPv4: ", ". Refused IPv6"),
        ("ipv6", "Refused IPv6: ", ", and (ours)"),
    ):
        listed = re.findall(r"[0-9a-f:.]+/\d+", text.split(lead, 1)[1].split(end, 1)[0])
        if family == "ipv4":  # written short: 10/8, 100.64/10
            listed = [re.sub(r"^([\d.]+)/", lambda m: _dotted(m.group(1)) + "/", c) for c in listed]
        assert listed == [entry["cidr"] for entry in policy["refused"][family]], family
    assert " or ".join(policy["publicV6"]["within"]) in text


def _dotted(prefix: str) -> str:
    """An IPv4 prefix written short (``100.64``) as its four numbers (``100.64.0.0``)."""
    parts = prefix.split(".")
    return ".".join(parts + ["0"] * (4 - len(parts)))


def test_runtime_md_names_every_setting_of_the_reuse_policy() -> None:
    """Every field of ``ReusePolicy`` is a setting an SDK user may give: runtime.md named
    ``max_calls``, ``idle_seconds`` and ``max_memory_mb`` but not ``max_idle`` or
    ``max_cpu_seconds``, whose defaults it gave as fixed numbers."""
    from splice_build.records import fields as record_fields
    from splice_build.spec.reuse import ReusePolicy

    text = (REPO / "docs" / "runtime.md").read_text(encoding="utf-8")
    fields = [field.name for field in record_fields(ReusePolicy)]
    assert "max_idle" in fields
    assert [name for name in fields if f"`{name}`" not in text and f"{name}=" not in text] == []


def test_the_architecture_layout_has_one_row_per_module() -> None:
    rows = layout_rows(REPO / "docs" / "architecture.md")
    assert rows == package_modules(PACKAGE)


def test_a_stale_name_is_found(tmp_path: Path) -> None:
    (tmp_path / "splice_build" / "spec").mkdir(parents=True)
    (tmp_path / "splice_build" / "spec" / "__init__.py").write_text("")
    (tmp_path / "splice_build" / "spec" / "names.py").write_text("CODE = 'KNOWN_CODE'\n")
    (tmp_path / "splice_build" / "errors.py").write_text("")
    (tmp_path / "splice_build" / "__pycache__").mkdir()
    page = tmp_path / "a.md"
    page.write_text(
        "## Layout\n\n| part | job |\n|---|---|\n| `errors.py`, `gone.py` | x |\n\n## Next\n\n"
        "`spec/names.py` `spec/gone.py` `splice_build/spec/*.py` `bench/bench_<topic>.py`\n"
        "`KNOWN_CODE` `GONE_CODE` `GIT_DIR` `PLAIN`\n"
        "plain: (splice_build/errors.py), spec/names.py and splice_build/lost.py; install/sync\n"
        "`splice_build/spec/names.py::CODE` `splice_build/spec/names.py::test_gone`\n"
        "`spec/names.py::Names::test_kept`\n"
    )
    (tmp_path / "splice_build" / "spec" / "names.py").write_text(
        "CODE = 'KNOWN_CODE'\n\n\nclass Names:\n    def test_kept(self) -> None: ...\n"
    )
    assert missing_paths([page], tmp_path) == [
        "a.md:9: spec/gone.py",
        "a.md:12: splice_build/spec/names.py::CODE",
        "a.md:12: splice_build/spec/names.py::test_gone",
        "a.md:11: splice_build/lost.py",
    ]
    source = (tmp_path / "splice_build" / "spec" / "names.py").read_text()
    assert unknown_upper_names([page], source, tmp_path) == ["a.md:10: GONE_CODE"]
    assert layout_rows(page) == {"errors.py", "gone.py"}
    assert package_modules(tmp_path / "splice_build") == {"errors.py", "spec/"}


_COUNTS = ("twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen")


def test_runtime_md_counts_the_host_bundles_modules() -> None:
    """The reason the host is one file is its number of modules, which runtime.md gives."""
    bundle = (PACKAGE / "runtime" / "host" / "bundle.mjs").read_text(encoding="utf-8")
    modules = len(re.findall(r"^// ---- \w+\.mjs$", bundle, re.M))
    page = (REPO / "docs" / "runtime.md").read_text(encoding="utf-8")
    said = re.findall(rf"the host has ({'|'.join(_COUNTS)})\b", page)
    assert len(said) == 2 and {_COUNTS.index(word) + 12 for word in said} == {modules}


def test_lifecycle_md_names_the_stat_caches_version() -> None:
    """A cache of another version is ignored as a whole: lifecycle.md says which one is read."""
    from splice_build.install.statcache import VERSION

    page = (REPO / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    assert re.findall(r"another `version` \((\d+) since", page) == [str(VERSION)]


# A list of what no grant may reach, as the pages write it: `.git` is one since a tool granted
# fs.write [".git"] set core.fsmonitor (spec/project_state.py), and two lists left it out.
_STATE_LIST = re.compile(r"`\.splice/`, `\.env\*`(?!, `\.git`)")


def state_lists_without_git(pages: list[Path], root: Path) -> list[str]:
    """Where a page lists the project's protected state (`.splice/`, `.env*`) without `.git`."""
    found = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        found += [_where(page, root, text, m.start()) for m in _STATE_LIST.finditer(text)]
    return found


def test_every_list_of_the_projects_state_names_its_git() -> None:
    assert state_lists_without_git(PAGES, REPO) == []


def test_a_list_of_the_projects_state_without_git_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("never `splice.lock`, `.splice/`, `.env*`, `.git` or\n`.splice/`, `.env*` or\n")
    assert state_lists_without_git([page], tmp_path) == ["page.md:2"]


def test_security_md_quotes_the_refusal_of_a_grant_of_the_whole_project() -> None:
    """The example line of the table of where grants are checked is the code's own."""
    from splice_build.spec.project_state import fs_entry_problem

    page = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    assert f"`manifest.json: permissions.fs.write: {fs_entry_problem('.')}`" in page


_COMMAND_LINE = re.compile(r"(?:`|^[ \t]*(?:\$ )?)(splice (?:[^`\n#]*))", re.M)


def unknown_options(
    pages: list[Path],
    options: dict[str, set[str]],
    root: Path = REPO,
    verbs: dict[str, dict[str, set[str]]] | None = None,
) -> list[str]:
    """Each `--option` (or `-x`) written after `splice <command>` in code or a command line
    that the command does not take, as 'page:line: command --option'; `options` maps each
    command to the options it takes, the global ones included. `verbs` maps a command to the
    options only one of its verbs takes (`registry`: `create-token` takes `--label`, `serve`
    does not): after that verb no other verb's own option is taken."""
    unknown = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in _COMMAND_LINE.finditer(text):
            words = match.group(1).split()[1:]
            while words and words[0].startswith("-"):  # global options before the command
                words = words[2:] if words[0] == "--registry" else words[1:]
            if not words or words[0] not in options:
                continue
            taken = _taken(words, options[words[0]], (verbs or {}).get(words[0], {}))
            for word in words[1:]:
                if word == "--":
                    break
                flag = re.sub(r"[^\w-]+$", "", word.split("=")[0])
                if re.fullmatch(r"--[\w-]+|-\w", flag) and flag not in taken:
                    where = _where(page, root, text, match.start(1))
                    unknown.append(f"{where}: {words[0]} {flag}")
    return unknown


def _taken(words: list[str], options: set[str], verbs: dict[str, set[str]]) -> set[str]:
    """The options of the command line ``words``: the command's, less those of a verb other
    than the one named (none left out when no verb is named)."""
    verb = next((word for word in words[1:] if word in verbs), None)
    if verb is None:
        return options
    return options - set().union(*verbs.values()) | verbs[verb]


def verb_options(commands: dict[str, argparse.ArgumentParser]) -> dict[str, dict[str, set[str]]]:
    """The options each verb alone takes: `registry`'s table (`TAKES`), and of another
    command each option whose help starts with a verb (`create: a name to recognise it by`)."""
    from splice_build.cli.commands.registry_cmd import TAKES

    found: dict[str, dict[str, set[str]]] = {"registry": {v: set(o) for v, o in TAKES.items()}}
    for name, parser in commands.items():
        [first, *_] = [a for a in parser._actions if not a.option_strings] or [None]
        if name in found or first is None or not first.choices:
            continue
        found[name] = {
            verb: {
                a.option_strings[0]
                for a in parser._actions
                if a.option_strings and (a.help or "").startswith(f"{verb}: ")
            }
            for verb in first.choices
        }
    return found


def test_every_option_the_docs_give_a_command_is_one_it_takes() -> None:
    from splice_build.cli.parser import build_parser, load_commands

    parser = build_parser(load_commands())
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    options = {name: set(sub._option_string_actions) for name, sub in commands.choices.items()}
    verbs = verb_options(commands.choices)
    assert {"--key"} == verbs["keys"]["register"] and "--label" in verbs["token"]["create"]
    assert "--label" not in verbs["registry"]["serve"]
    pages = [*PAGES, REPO / "bench" / "README.md"]
    assert len(unknown_options(pages, {name: set() for name in options})) > 100  # it reads them
    assert unknown_options(pages, options, verbs=verbs) == []


def test_an_option_a_command_does_not_take_is_found(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text(
        "Run `splice --json add --accept-permissions @a/b` or `splice add --acept x`.\n\n"
        "```\n$ splice --registry local run --dir . a.b --jsn\nsplice mcp -- --any\n```\n"
        "`splice is` a word, `splice nope --x` no command.\n"
    )
    options = {"add": {"--accept-permissions", "--json"}, "run": {"--dir"}, "mcp": set()}
    assert unknown_options([page], options, tmp_path) == [
        "a.md:1: add --acept",
        "a.md:4: run --jsn",
    ]
    page.write_text(
        "`splice token create --label ci` `splice token list --label ci --json`\n"
        "`splice token --label ci` `splice registry serve --show`\n"
    )
    options = {"token": {"--label", "--json"}, "registry": {"--show"}}
    verbs = {
        "token": {"create": {"--label"}, "list": set()},
        "registry": {"serve": set(), "create-token": {"--show"}},
    }
    assert unknown_options([page], options, tmp_path, verbs) == [
        "a.md:1: token --label",
        "a.md:2: registry --show",
    ]


def test_the_readme_lists_every_page_of_docs() -> None:
    """README's Documentation table is where a reader finds the pages: a new page is listed."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", table))
    assert listed == {f"docs/{page.name}" for page in PAGES if page.parent.name == "docs"}


def codes_of_the_usage_row(page: Path) -> set[str]:
    """The error codes cli.md's table of exit codes names in its row of exit 2."""
    from splice_build.errors import ErrorCode

    [row] = re.findall(r"^\| 2 \|.*$", page.read_text(encoding="utf-8"), re.M)
    return {name for name in re.findall(r"`([A-Z][A-Z_]+)`", row) if name in ErrorCode.__members__}


def test_cli_md_names_every_code_that_exits_2_and_no_other() -> None:
    """A user scripting around exit codes reads cli.md's table: its row of exit 2 names each
    code the CLI ends with 2 (`SpliceError.exit_code`), and no code that ends with 1."""
    from splice_build.errors import EXIT_USAGE, ErrorCode, SpliceError

    usage = {code.value for code in ErrorCode if SpliceError(code, "").exit_code == EXIT_USAGE}
    assert "INVALID_CONFIG" in usage
    assert codes_of_the_usage_row(REPO / "docs" / "cli.md") == usage


def test_the_codes_of_the_usage_row_are_read(tmp_path: Path) -> None:
    page = tmp_path / "cli.md"
    page.write_text("| 1 | `DISK_FULL` |\n| 2 | usage (`USAGE`, `INVALID_REF`, `SPLICE_TOKEN`) |\n")
    assert codes_of_the_usage_row(page) == {"USAGE", "INVALID_REF"}


def test_every_variable_splice_reads_is_named_by_a_page() -> None:
    """A user can look up each `SPLICE_*` variable Splice reads: every such name the package
    (or dodo.py) spells as a string is named by a page (cli.md's table, registry.md's, ...)."""
    read = set(re.findall(r"[\"'](SPLICE_[A-Z0-9_]+)[\"']", _source()))
    assert {"SPLICE_HOME", "SPLICE_MCP_STOP_GRACE"} <= read
    named = {name for page in PAGES for name in re.findall(r"`(SPLICE_\w+)", page.read_text())}
    assert sorted(read - named) == []


def test_mcp_md_names_every_meta_key_the_server_writes() -> None:
    """A client reads `_meta` by its keys: each `io.spliceloom/…` key the server writes is
    named in mcp.md (`io.spliceloom/isolation`, on every call that started a process, was
    named only in security.md)."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (PACKAGE / "mcp").rglob("*.py"))
    written = set(re.findall(r"\{META_PREFIX\}(\w+)", source))
    assert {"isolation", "error", "billed"} <= written
    page = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert sorted(key for key in written if f"io.spliceloom/{key}" not in page) == []


_ARGUMENT_BOUND = re.compile(
    r"`(\w+)`(?:/`(\w+)`)?\s+(?:≤\s*(\d+(?:,\d{3})*)(\s*MiB)?|(\d+)\.\.(\d+))(?:\s*×\s*(\d+)\.\.(\d+))?"
)


def capability_bounds_unlike_the_schema(page: Path, schema: dict) -> tuple[int, list[str]]:
    """How many bounds capabilities.md's table gives (`query` 1..400, `limit` ≤ 20, `maxBytes`
    ≤ 5 MiB, `urls` 1..10 × 8..2048 for the items), and each that differs from the schema of
    a capability of its row (its lengths, values or items, `$ref`s followed)."""
    defs = schema["$defs"]

    def resolved(node: dict) -> dict:
        while "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[1]]
        return node

    def bounds(node: dict) -> tuple[int | None, int | None] | None:
        node = resolved(node)
        for low, high in (
            ("minLength", "maxLength"),
            ("minimum", "maximum"),
            ("minItems", "maxItems"),
        ):
            if low in node or high in node:
                return node.get(low), node.get(high)
        return None

    table = page.read_text(encoding="utf-8").split("## Capabilities with providers", 1)[1]
    table = table.split("\n## ", 1)[0]
    checked, unlike = 0, []
    for names, arguments in re.findall(r"^\| (`[^|]+) \| [^|]+ \| ([^|]+) \|$", table, re.M):
        capabilities = re.findall(r"`([\w.]+)`", names)
        for said in _ARGUMENT_BOUND.finditer(arguments):
            for name in filter(None, said.group(1, 2)):
                properties = [
                    defs[c]["properties"][name]
                    for c in capabilities
                    if name in defs[c].get("properties", {})
                ]
                if not properties:
                    unlike.append(f"{names}: no argument {name}")
                for node in properties:
                    checked += 1
                    if said.group(3):
                        most = int(said.group(3).replace(",", "")) * (2**20 if said.group(4) else 1)
                        ok = (bounds(node) or (None, None))[1] == most
                    else:
                        ok = bounds(node) == (int(said.group(5)), int(said.group(6)))
                    if said.group(7):
                        items = (int(said.group(7)), int(said.group(8)))
                        ok = ok and bounds(resolved(node)["items"]) == items
                    if not ok:
                        unlike.append(f"{names}: {said.group(0)} (schema: {bounds(node)})")
    return checked, unlike


def test_capabilities_md_gives_the_bounds_of_the_argument_schema() -> None:
    """The table of capabilities and their arguments is what the broker checks
    (schemas/capability_args.json), and its list of billed capabilities what the catalogue
    marks billed (schemas/capabilities.json)."""
    import json

    page = REPO / "docs" / "capabilities.md"
    schema = json.loads((PACKAGE / "schemas" / "capability_args.json").read_text(encoding="utf-8"))
    checked, unlike = capability_bounds_unlike_the_schema(page, schema)
    assert checked >= 20 and unlike == []
    catalogue = json.loads((PACKAGE / "schemas" / "capabilities.json").read_text(encoding="utf-8"))
    billed = {entry["name"] for entry in catalogue["capabilities"] if entry["billed"]}
    said = page.read_text(encoding="utf-8").split("Billed capabilities (", 1)[1].split(")", 1)[0]
    assert set(re.findall(r"`([\w.]+)`", said)) == billed


def test_a_bound_unlike_the_schema_is_found(tmp_path: Path) -> None:
    page = tmp_path / "capabilities.md"
    page.write_text(
        "## Capabilities with providers in this build\n\n| a | b | c |\n| --- | --- | --- |\n"
        "| `x.y` / `x.z` | p | `query` 1..400, `limit` ≤ 20, `urls` 1..10 × 8..2048, `gone` ≤ 1 |\n"
    )
    schema = {
        "$defs": {
            "url": {"type": "string", "minLength": 8, "maxLength": 99},
            "x.y": {"properties": {"query": {"minLength": 1, "maxLength": 400}}},
            "x.z": {
                "properties": {
                    "limit": {"minimum": 1, "maximum": 50},
                    "urls": {"minItems": 1, "maxItems": 10, "items": {"$ref": "#/$defs/url"}},
                }
            },
        }
    }
    assert capability_bounds_unlike_the_schema(page, schema) == (
        3,
        [
            "`x.y` / `x.z`: `limit` ≤ 20 (schema: (1, 50))",
            "`x.y` / `x.z`: `urls` 1..10 × 8..2048 (schema: (1, 10))",
            "`x.y` / `x.z`: no argument gone",
        ],
    )


# `splice <words> --option`, the words over lines too (a message written in two strings).
_GIVES_AN_OPTION = re.compile(r"`splice [^`]*\s-")


def message_strings(module: Path) -> str:
    """The strings of a module a user may read (messages, hints, help), one a line: every
    string constant but docstrings, an f-string with `{…}` for each value it formats."""
    import ast

    tree = ast.parse(module.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    skipped = docstrings | {  # and the pieces of an f-string, read as the f-string
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append(
                "".join(
                    part.value if isinstance(part, ast.Constant) else "{…}" for part in node.values
                )
            )
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            found.append(node.value)
    return "\n".join(text.replace("\n", " ") for text in found)


def test_every_option_a_message_gives_a_command_is_one_it_takes(tmp_path: Path) -> None:
    """What the CLI prints names commands too (``hint: Run `splice login --registry URL` ``,
    help texts): each option a message, hint or help of the package gives after `splice
    <command>` is one that command (and verb) takes, as for the pages."""
    from splice_build.cli.parser import build_parser, load_commands

    parser = build_parser(load_commands())
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    options = {name: set(sub._option_string_actions) for name, sub in commands.choices.items()}
    texts = []
    for index, module in enumerate(sorted(PACKAGE.rglob("*.py"))):
        if not _GIVES_AN_OPTION.search(module.read_text(encoding="utf-8")):
            continue  # gives no command an option: not parsed, to keep the test fast
        texts.append(tmp_path / f"{index}-{module.stem}.txt")
        texts[-1].write_text(message_strings(module), encoding="utf-8", errors="backslashreplace")
    assert len(unknown_options(texts, {name: set() for name in options}, tmp_path)) > 10
    assert unknown_options(texts, options, tmp_path, verb_options(commands.choices)) == []


def test_a_message_giving_an_option_a_command_does_not_take_is_found(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(
        '"""`splice add --bogus` in a docstring is no message."""\n'
        "# `splice add --bogus` in a comment neither\n"
        'HINT = "Run `splice add " "--acept` or"\n'
        'NEXT = f"`splice login --registry {url}` `splice list --jsn`"\n'
    )
    assert _GIVES_AN_OPTION.search(module.read_text())
    page = tmp_path / "mod.txt"
    page.write_text(message_strings(module))
    options = {"add": {"--accept-permissions"}, "login": {"--registry"}, "list": {"--json"}}
    assert unknown_options([page], options, tmp_path) == [
        "mod.txt:1: add --acept",
        "mod.txt:2: list --jsn",
    ]
