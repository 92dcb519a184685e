"""The two engines: atheris (libFuzzer) when installed, else a Hypothesis loop.

Both stop after ``runs`` inputs or ``seconds`` (whichever comes first), treat an input that
takes longer than ``timeout`` seconds as a hang, and end with one summary line::

    fuzz <target>: <inputs> inputs in <seconds> s (<rate>/s), findings: <n>

(atheris prints libFuzzer's ``Done <inputs> runs in <seconds> second(s)`` instead.)
"""

from __future__ import annotations

import hashlib
import importlib.util
import signal
import sys
import time
from pathlib import Path

from fuzz.scratch import scratch_dir
from fuzz.targets import Target

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
FINDINGS = HERE / "findings"
ENGINES = ("atheris", "hypothesis")


def default_engine() -> str:
    return "atheris" if importlib.util.find_spec("atheris") is not None else "hypothesis"


def seeds(target: Target) -> list[bytes]:
    directory = CORPUS / target.name
    if not directory.is_dir():
        return [b""]
    return [p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()] or [b""]


def _summary(target: Target, inputs: int, seconds: float, findings: int) -> None:
    rate = inputs / seconds if seconds > 0 else 0.0
    print(
        f"fuzz {target.name}: {inputs} inputs in {seconds:.0f} s ({rate:.0f}/s), findings: {findings}",
        flush=True,
    )


def run(target: Target, engine: str, runs: int | None, seconds: int | None, timeout: int) -> int:
    if engine == "atheris":
        return _atheris(target, runs, seconds, timeout)
    return _hypothesis(target, runs, seconds, timeout)


def _atheris(target: Target, runs: int | None, seconds: int | None, timeout: int) -> int:
    import atheris

    # Comparisons in str methods guide mutation too. (Not the "RegEx" hook: it builds strings
    # from patterns and crashes on a pattern with surrogates, as json_text's has.)
    atheris.enabled_hooks.add("str")
    with atheris.instrument_imports(include=["splice_build"]):
        check = target.setup()
    scratch = scratch_dir(target.name)
    for index, seed in enumerate(seeds(target)):
        (scratch / f"seed-{index}").write_bytes(seed)
    FINDINGS.mkdir(exist_ok=True)
    argv = [
        sys.argv[0],
        str(scratch),
        f"-timeout={timeout}",
        f"-max_len={target.max_len}",
        f"-artifact_prefix={FINDINGS}/{target.name}-",
        "-rss_limit_mb=3072",
        "-print_final_stats=1",
    ]
    if target.dictionary is not None:
        argv.append(f"-dict={HERE / 'dict' / target.dictionary}")
    if runs is not None:
        argv.append(f"-runs={runs}")
    if seconds is not None:
        argv.append(f"-max_total_time={seconds}")
    atheris.Setup(argv, check)
    atheris.Fuzz()
    return 0


class _Hang(Exception):
    pass


def _hypothesis(target: Target, runs: int | None, seconds: int | None, timeout: int) -> int:
    """Seeds, seeds with random splices, and random bytes; in rounds of 500 examples."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    check = target.setup()
    corpus = seeds(target)

    def spliced(seed: bytes, insert: bytes, at: int, cut: int) -> bytes:
        at = at % (len(seed) + 1)
        return seed[:at] + insert + seed[at + cut % 8 :]

    inputs = st.one_of(
        st.sampled_from(corpus),
        st.builds(
            spliced,
            st.sampled_from(corpus),
            st.binary(max_size=32),
            st.integers(0, 1 << 16),
            st.integers(0, 255),
        ),
        st.binary(max_size=min(target.max_len, 512)),
    )
    counter = [0]

    def on_alarm(_signum: int, _frame: object) -> None:
        raise _Hang(f"an input ran longer than {timeout} s")

    signal.signal(signal.SIGALRM, on_alarm)

    @settings(
        max_examples=500,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def one(data: bytes) -> None:
        counter[0] += 1
        signal.alarm(timeout)
        try:
            check(data)
        except BaseException:
            _save(target, data)
            raise
        finally:
            signal.alarm(0)

    started = time.monotonic()
    findings = 0
    try:
        while (runs is None or counter[0] < runs) and (
            seconds is None or time.monotonic() - started < seconds
        ):
            one()
    except Exception as exc:
        findings = 1
        print(f"finding: {type(exc).__name__}: {exc}", file=sys.stderr)
    _summary(target, counter[0], time.monotonic() - started, findings)
    return 1 if findings else 0


def _save(target: Target, data: bytes) -> None:
    FINDINGS.mkdir(exist_ok=True)
    name = f"{target.name}-crash-{hashlib.sha1(data).hexdigest()}"
    path = FINDINGS / name
    if not path.exists():
        path.write_bytes(data)
