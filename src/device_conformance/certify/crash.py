"""A subject that crashes gets ONE FAIL that quotes its own log, is started again, and later clauses are judged
on a live subject (or NOT APPLICABLE when it dies again at start-up).

How a certifier wires it in (device_plugin.py does exactly this):

1. Build one watch after the SubjectProcess (or with None when the subject was started outside the tool):

       self.crash = CrashWatch(self.proc, self._recover)

2. Run every clause through it instead of `run_step`, saying whether the step talks to the subject:

       cert.results.append(self.crash.run(clause, step, uses_subject=True))

   `uses_subject=False` is for steps that only judge what was already recorded (a RegisterRequest, files
   on disk): when the subject died while such a step ran and the step passed (or was NOT APPLICABLE), the crash
   is charged to the next clause that uses the subject or FAILs, which is where a user would look for it (a
   crash inside the kubelet's own GetDevicePluginOptions at registration is DP-OPTIONS's FAIL, not
   DP-REG-VERSION's; a subject exiting because it cannot bind a socket name no kubelet could dial is
   DP-REG-ENDPOINT's, DP-REG-VERSION NOT APPLICABLE with nothing registered).

3. Give the recovery callback, `recover(ev: Evidence, restart: Callable[[], str]) -> None`. It notes what it
   needs (e.g. how many registrations it has seen), calls `restart()` exactly once (the watch's restart:
   stops what is left of the subject and starts it again; returns how the old process ended), then waits
   until the subject is back (registered, serving) and resets the certifier's per-process state (channels,
   cached answers). It raises any exception when the subject did not come back; its message goes to the
   evidence. The watch calls it only after a crash.

4. Before waiting for the subject in a step (registration, a socket to appear), call
   `self.crash.check_up()`: it raises NotApplicable("the subject crashed at start-up, see <clause>") once the
   subject has crashed again right after a restart, so no clause waits out a timeout on a dead subject.
   Steps that talk to the subject should also fail fast when `not proc.running()` rather than wait for a
   connection; the watch turns that FAIL into the crash FAIL.

What the watch does per clause: a step that ends while the subject is not running (or that restarted it
after an exit the tool did not cause, SubjectProcess.crashes) is FAIL "the subject crashed during this clause
(exit 2)" (or "... before this clause" when it was already dead when the clause began and had been up at the end of
the clause before; a subject that dies between its start and the first clause that looks crashed during that one,
whatever the machine's speed), with the step's own
evidence (not the tool's traceback, which only says how the tool noticed) and the last LOG_TAIL_LINES lines
of the subject's log, taken before the restart. Every other FAIL in a run with a subject process gets the
log tail too. A subject that dies again within STARTUP_GRACE of its restart, before it is back, or before
the next clause begins, crashed at start-up: the clauses after it that use the subject are NOT APPLICABLE
naming the clause that failed, so a subject that panics at registration costs one FAIL, not one per clause.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import grpc

from device_conformance.certify import limits
from device_conformance.certify.clauses import Clause
from device_conformance.certify.subject import LOG_TAIL_LINES, SubjectProcess
from device_conformance.certify.verdicts import (
    FAIL,
    NOT_APPLICABLE,
    ClauseResult,
    Evidence,
    NotApplicable,
    Step,
    run_step,
)

# A restarted subject that exits within this long of its start crashed at start-up (a panic while reading
# its config, while registering): Go plugins reach Register within a second; this leaves room on a loaded
# machine. The check also counts a subject found dead before the next clause begins, so a slower crash is
# still seen as one without a longer wait here.
STARTUP_GRACE = 2.0

Recover = Callable[[Evidence, Callable[[], str]], None]
# A call the subject broke off (it closed the connection): a dying process closes its sockets before it can be
# reaped, so wait for the exit there, and the crash is the clause's that made the call.
BROKEN = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


def log_evidence(proc: SubjectProcess, lines: int = LOG_TAIL_LINES, *, this_start: bool = False) -> list[str]:
    """The subject's last log lines, as evidence lines (with this_start: of the current process only)."""
    tail = proc.log_tail(lines, this_start=this_start)
    if not tail:
        return [f"subject log {proc.log_path}: empty"]
    return [f"subject log {proc.log_path}, last {len(tail)} line(s):", *(f"  log: {line}" for line in tail)]


class CrashWatch:
    def __init__(self, proc: SubjectProcess | None, recover: Recover) -> None:
        self.proc, self._recover = proc, recover
        self.startup_crash: str | None = None  # the clause whose FAIL reports a start-up crash
        self._restarted_by: str | None = None  # the clause after which the watch restarted the subject
        self._last_end = float("-inf")  # when the last clause ended (monotonic)

    def after_broken_call(self, err: grpc.RpcError) -> None:
        """After a call the subject broke off (BROKEN): give a dying subject time to be reaped, so that `run`
        sees the crash in this clause."""
        if self.proc is not None and err.code() in BROKEN:
            self.proc.exited_within(limits.EXIT_AFTER_BROKEN_CALL)

    def check_up(self) -> None:
        """NotApplicable once the subject crashed at start-up (see the module docstring, step 4)."""
        if self.startup_crash:
            raise NotApplicable(f"the subject crashed at start-up, see {self.startup_crash}")

    def run(self, clause: Clause, step: Step, *, uses_subject: bool = True) -> ClauseResult:
        try:
            return self._run(clause, step, uses_subject)
        finally:
            self._last_end = time.monotonic()

    def _run(self, clause: Clause, step: Step, uses_subject: bool) -> ClauseResult:
        if self.proc is None:
            return run_step(clause, step)
        if uses_subject and self.startup_crash:
            return run_step(clause, lambda _: self.check_up())
        if uses_subject and self._restarted_by and not self.proc.running():
            # Dead again before any clause could use it: it does not survive its own start.
            self.startup_crash = self._restarted_by
            return run_step(clause, lambda _: self.check_up())
        up_before, crashes_before = self.proc.running(), len(self.proc.crashes)
        result = run_step(clause, step)
        crashed = not self.proc.running() or len(self.proc.crashes) > crashes_before
        if crashed and (uses_subject or result.verdict == FAIL):
            return self._crash_fail(result, up_before)
        if uses_subject and result.verdict != NOT_APPLICABLE:
            self._restarted_by = None  # it served a clause after its restart: not a start-up crash
        if result.verdict == FAIL:
            result.evidence.extend(log_evidence(self.proc))
        return result

    def _crash_fail(self, result: ClauseResult, up_before: bool) -> ClauseResult:
        assert self.proc is not None
        status = self.proc.crashes[-1] if self.proc.crashes else self.proc.exit_status()
        # "before" only for a subject seen up since its start: one that never got that far died where it was
        # first looked at, and saying so does not depend on how quickly the certifier reached the clause.
        when = "before" if not up_before and self.proc.started_at < self._last_end else "during"
        message = f"the subject crashed {when} this clause ({status})"
        if result.verdict == FAIL and not result.trace:  # a traceback's text says only how the tool noticed
            message += f"; the check saw: {result.message}"
        evidence = [*result.step_evidence(), f"subject process: {status}", *log_evidence(self.proc)]
        ev = Evidence()
        self._restart(result.clause.id, ev)
        evidence += ev.lines
        return ClauseResult(result.clause, FAIL, message, evidence, result.seconds)

    def _restart(self, clause_id: str, ev: Evidence) -> None:
        """Start the subject again through the certifier's callback; a second crash at once is a start-up crash."""
        assert self.proc is not None
        proc = self.proc
        if proc.running():  # the step restarted it already (after the crash it recorded)
            return

        def restart() -> str:
            ended = proc.restart()
            ev.add(f"certifier: started the subject again ({ended} before) for the remaining clauses")
            return ended

        try:
            self._recover(ev, restart)
        except Exception as exc:  # any reason it did not come back
            ev.add(f"certifier: the restarted subject did not come back: {type(exc).__name__}: {exc}")
        left = STARTUP_GRACE - (time.monotonic() - proc.started_at)
        if not proc.running() or proc.exited_within(max(left, 0.0)):
            self.startup_crash = clause_id
            ev.add(f"certifier: the restarted subject crashed at start-up too ({proc.exit_status()}):")
            ev.extend(log_evidence(proc, this_start=True))
        else:
            self._restarted_by = clause_id
