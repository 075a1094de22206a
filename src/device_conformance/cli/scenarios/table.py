"""The coverage table: every catalogue scenario with the tests whose `scenario` markers name it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from device_conformance.expectations import scenarios as catalogue
from device_conformance.expectations.scenarios import Scenario, Section


@dataclass(frozen=True)
class DeclaredTest:
    """What one collected test declares: its scenario tags as written, the minimum versions and known bugs."""

    nodeid: str
    scenarios: tuple[str, ...] = ()
    since: tuple[str, ...] = ()
    known_bugs: tuple[str, ...] = ()

    @property
    def notes(self) -> str:
        """ "since 1.35; known bug kubernetes#126341", or ""."""
        return "; ".join([f"since {v}" for v in self.since] + [f"known bug {issue}" for issue in self.known_bugs])


@dataclass(frozen=True)
class Row:
    scenario: Scenario
    tests: tuple[DeclaredTest, ...]

    @property
    def covered(self) -> bool:
        return bool(self.tests)


@dataclass(frozen=True)
class Coverage:
    """The table, in catalogue order, and the tests whose tags count for no scenario in particular."""

    rows: tuple[Row, ...]
    # A section tag of a section with several scenarios (e.g. "§2.8") -> the tests tagged with it.
    section_tags: tuple[tuple[str, tuple[DeclaredTest, ...]], ...] = ()

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def covered(self) -> int:
        return sum(row.covered for row in self.rows)

    @property
    def left(self) -> tuple[Row, ...]:
        return tuple(row for row in self.rows if not row.covered)

    @property
    def not_reproducible(self) -> tuple[Row, ...]:
        return tuple(row for row in self.left if not row.scenario.reproducible)

    @property
    def to_write(self) -> tuple[Row, ...]:
        """Not covered, but reproducible here: the tests still to write."""
        return tuple(row for row in self.left if row.scenario.reproducible)

    def section_rows(self, section: Section) -> tuple[Row, ...]:
        return tuple(row for row in self.rows if row.scenario.section == section.number)

    def summary(self) -> str:
        return (
            f"covered {self.covered} of {self.total} scenarios "
            f"(left: {len(self.to_write)} reproducible here, {len(self.not_reproducible)} not)"
        )


def build(tests: Iterable[DeclaredTest]) -> Coverage:
    """The coverage of the catalogue by `tests`. Tags are those the marker plugin accepted: catalogue IDs and
    sections; a section tag counts only for a section with a single scenario (catalogue.named_by)."""
    tests = sorted(tests, key=lambda test: test.nodeid)
    covering: dict[str, list[DeclaredTest]] = {scenario.id: [] for scenario in catalogue.SCENARIOS}
    vague: dict[str, list[DeclaredTest]] = {}
    for test in tests:
        for tag in test.scenarios:
            named = catalogue.named_by(tag)
            for scenario in named:
                if test not in covering[scenario.id]:
                    covering[scenario.id].append(test)
            if not named:
                vague.setdefault(tag, []).append(test)
    rows = tuple(Row(scenario, tuple(covering[scenario.id])) for scenario in catalogue.SCENARIOS)
    return Coverage(rows, tuple((tag, tuple(found)) for tag, found in sorted(vague.items(), key=_section_order)))


def _section_order(item: tuple[str, object]) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in item[0].lstrip("§").split("."))
