"""Verdicts per clause and the whole run's result, and the small engine that turns a check step into one.

A step is a function that records evidence and either returns (PASS), raises ClauseFailed (FAIL) or
NotApplicable (NOT APPLICABLE). Anything else it raises is a FAIL too, with the exception as evidence:
the certifier never lets a subject's misbehaviour abort the run.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from device_conformance.certify.clauses import Clause

PASS, FAIL, NOT_APPLICABLE = "PASS", "FAIL", "NOT APPLICABLE"
SANITY_MODE = "sanity (the tool plays the kubelet over gRPC, no cluster)"
VERDICTS = (PASS, FAIL, NOT_APPLICABLE)


class ClauseFailed(Exception):
    """The subject broke the clause; the message says what was expected and what was seen."""


class NotApplicable(Exception):
    """The clause cannot be checked for this subject or in this mode; the message says why."""


@dataclass
class ClauseResult:
    clause: Clause
    verdict: str
    message: str
    evidence: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # The tool's own traceback lines at the end of `evidence` (an exception no step foresaw); crash.py drops
    # them when the subject crashed, since then they say only how the tool noticed.
    trace: list[str] = field(default_factory=list, repr=False, compare=False)
    # Checks within a clause that could not judge the subject, each "<check>: NOT APPLICABLE: <why>" (an e2e
    # test that passed what it could judge, fixtures/reports.py not_judged): such a PASS is not a plain one.
    not_judged: list[str] = field(default_factory=list)

    @property
    def partly_judged(self) -> bool:
        """A PASS with checks that could not judge the subject."""
        return self.verdict == PASS and bool(self.not_judged)

    def step_evidence(self) -> list[str]:
        """The evidence without the tool's traceback."""
        return self.evidence[: len(self.evidence) - len(self.trace)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.clause.id,
            "title": self.clause.title,
            "rule": self.clause.rule,
            "source": self.clause.source,
            "verdict": self.verdict,
            "message": self.message,
            "evidence": list(self.evidence),
            "not_judged": list(self.not_judged),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Subject:
    """What was certified, as the vendor names it."""

    kind: str  # "device-plugin" or "dra-driver"
    name: str
    version: str
    command: str = ""


@dataclass
class Certification:
    subject: Subject
    api_versions: list[str]
    results: list[ClauseResult] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    finished: float = 0.0
    notes: list[str] = field(default_factory=list)
    # How the subject was judged: the sanity run (the tool plays the kubelet) or the e2e suites on a cluster.
    mode: str = SANITY_MODE

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.results) for v in VERDICTS}

    def partly_judged(self) -> list[ClauseResult]:
        """The PASSes with checks that could not judge the subject."""
        return [r for r in self.results if r.partly_judged]

    @property
    def passed(self) -> bool:
        return not any(r.verdict == FAIL for r in self.results)

    def verdict_of(self, clause_id: str) -> str:
        return next(r.verdict for r in self.results if r.clause.id == clause_id)

    def failed_ids(self) -> list[str]:
        return [r.clause.id for r in self.results if r.verdict == FAIL]

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": vars(self.subject),
            "api_versions": list(self.api_versions),
            "started": self.started,
            "finished": self.finished,
            "passed": self.passed,
            "counts": self.counts(),
            "partly_judged": len(self.partly_judged()),
            "notes": list(self.notes),
            "mode": self.mode,
            "clauses": [r.to_dict() for r in self.results],
        }


class Evidence:
    """What a step saw, line by line (RPC requests and answers, files, timings)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        self.lines.append(line)

    def extend(self, lines: Iterable[str]) -> None:
        self.lines.extend(lines)


Step = Callable[[Evidence], str | None]


def run_step(clause: Clause, step: Step) -> ClauseResult:
    """Run one check step; its return value is the PASS message."""
    evidence, started, trace = Evidence(), time.monotonic(), []
    try:
        message, verdict = step(evidence) or "as required", PASS
    except ClauseFailed as exc:
        message, verdict = str(exc), FAIL
    except NotApplicable as exc:
        message, verdict = str(exc), NOT_APPLICABLE
    except Exception as exc:  # the subject misbehaving in a way no step foresaw is still its failure
        message, verdict = f"{type(exc).__name__}: {exc}", FAIL
        trace = traceback.format_exc().rstrip().splitlines()[-6:]
        evidence.extend(trace)
    return ClauseResult(clause, verdict, message, evidence.lines, time.monotonic() - started, trace)
