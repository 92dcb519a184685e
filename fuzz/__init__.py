"""Coverage-guided fuzzing of every parser that takes outside input (see ``fuzz/README.md``).

``python -m fuzz <target> --runs N`` (or ``--seconds S``) runs one target with atheris when it
is installed (the ``fuzz`` extra), else with Hypothesis. Each target calls the real code path
and accepts only the error types that path documents; anything else is a finding.
"""
