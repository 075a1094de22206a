"""A kubelet crash as an outcome (KubeletControl.wait_exited, .stays_up) against fake services: one whose kubelet
exits for good (the local provider: nobody restarts a kubelet that exited by itself) and one whose supervisor starts
it again (kind's systemd unit, Restart=always: exited() is always None, the pid changes)."""

from __future__ import annotations

import time

import pytest

from device_conformance.core.errors import WaitTimeout
from device_conformance.node import kubelet as kubelet_module
from device_conformance.node.kubelet import KubeletControl, KubeletExited, panic_quote

# What a Go panic looks like on the kubelet's stderr (runtime/panic.go printpanics, then the traces).
PANIC = """\
E1128 02:50:01.000001   4242 manager.go:412] "Unhandled Error" err="observed a panic"
panic: runtime error: invalid memory address or nil pointer dereference [recovered]
\tpanic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x2a1b3c4]

goroutine 312 [running]:
k8s.io/kubernetes/pkg/kubelet/cm/dra.(*Manager).HandleWatchResourcesStream(0xc000a1b2c0)
\tk8s.io/kubernetes/pkg/kubelet/cm/dra/manager.go:1042 +0x1a4"""


class CrashingService:
    """A kubelet that crashes `after` seconds from now (None: never), logging `crash_log`; `restarts`: its
    supervisor starts it again at once with a new pid (systemd), else it stays gone with `status`."""

    def __init__(self, after: float | None, crash_log: str = PANIC, restarts: bool = False) -> None:
        self.crash_at = None if after is None else time.monotonic() + after
        self.crash_log, self.restarts = crash_log, restarts
        self.log = ["I1128 02:49:00.000000   4242 server.go:1] started", "I1128 old line"]
        self.status = "exited with status 2"  # what Go's exit on an unrecovered panic gives

    def crashed(self) -> bool:
        if self.crash_at is not None and time.monotonic() >= self.crash_at:
            self.log += self.crash_log.splitlines()
            if self.restarts:
                self.log.append("I1128 02:50:02.000000   5555 server.go:1] started")
            self.crash_at = None
            self._crashed = True
        return getattr(self, "_crashed", False)

    def pid(self):
        if self.crashed():
            return 5555 if self.restarts else 0
        return 4242

    def exited(self):
        return self.status if self.crashed() and not self.restarts else None

    def log_mark(self):
        return len(self.log)

    def log_since(self, mark):
        return "\n".join(self.log[mark:])


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch):
    monkeypatch.setattr(kubelet_module, "EXIT_POLL", 0.01)


PANIC_QUOTE = "\n".join(PANIC.splitlines()[1:])


def test_wait_exited_returns_the_exit_status_and_the_panic_from_the_log():
    control = KubeletControl("node-1", CrashingService(after=0.05))
    assert control.wait_exited(timeout=5) == f"exited with status 2; its log from the panic on:\n{PANIC_QUOTE}"


def test_wait_exited_sees_a_kubelet_its_supervisor_started_again():
    control = KubeletControl("node-1", CrashingService(after=0.05, restarts=True))
    assert control.wait_exited(timeout=5) == (
        "exited and was started again by its supervisor (pid 4242 -> 5555); its log from the panic on:\n"
        + PANIC_QUOTE
        + "\nI1128 02:50:02.000000   5555 server.go:1] started"
    )


def test_wait_exited_says_when_the_log_has_no_panic():
    control = KubeletControl("node-1", CrashingService(after=0.0, crash_log='E1128 run.go:72] "command failed"'))
    assert control.wait_exited(timeout=5) == "exited with status 2; no panic in its log since it was started"


def test_wait_exited_times_out_while_the_kubelet_runs():
    control = KubeletControl("node-1", CrashingService(after=None))
    with pytest.raises(WaitTimeout, match=r"waiting for the kubelet on node-1 \(pid 4242\) to exit"):
        control.wait_exited(timeout=0.2)


def test_stays_up_passes_while_the_kubelet_runs():
    service = CrashingService(after=None)
    started = time.monotonic()
    KubeletControl("node-1", service).stays_up(0.2, what="while the driver reports health")
    assert time.monotonic() - started >= 0.2


def test_stays_up_fails_at_once_with_the_panic_when_the_kubelet_exits():
    control = KubeletControl("node-1", CrashingService(after=0.05))
    started = time.monotonic()
    with pytest.raises(KubeletExited) as caught:
        control.stays_up(30, what="while the driver reports an unknown device")
    assert time.monotonic() - started < 5  # not the whole window
    report = f"exited with status 2; its log from the panic on:\n{PANIC_QUOTE}"
    assert caught.value.report == report
    assert str(caught.value) == (
        f"the kubelet on node-1 did not stay up for 30s while the driver reports an unknown device: {report}"
    )
    assert isinstance(caught.value, AssertionError)  # pytest reports it as a failure, not an error


def test_stays_up_fails_when_the_supervisor_restarted_it():
    control = KubeletControl("node-1", CrashingService(after=0.05, restarts=True))
    with pytest.raises(KubeletExited, match=r"started again by its supervisor \(pid 4242 -> 5555\)"):
        control.stays_up(30)


def test_panic_quote_takes_the_last_crash_and_caps_long_traces():
    older = "panic: an earlier crash\n\ngoroutine 1 [running]:\nmain.main()"
    assert panic_quote(f"{older}\nI1128 started again\n{PANIC}") == PANIC_QUOTE
    assert panic_quote("I1128 nothing wrong\nW1128 still nothing") is None
    fatal = "fatal error: concurrent map writes\n\ngoroutine 7 [running]:\nruntime.throw()"
    assert panic_quote(f"I1128 before\n{fatal}") == fatal
    long = "panic: boom\n" + "\n".join(f"frame {i}" for i in range(100))
    assert panic_quote(long, max_lines=3) == "panic: boom\nframe 0\nframe 1\n... (98 more lines in the kubelet's log)"


def test_stays_up_gives_the_same_failure_when_the_kubelet_is_gone_before_the_window():
    """On a busy machine the caller can be slower than the crash (kind: the SIGABRT'd kubelet was gone, and not yet
    restarted by systemd, when stays_up first looked): the failure still quotes the panic."""
    control = KubeletControl("node-1", CrashingService(after=0.0))
    with pytest.raises(KubeletExited) as caught:
        control.stays_up(30, what="after a SIGABRT")
    report = f"exited with status 2; its log from the panic on:\n{PANIC_QUOTE}"
    assert caught.value.report == report
    assert str(caught.value) == f"the kubelet on node-1 did not stay up for 30s after a SIGABRT: {report}"
