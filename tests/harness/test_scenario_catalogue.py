"""The scenario catalogue (expectations/scenarios.py): its IDs and fields, and the suites' tags against it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from device_conformance.cli.scenarios import collect
from device_conformance.expectations import scenarios as catalogue

SUITES = Path(__file__).resolve().parents[2] / "suites"

# Upstream's numbered IDs as the catalogue gives them; ours: family, hyphen, context letter, number.
UPSTREAM_ID = re.compile(r"^(DP|DM|DF|DRA)([1-9][0-9]*)$")
NUMBERED_HERE = re.compile(r"^(DP-[HMAC]|DM-U|DRA-[TSHEU]|DT-U)([1-9][0-9]*)$")
MINOR = re.compile(r"^1\.[0-9]+$")


def test_ids_are_unique_and_follow_the_scheme():
    ids = [scenario.id for scenario in catalogue.SCENARIOS]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert [i for i in ids if not (UPSTREAM_ID.match(i) or NUMBERED_HERE.match(i))] == []


def test_each_id_family_is_numbered_from_one_without_gaps():
    numbers: dict[str, list[int]] = {}
    for scenario in catalogue.SCENARIOS:
        prefix, number = (UPSTREAM_ID.match(scenario.id) or NUMBERED_HERE.match(scenario.id)).groups()
        numbers.setdefault(prefix, []).append(int(number))
    assert {prefix: found for prefix, found in numbers.items() if found != list(range(1, len(found) + 1))} == {}


def test_upstream_numbered_scenarios_keep_their_ids():
    upstream = {"DP": 11, "DM": 3, "DF": 7, "DRA": 16}
    for family, count in upstream.items():
        for number in range(1, count + 1):
            assert f"{family}{number}" in catalogue.BY_ID
    assert sum(bool(UPSTREAM_ID.match(scenario.id)) for scenario in catalogue.SCENARIOS) == sum(upstream.values())


def test_the_count_is_deliberate():
    """111: one per row or bullet of §2, with the e2e bullets of §2.9/§2.10 that join several upstream tests
    split into one scenario per test (the module docstring says why). Change it with the catalogue, the
    README and docs/scenarios.md."""
    assert len(catalogue.SCENARIOS) == 111
    per_section = Counter(scenario.section for scenario in catalogue.SCENARIOS)
    assert per_section == {
        "2.1": 11, "2.2": 3, "2.3": 7, "2.4": 2, "2.5": 3, "2.6": 1, "2.7": 1,
        "2.8": 10, "2.9": 34, "2.10": 30, "2.11": 3, "2.12": 6,
    }  # fmt: skip


def test_every_scenario_is_in_a_section_in_catalogue_order():
    numbers = [section.number for section in catalogue.SECTIONS]
    seen = [numbers.index(scenario.section) for scenario in catalogue.SCENARIOS]
    assert seen == sorted(seen)
    assert set(seen) == set(range(len(numbers)))


def test_fields_are_well_formed():
    for scenario in catalogue.SCENARIOS:
        assert scenario.title.strip() and len(scenario.title) <= 110, scenario.id
        assert re.match(r"^(test|pkg)/[a-z0-9_/]+\.go$", scenario.source), scenario.id
        for minor in (scenario.since, scenario.until):
            assert not minor or MINOR.match(minor), scenario.id
        assert not scenario.feature or re.match(r"^[A-Z][A-Za-z]+$", scenario.feature), scenario.id
    for section in catalogue.SECTIONS:
        assert re.match(r"^(test|pkg)/[a-z0-9_/]+\.go$", section.source), section.number


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
    assert catalogue.is_known("§2.8") and catalogue.is_known("DRA-E7")
    assert not catalogue.is_known("§2.13") and not catalogue.is_known("DP-X1") and not catalogue.is_known("dp1")


def test_every_tag_the_suites_use_is_in_the_catalogue():
    """The plugin refuses unknown tags at collection, so a clean collection is the proof; checked again here
    against the catalogue itself, in case the plugin's check is ever loosened."""
    tags = {tag for test in collect.collect(SUITES) for tag in test.scenarios}
    assert tags, "no test in suites/ carries a scenario marker"
    assert sorted(tag for tag in tags if not catalogue.is_known(tag)) == []
