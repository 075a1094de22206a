"""wait/progress.py: a wait budgeted in the awaited process's progress, with injected clock and readings."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from device_conformance.core.errors import CommandError, ConformanceError, WaitTimeout
from device_conformance.wait.core import Abort, Pending
from device_conformance.wait.progress import (
    Budget,
    Reading,
    Stalled,
    of_process,
    of_values,
    run_progressing,
    until_progressing,
)


class Clock:
    """Time moves only when the wait sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def readings(script: list[tuple[object, bool]]):
    """Progress readings in order (the last one repeats)."""
    it = iter(script)
    last = [None]

    def read() -> Reading:
        try:
            last[0] = next(it)
        except StopIteration:
            pass
        token, busy = last[0]
        return Reading(token, busy, f"token {token}")

    return read


def wait(probe, progress, budget, clock):
    return until_progressing(
        probe,
        what="the thing",
        progress=progress,
        budget=budget,
        interval=1,
        max_interval=1,
        clock=clock,
        sleep=clock.sleep,
    )


def test_a_silent_idle_process_stalls_after_the_window():
    clock = Clock()
    with pytest.raises(Stalled) as failure:
        wait(lambda: Pending("no socket"), readings([(1, False)]), Budget(stall=10, ceiling=100), clock)
    assert clock.now == 10
    assert str(failure.value).splitlines()[:3] == [
        "gave up after 10s waiting for the thing: no progress for 10s (alive, but used no CPU and wrote nothing)",
        "  last seen: no socket",
        "  process: token 1",
    ]


def test_cpu_progress_keeps_the_wait_going_past_the_window():
    clock = Clock()
    # token changes at each of the first 25 looks (CPU time grew), then nothing: stalls 10 s after the last change
    progress = readings([(i, False) for i in range(26)])
    with pytest.raises(Stalled):
        wait(lambda: Pending("no socket"), progress, Budget(stall=10, ceiling=100), clock)
    assert clock.now == 34  # the first reading is taken before the first look: token 25 is read at 24 s


def test_a_runnable_process_counts_as_progress_until_the_ceiling():
    clock = Clock()
    with pytest.raises(WaitTimeout) as failure:
        wait(lambda: Pending("no socket"), readings([(1, True)]), Budget(stall=10, ceiling=100), clock)
    assert not isinstance(failure.value, Stalled)
    assert clock.now == 100
    assert str(failure.value).startswith("timed out after 100s waiting for the thing (still making progress: token 1)")


def test_the_event_ends_the_wait_with_its_value():
    clock = Clock()
    answers = iter([Pending("a"), None, "ready"])
    assert wait(lambda: next(answers), readings([(1, False)]), Budget(stall=10, ceiling=100), clock) == "ready"
    assert clock.now == 2


def test_a_change_in_what_the_probe_sees_is_progress():
    clock = Clock()
    seen = iter([*(Pending(f"phase {i // 5}") for i in range(60)), *[Pending("phase 11")] * 100])
    with pytest.raises(Stalled) as failure:
        wait(lambda: next(seen), readings([(1, False)]), Budget(stall=10, ceiling=100), clock)
    assert clock.now == 10 + 55  # last change seen at 55 s (phase 11)
    assert "last seen: phase 11" in str(failure.value)


def test_abort_ends_the_wait_at_once():
    clock = Clock()

    def probe():
        raise Abort("the process exited with code 3")

    with pytest.raises(Abort, match="code 3"):
        wait(probe, readings([(1, True)]), Budget(stall=10, ceiling=100), clock)
    assert clock.now == 0


def test_a_value_that_cannot_be_sampled_is_a_reading_not_an_error():
    """A kind node booting after `docker restart`: systemd cannot be asked for the kubelet's pid yet."""
    answers = iter([CommandError(["systemctl", "show"], 1, "System has not been booted with systemd"), (42, 7)])

    def sample():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    read = of_values(sample, "kubelet (pid, log mark): ")
    unreadable = read()
    assert unreadable.token == (
        "unreadable",
        f"CommandError: {CommandError(['systemctl', 'show'], 1, 'System has not been booted with systemd')}",
    )
    assert unreadable.busy is False
    assert read() == Reading((42, 7), False, "kubelet (pid, log mark): (42, 7)")


def test_a_process_is_read_from_proc(tmp_path):
    log = tmp_path / "log"
    log.write_text("x" * 7)
    reading = of_process(os.getpid(), [log])()
    assert reading.busy  # we are running while we read
    assert reading.text.startswith(f"pid {os.getpid()}, cpu ")
    assert reading.text.endswith(", log 7 bytes")
    assert of_process(lambda: None)().text == "no process"


def test_a_sleeping_process_is_idle_and_a_stopped_one_too():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        read = of_process(sleeper.pid)
        deadline = time.monotonic() + 30
        while (first := read()).busy and time.monotonic() < deadline:  # until its imports are done
            time.sleep(0.1)
        assert not first.busy and " state S" in first.text
        time.sleep(0.3)
        assert read().token == first.token
    finally:
        sleeper.kill()
        sleeper.wait()


def test_run_progressing_returns_output_and_raises_on_failure():
    assert run_progressing(["sh", "-c", "echo hi"], what="echo", budget=Budget(10, 60)) == "hi\n"
    with pytest.raises(CommandError, match="exit 3"):
        run_progressing(["sh", "-c", "echo no; exit 3"], what="exit", budget=Budget(10, 60))


def test_run_progressing_kills_a_hung_command_and_quotes_its_output():
    started = time.monotonic()
    with pytest.raises(ConformanceError) as failure:
        run_progressing(["sh", "-c", "echo waiting; exec sleep 60"], what="the sleeper", budget=Budget(1, 60))
    assert time.monotonic() - started < 10
    assert "no progress for 1s" in str(failure.value)
    assert str(failure.value).endswith("output:\nwaiting")
