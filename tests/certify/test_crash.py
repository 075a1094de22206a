"""certify/crash.py on its own: shell subjects that panic, and steps that stand in for a certifier's."""

from device_conformance.certify.clauses import DEVICE_PLUGIN_CLAUSES
from device_conformance.certify.crash import CrashWatch
from device_conformance.certify.subject import SubjectProcess
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, ClauseFailed, Evidence

ONE, TWO, THREE = DEVICE_PLUGIN_CLAUSES[:3]
PANIC = "echo 'panic: runtime error: invalid memory address or nil pointer dereference' >&2; exit 2"


def restart_only(ev, restart):
    restart()


def test_a_crash_during_a_step_is_one_fail_quoting_the_log_and_the_subject_runs_again(tmp_path):
    flag = tmp_path / "crashed-once"
    # The first process sleeps until the step kills it; the restarted one keeps running.
    proc = SubjectProcess(f"sh -c 'if [ -e {flag} ]; then sleep 60; else touch {flag}; sleep 60; fi'", tmp_path / "log")
    watch = CrashWatch(proc, restart_only)
    proc.start()

    def step(ev: Evidence) -> None:
        ev.add("-> Allocate")
        proc.log_path.open("a").write("panic: Allocate: nil map\n")
        import os
        import signal

        os.killpg(proc.pid, signal.SIGSEGV)
        proc.exited_within(5)
        raise TimeoutError()  # how the tool noticed: never the verdict's text

    try:
        result = watch.run(ONE, step)
        after = watch.run(TWO, lambda ev: "fine")
    finally:
        proc.stop()
    assert (result.verdict, result.message) == (FAIL, "the subject crashed during this clause (killed by SIGSEGV)")
    assert result.evidence[:2] == ["-> Allocate", "subject process: killed by SIGSEGV"]
    assert "  log: panic: Allocate: nil map" in result.evidence
    assert not any("Traceback" in line or "TimeoutError" in line for line in result.evidence)
    assert result.evidence[-1].startswith("certifier: started the subject again (killed by SIGSEGV before)")
    assert (after.verdict, after.message) == (PASS, "fine")
    assert proc.starts == 2


def test_a_subject_that_panics_at_every_start_costs_one_fail(tmp_path):
    proc = SubjectProcess(f'sh -c "{PANIC}"', tmp_path / "log")
    watch = CrashWatch(proc, restart_only)
    proc.start()
    proc.exited_within(5)

    def needs_registration(ev: Evidence) -> None:
        watch.check_up()
        raise ClauseFailed("no RegisterRequest")

    try:
        results = [watch.run(c, needs_registration) for c in (ONE, TWO, THREE)]
    finally:
        proc.stop()
    assert [r.verdict for r in results] == [FAIL, NOT_APPLICABLE, NOT_APPLICABLE]
    # Dead before the first clause looked, but never seen up: it crashed where it was first looked at.
    assert results[0].message == "the subject crashed during this clause (exit 2); the check saw: no RegisterRequest"
    assert "  log: panic: runtime error: invalid memory address or nil pointer dereference" in results[0].evidence
    assert "certifier: the restarted subject crashed at start-up too (exit 2):" in results[0].evidence
    assert [r.message for r in results[1:]] == [f"the subject crashed at start-up, see {ONE.id}"] * 2
    assert proc.starts == 2


def test_a_crash_while_a_record_is_judged_is_charged_to_the_next_clause_using_the_subject(tmp_path):
    proc = SubjectProcess(f'sh -c "sleep 0.2; {PANIC}"', tmp_path / "log")
    calls = []
    watch = CrashWatch(proc, lambda ev, restart: calls.append(restart()))
    proc.start()
    proc.exited_within(5)
    try:
        record = watch.run(ONE, lambda ev: "recorded version ok", uses_subject=False)
        live = watch.run(TWO, lambda ev: None)
    finally:
        proc.stop()
    assert (record.verdict, record.message) == (PASS, "recorded version ok")
    assert (live.verdict, live.message) == (FAIL, "the subject crashed before this clause (exit 2)")
    assert calls == ["exit 2"]


def test_every_fail_of_a_live_subject_quotes_its_log_tail(tmp_path):
    proc = SubjectProcess("sh -c 'for i in $(seq 1 40); do echo line $i; done; sleep 60'", tmp_path / "log")
    watch = CrashWatch(proc, restart_only)
    proc.start()

    def step(ev: Evidence) -> None:
        for _ in range(50):
            if "line 40" in proc.log_path.read_text():
                break
            __import__("time").sleep(0.1)
        raise ClauseFailed("wrong answer")

    try:
        result = watch.run(ONE, step)
    finally:
        proc.stop()
    assert (result.verdict, result.message) == (FAIL, "wrong answer")
    assert result.evidence[0] == f"subject log {proc.log_path}, last 15 line(s):"
    assert result.evidence[1:] == [f"  log: line {n}" for n in range(26, 41)]
