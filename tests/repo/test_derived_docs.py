"""Every doc derived from code (cli/docs.py DOCS) is what its code makes now, and the release-notes excerpt is
recorded for the bug numbers KNOWN_BUGS names (expectations/notes_excerpt.py); the fix is one command."""

from __future__ import annotations

import pytest

from device_conformance.cli import docs, suites_table
from device_conformance.core.errors import ConformanceError


def test_no_derived_doc_is_stale():
    outdated = docs.stale(docs.checkout())
    if outdated:  # the fix first and alone: it is what the short summary line has room for
        pytest.fail(f"run `{docs.FIX}`: stale {', '.join(outdated)}", pytrace=False)


README = f"""## Suites

{suites_table.START}

| suite | marker | tests collected (slow), 3 in all | README |
|---|---|---|---|
| smoke: the cluster | `smoke` | 1 | \u2013 |
| device plugin manager | `deviceplugin` | 2 (1) | [suites/device_plugin](suites/device_plugin/README.md) |

{suites_table.END}
"""


def test_the_suites_table_gets_the_collected_counts_and_keeps_the_rest():
    out = suites_table.with_counts(README, {"smoke": (4, 0), "device_plugin": (7, 0)})
    assert "tests collected (slow), 11 in all" in out
    assert "| `smoke` | 4 | \u2013 |" in out
    assert "| `deviceplugin` | 7 | [suites/device_plugin](suites/device_plugin/README.md) |" in out
    assert suites_table.with_counts(out, {"smoke": (1, 0), "device_plugin": (2, 1)}) == README


def test_a_suite_without_a_row_is_named():
    with pytest.raises(ConformanceError, match="no row for suites/dra: add one"):
        suites_table.with_counts(README, {"smoke": (1, 0), "device_plugin": (2, 1), "dra": (5, 0)})
