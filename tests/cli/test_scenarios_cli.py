"""`device-conformance scenarios`: the table builder on a made-up collection, its three renderings, and the
verb end to end on small suites collected for real (a pytest subprocess, as for suites/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from device_conformance.cli.main import main
from device_conformance.cli.scenarios import collect, render
from device_conformance.cli.scenarios.table import DeclaredTest, build
from device_conformance.expectations import scenarios as catalogue

TOTAL = len(catalogue.SCENARIOS)
NOT_REPRODUCIBLE = sum(not scenario.reproducible for scenario in catalogue.SCENARIOS)

FAKE = (
    DeclaredTest("suites/b.py::test_restart", ("DP4", "DP8"), since=("1.33",)),
    DeclaredTest("suites/a.py::test_restart_again", ("DP4",), known_bugs=("kubernetes#118559",)),
    DeclaredTest("suites/a.py::test_blocked_allocate", ("§2.6",)),
    DeclaredTest("suites/a.py::test_checkpoint", ("§2.8",)),
    DeclaredTest("suites/a.py::test_eviction", ("§2.12", "DT-U3")),
    DeclaredTest("suites/a.py::test_untagged"),
)


def test_builder_maps_each_scenario_to_the_tests_that_name_it():
    coverage = build(FAKE)
    by_id = {row.scenario.id: row for row in coverage.rows}
    assert [row.scenario.id for row in coverage.rows] == [s.id for s in catalogue.SCENARIOS]
    assert [t.nodeid for t in by_id["DP4"].tests] == ["suites/a.py::test_restart_again", "suites/b.py::test_restart"]
    assert [t.nodeid for t in by_id["DP8"].tests] == ["suites/b.py::test_restart"]
    assert [t.nodeid for t in by_id["DP-A1"].tests] == ["suites/a.py::test_blocked_allocate"]  # §2.6: its only one
    assert [t.nodeid for t in by_id["DT-U3"].tests] == ["suites/a.py::test_eviction"]
    assert not by_id["DM-U6"].covered  # §2.8 has ten scenarios: the section tag counts for none
    assert coverage.covered == 4 and coverage.total == TOTAL
    assert [(tag, [t.nodeid for t in tests]) for tag, tests in coverage.section_tags] == [
        ("§2.8", ["suites/a.py::test_checkpoint"]),
        ("§2.12", ["suites/a.py::test_eviction"]),
    ]
    assert len(coverage.not_reproducible) == NOT_REPRODUCIBLE
    assert len(coverage.to_write) == TOTAL - 4 - NOT_REPRODUCIBLE


def test_nothing_collected_covers_nothing():
    coverage = build([])
    assert (coverage.covered, coverage.total, coverage.section_tags) == (0, TOTAL, ())
    assert coverage.summary().startswith(f"covered 0 of {TOTAL} scenarios")


def test_text_lists_every_scenario_with_its_tests_or_why_not_and_ends_with_the_summary():
    shown = render.text(build(FAKE))
    lines = shown.splitlines()
    assert lines[0] == "§2.1 Device plugin manager (test/e2e_node/device_plugin_test.go)"
    own = catalogue.SECTION_BY_TAG["§2.13"]  # this suite's own: its source is the code read, not a test file
    assert f"§2.13 {own.title} ({own.source})" in lines
    assert (
        lines[-1] == f"covered 4 of {TOTAL} scenarios (left: {TOTAL - 4 - NOT_REPRODUCIBLE} reproducible here, 2 not)"
    )
    at = lines.index(next(line for line in lines if line.startswith("  DP4 ")))
    assert lines[at + 1].strip() == "suites/a.py::test_restart_again (known bug kubernetes#118559)"
    assert lines[at + 2].strip() == "suites/b.py::test_restart (since 1.33)"
    assert "[1.28+ DevicePluginCDIDevices]" in shown
    assert "not covered: not reproducible here, tests the Go kubeletplugin helper" in shown
    assert "  §2.8  suites/a.py::test_checkpoint" in lines
    assert all(f"  {scenario.id} " in shown for scenario in catalogue.SCENARIOS)


def test_markdown_has_a_table_per_section_and_says_what_is_left():
    shown = render.markdown(build(FAKE))
    assert shown.startswith("# Scenario coverage\n")
    assert f"**covered 4 of {TOTAL} scenarios" in shown
    assert shown.count("| ID | scenario | needs | covered by |") == len(catalogue.SECTIONS)
    assert (
        "| DP4 | Device assignments are kept across kubelet restarts |  | `suites/a.py::test_restart_again` "
        "(known bug kubernetes#118559)<br>`suites/b.py::test_restart` (since 1.33) |"
    ) in shown
    assert "- §2.8: `suites/a.py::test_checkpoint`" in shown
    assert "- DRA15: tests the Go kubeletplugin helper" in shown
    assert "- §2.1: DP1, DP2, DP3, DP5, DP6, DP7, DP9, DP10, DP11\n" in shown
    assert "`make docs` rewrites it" in shown


def test_markdown_escapes_pipes_in_cells():
    shown = render.markdown(build([DeclaredTest("suites/a.py::test_x[a|b]", ("DP1",))]))
    assert "`suites/a.py::test_x[a\\|b]`" in shown


def test_json_carries_the_catalogue_fields_and_the_tests():
    document = json.loads(render.as_json(build(FAKE)))
    assert (document["covered"], document["total"]) == (4, TOTAL)
    dp4 = next(entry for entry in document["scenarios"] if entry["id"] == "DP4")
    assert dp4["source"] == "test/e2e_node/device_plugin_test.go" and dp4["section"] == "2.1"
    assert dp4["tests"][0] == {
        "nodeid": "suites/a.py::test_restart_again",
        "since": [],
        "known_bugs": ["kubernetes#118559"],
    }
    assert document["section_tags"] == {
        "§2.8": ["suites/a.py::test_checkpoint"],
        "§2.12": ["suites/a.py::test_eviction"],
    }


# -- the verb, collecting for real -------------------------------------------------------------------


def _suites(tmp_path: Path, **modules: str) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # rootdir: node IDs start with suites/
    suites = tmp_path / "suites"
    suites.mkdir()
    for name, source in modules.items():
        (suites / f"{name}.py").write_text(source)
    return suites


GOOD = """
import pytest

@pytest.mark.scenario("DP1", "DF2")
def test_a():
    pass

@pytest.mark.since("1.35")
@pytest.mark.scenario("§2.6")
def test_b():
    pass

def test_c():
    pass
"""


def test_collect_reads_what_each_test_declares(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k test_c")  # ignored: the table is of every test
    found = collect.collect(_suites(tmp_path, test_mod=GOOD))
    assert found == (
        DeclaredTest("suites/test_mod.py::test_a", ("DP1", "DF2")),
        DeclaredTest("suites/test_mod.py::test_b", ("§2.6",), since=("1.35",)),
        DeclaredTest("suites/test_mod.py::test_c"),
    )


def test_the_verb_prints_the_table_and_exits_0(tmp_path, capsys, monkeypatch):
    suites = _suites(tmp_path, test_mod=GOOD)
    monkeypatch.chdir(tmp_path)
    assert main(["scenarios", "--suites", "suites"]) == 0  # relative to where the user is
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith(f"covered 3 of {TOTAL} scenarios")
    assert main(["scenarios", "--suites", str(suites), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["covered"] == 3
    assert main(["scenarios", "--suites", str(suites), "--markdown"]) == 0
    assert "| DP-A1 |" in capsys.readouterr().out


def test_no_tests_is_no_error(tmp_path, capsys):
    assert main(["scenarios", "--suites", str(_suites(tmp_path))]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"covered 0 of {TOTAL}")


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("import pytest\n\n@pytest.mark.scenario('DP99')\ndef test_x():\n    pass\n", "'DP99' is not in the scenario"),
        ("def test_x(:\n    pass\n", "SyntaxError"),
    ],
)
def test_a_collection_error_exits_2_with_pytests_words(tmp_path, capsys, source, said):
    suites = _suites(tmp_path, test_bad=source)
    assert main(["scenarios", "--suites", str(suites)]) == 2
    err = capsys.readouterr().err
    assert f"collecting the suites in {suites} failed (pytest exit 2)" in err
    assert "test_bad.py" in err and said in err
    assert f"pytest {suites} --collect-only" in err


def test_a_missing_suites_folder_names_the_fix(tmp_path, capsys):
    assert main(["scenarios", "--suites", str(tmp_path / "nowhere")]) == 2
    assert "pass --suites DIR" in capsys.readouterr().err


def test_the_default_is_this_checkouts_suites():
    assert collect.default_suites() == Path(__file__).resolve().parents[2] / "suites"
