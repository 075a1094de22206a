"""Version-dependent behaviour and known upstream bugs, as data with their upstream references.

A suite asks `outcome(BEHAVIOUR, version)` for what the version under test does, or marks a test of a
known bug `@pytest.mark.known_bug(BUG)`: on versions the bug affects, the test is a strict xfail naming
the issue (and turns red the day the bug is fixed, so the data gets updated). The pytest side of that
lives in pytest_plugin/declarative_markers.py; this package stays plain data and never imports pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

from device_conformance.expectations.versions import KubeVersion


@dataclass(frozen=True)
class Since:
    """One stretch of versions: from 1.<minor> (inclusive) until the next entry's minor."""

    minor: int
    outcome: str
    reference: str


@dataclass(frozen=True)
class Behaviour:
    """What the kubelet does in some situation, by version; entries sorted by minor."""

    name: str
    entries: tuple[Since, ...]

    def at(self, version: KubeVersion) -> Since:
        matching = [entry for entry in self.entries if version.at_least(entry.minor)]
        if not matching:
            raise LookupError(f"no recorded outcome of {self.name!r} for Kubernetes {version}")
        return matching[-1]


@dataclass(frozen=True)
class KnownBug:
    """An upstream bug a test shows; affected from 1.<since> until (excluding) the fixed version."""

    issue: str
    title: str
    since_minor: int
    fixed_in: KubeVersion | None = None
    fix: str = ""

    def affects(self, version: KubeVersion) -> bool:
        if not version.at_least(self.since_minor):
            return False
        return self.fixed_in is None or version < self.fixed_in

    def describe(self, version: KubeVersion) -> str:
        """What a test of this bug says on `version`: the issue, the title and the fix, if there is one."""
        fixed = f"fixed in {self.fixed_in} by {self.fix}" if self.fixed_in else "no fix released"
        return f"known upstream bug {self.issue} on Kubernetes {version}: {self.title} ({fixed})"


def outcome(behaviour: Behaviour, version: KubeVersion) -> str:
    return behaviour.at(version).outcome
