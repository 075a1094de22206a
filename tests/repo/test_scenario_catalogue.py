"""The scenario catalogue (expectations/scenarios.py): its IDs and fields, and the suites' tags against it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from device_conformance.cli.scenarios import collect
from device_conformance.expectations import scenarios as catalogue

SUITES = Path(__file__).resolve().parents[2] / "suites"

# Upstream's numbered IDs as the catalogue gives them; ours: family, hyphen, context letter, number; this
# suite's own scenarios (§2.13): family, hyphen, X, number.
UPSTREAM_ID = re.compile(r"^(DP|DM|DF|DRA)([1-9][0-9]*)$")
NUMBERED_HERE = re.compile(r"^(DP-[HMAC]|DM-U|DRA-[TSHEU]|DT-U)([1-9][0-9]*)$")
OWN_ID = re.compile(r"^(DP-X|DRA-X|DT-X)([1-9][0-9]*)$")
OWN_SECTION = "2.13"
MINOR = re.compile(r"^1\.[0-9]+$")
UPSTREAM_FILE = re.compile(r"^(test|pkg)/[a-z0-9_/]+\.go$")
# §2.13's sources: the code guarded, `<file>.go <function>, ...`, files joined with "; "; never a test file.
_CODE = r"pkg/[a-z0-9_/]+(?<!_test)\.go [A-Za-z][A-Za-z0-9_.]*(, [A-Za-z][A-Za-z0-9_.]*)*"
GUARDED_CODE = re.compile(rf"^{_CODE}(; {_CODE})*$")
FEATURES = re.compile(r"^[A-Z][A-Za-z]+(, [A-Z][A-Za-z]+)*$")


def _id_parts(scenario_id: str) -> tuple[str, str]:
    return (UPSTREAM_ID.match(scenario_id) or NUMBERED_HERE.match(scenario_id) or OWN_ID.match(scenario_id)).groups()


def test_ids_are_unique_and_follow_the_scheme():
    ids = [scenario.id for scenario in catalogue.SCENARIOS]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert [i for i in ids if not (UPSTREAM_ID.match(i) or NUMBERED_HERE.match(i) or OWN_ID.match(i))] == []


def test_own_ids_are_exactly_the_own_section():
    """An X ID is this suite's own scenario, in §2.13 and nowhere else; §2.13 holds nothing else."""
    own = [scenario.id for scenario in catalogue.SCENARIOS if OWN_ID.match(scenario.id)]
    assert own == [scenario.id for scenario in catalogue.in_section(OWN_SECTION)]
    assert own == [
        *(f"DP-X{n}" for n in range(1, 5)),
        *(f"DRA-X{n}" for n in range(1, 6)),
        "DT-X1",
        "DT-X2",
        "DT-X3",
        "DT-X4",
    ]


def test_each_id_family_is_numbered_from_one_without_gaps():
    numbers: dict[str, list[int]] = {}
    for scenario in catalogue.SCENARIOS:
        prefix, number = _id_parts(scenario.id)
        numbers.setdefault(prefix, []).append(int(number))
    assert {prefix: found for prefix, found in numbers.items() if found != list(range(1, len(found) + 1))} == {}


def test_upstream_numbered_scenarios_keep_their_ids():
    upstream = {"DP": 11, "DM": 3, "DF": 7, "DRA": 16}
    for family, count in upstream.items():
        for number in range(1, count + 1):
            assert f"{family}{number}" in catalogue.BY_ID
    assert sum(bool(UPSTREAM_ID.match(scenario.id)) for scenario in catalogue.SCENARIOS) == sum(upstream.values())


def test_the_count_is_deliberate():
    """124: one per row or bullet of §2, with the e2e bullets of §2.9/§2.10 that join several upstream tests
    split into one scenario per test (the module docstring says why): 111 mirroring upstream (§2.1-§2.12),
    and 13 of this suite's own beyond the simplest setup (§2.13: 4 DP-X, 5 DRA-X, 4 DT-X). Change it with
    the catalogue, the README and docs/scenarios.md."""
    assert len(catalogue.SCENARIOS) == 124
    per_section = Counter(scenario.section for scenario in catalogue.SCENARIOS)
    assert per_section == {
        "2.1": 11, "2.2": 3, "2.3": 7, "2.4": 2, "2.5": 3, "2.6": 1, "2.7": 1,
        "2.8": 10, "2.9": 34, "2.10": 30, "2.11": 3, "2.12": 6, "2.13": 13,
    }  # fmt: skip
    assert sum(n for section, n in per_section.items() if section != OWN_SECTION) == 111


def test_every_scenario_is_in_a_section_in_catalogue_order():
    numbers = [section.number for section in catalogue.SECTIONS]
    seen = [numbers.index(scenario.section) for scenario in catalogue.SCENARIOS]
    assert seen == sorted(seen)
    assert set(seen) == set(range(len(numbers)))


def test_fields_are_well_formed():
    for scenario in catalogue.SCENARIOS:
        assert scenario.title.strip() and len(scenario.title) <= 110, scenario.id
        source = GUARDED_CODE if scenario.section == OWN_SECTION else UPSTREAM_FILE
        assert source.match(scenario.source), scenario.id
        for minor in (scenario.since, scenario.until):
            assert not minor or MINOR.match(minor), scenario.id
        assert not scenario.feature or FEATURES.match(scenario.feature), scenario.id
    for section in catalogue.SECTIONS:
        if section.number != OWN_SECTION:
            assert UPSTREAM_FILE.match(section.source), section.number


def test_the_own_section_says_it_is_not_upstreams():
    """§2.13 mirrors no upstream test: its title and source say so, and every scenario in it needs what the
    tests covering it say (since, feature) rather than a default of the section."""
    section = catalogue.SECTION_BY_TAG[f"§{OWN_SECTION}"]
    assert "this suite's own" in section.title and "not upstream" in section.title
    assert section.source.startswith("code read: ") and section.source.endswith("no upstream test")
    assert all(scenario.source != section.source for scenario in catalogue.in_section(OWN_SECTION))
    assert {s.id: s.needs for s in catalogue.in_section(OWN_SECTION)} == {
        "DP-X1": "",
        "DP-X2": "1.34+ KubeletPodResourcesGet",
        "DP-X3": "",
        "DP-X4": "",
        "DRA-X1": "1.32+ DynamicResourceAllocation",
        "DRA-X2": "1.36+ ResourceHealthStatus, DRAAdminAccess",
        "DRA-X3": "1.34+ DynamicResourceAllocation",
        "DRA-X4": "1.34+ DynamicResourceAllocation",
        "DRA-X5": "1.36+ ResourceHealthStatus",
        "DT-X1": "1.35+ DRADeviceTaints",
        "DT-X2": "1.35+ DRADeviceTaints",
        "DT-X3": "1.36+ DRADeviceTaints",
        "DT-X4": "1.35+ DRADeviceTaints",
    }


def test_not_reproducible_says_why():
    blocked = {s.id: s.not_reproducible for s in catalogue.SCENARIOS if not s.reproducible}
    assert sorted(blocked) == ["DRA-E23", "DRA15"]
    assert all(len(reason) > 30 for reason in blocked.values())


def test_what_a_tag_names():
    assert catalogue.named_by("DP6") == (catalogue.BY_ID["DP6"],)
    assert catalogue.named_by("§2.6") == (catalogue.BY_ID["DP-A1"],)  # the section's only scenario
    assert catalogue.named_by("§2.7") == (catalogue.BY_ID["DP-C1"],)
    assert catalogue.named_by("§2.8") == ()  # ten scenarios: which one is not said
    assert catalogue.named_by("DP99") == ()
    assert catalogue.named_by("§2.13") == ()  # thirteen scenarios
    assert catalogue.is_known("§2.8") and catalogue.is_known("DRA-E7")
    assert catalogue.is_known("§2.13") and catalogue.is_known("DP-X1") and catalogue.is_known("DT-X4")
    assert not catalogue.is_known("§2.14") and not catalogue.is_known("DP-X5") and not catalogue.is_known("dp1")


def test_every_tag_the_suites_use_is_in_the_catalogue():
    """The plugin refuses unknown tags at collection, so a clean collection is the proof; checked again here
    against the catalogue itself, in case the plugin's check is ever loosened."""
    tags = {tag for test in collect.collect(SUITES) for tag in test.scenarios}
    assert tags, "no test in suites/ carries a scenario marker"
    assert sorted(tag for tag in tags if not catalogue.is_known(tag)) == []
