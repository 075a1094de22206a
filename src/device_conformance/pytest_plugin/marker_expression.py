"""`-m` naming a marker nobody registered is a usage error, not a silent "0 selected".

pytest evaluates `-m "smok"` to False for every test and reports "N deselected" with exit code 5: a typo
in a CI selection looks like an empty suite. --strict-markers (pyproject.toml) guards the decorators,
not the expression. So the names in the expression are checked against the registered markers (ours in
markers.py, pytest's and the plugins'), after pytest has accepted its syntax.
"""

from __future__ import annotations

import re

import pytest

# pytest's own lexer (_pytest/mark/expression.py): strings, punctuation, and identifiers of these characters.
_TOKEN = re.compile(r"\s*(?:(?P<string>\"[^\"]*\"|'[^']*')|(?P<punct>[()=,])|(?P<ident>(?:\w|:|\+|-|\.|\[|\]|\\|/)+))")
_KEYWORDS = {"and", "or", "not"}


def marker_names(expression: str) -> list[str]:
    """The marker names an -m expression tests, without keyword arguments (`scenario(id='DP6')` -> scenario)."""
    tokens = [(m.lastgroup, m.group(m.lastgroup or "")) for m in _TOKEN.finditer(expression)]
    names, depth_in_call, index = [], 0, 0
    while index < len(tokens):
        kind, text = tokens[index]
        if depth_in_call:
            depth_in_call += {"(": 1, ")": -1}.get(text, 0) if kind == "punct" else 0
        elif kind == "ident" and text not in _KEYWORDS:
            names.append(text)
            if index + 1 < len(tokens) and tokens[index + 1] == ("punct", "("):
                depth_in_call, index = 1, index + 1  # skip the call's keyword arguments
        index += 1
    return names


def registered_markers(config: pytest.Config) -> set[str]:
    return {re.split(r"[:(]", line, maxsplit=1)[0].strip() for line in config.getini("markers")}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    expression = (config.option.markexpr or "").strip()
    if not expression or hasattr(config, "workerinput"):
        return
    from _pytest.mark.expression import Expression

    try:
        Expression.compile(expression)
    except SyntaxError:
        return  # pytest reports its own syntax error, with the column
    known = registered_markers(config)
    unknown = [name for name in dict.fromkeys(marker_names(expression)) if name not in known]
    if unknown:
        raise pytest.UsageError(
            f"-m {expression!r} names markers that are not registered: {', '.join(unknown)} "
            "(it would select no test)\n"
            f"  fix: use registered markers (`pytest --markers` lists them), e.g. {', '.join(_ours(known))}"
        )


def _ours(known: set[str]) -> list[str]:
    from device_conformance.pytest_plugin.markers import MARKERS

    return [name for name in MARKERS if name in known][:8]
