"""Version-dependent behaviour and known upstream bugs, as data with their upstream references.

A suite asks `outcome(BEHAVIOUR, version)` for what the version under test does, or applies
`known_bug_marker(BUG, version)` so that a test of a bug still present on that version is a strict
xfail naming the issue (and turns red the day the bug is fixed, so the data gets updated).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

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


def outcome(behaviour: Behaviour, version: KubeVersion) -> str:
    return behaviour.at(version).outcome


def known_bug_marker(bug: KnownBug, version: KubeVersion) -> pytest.MarkDecorator | None:
    """A strict xfail for versions the bug affects (None otherwise): never weaken the test instead."""
    if not bug.affects(version):
        return None
    fixed = f"fixed in {bug.fixed_in} by {bug.fix}" if bug.fixed_in else "no fix released"
    return pytest.mark.xfail(
        strict=True, reason=f"known upstream bug {bug.issue} on Kubernetes {version}: {bug.title} ({fixed})"
    )
