"""Smoke: a kubelet crash is an outcome a test can wait for and assert on (KubeletControl.wait_exited, .stays_up),
checked on the real kubelet with the crash Go gives a SIGABRT (runtime/signal_unix.go: "SIGABRT: abort", every
goroutine's trace, exit status 2): what a test of a kubelet bug that panics sees, without patching the kubelet."""

import signal

import pytest

from device_conformance.framework import KubeletExited

pytestmark = [pytest.mark.smoke, pytest.mark.disruptive]

EXIT_TIMEOUT = 30  # Go writes its crash report and exits at once; this covers a loaded machine


def test_wait_exited_quotes_the_kubelets_crash_report(node):
    node.kubelet.stays_up(2, what="before the test breaks it")
    node.kubelet.send_signal(signal.SIGABRT)
    report = node.kubelet.wait_exited(timeout=EXIT_TIMEOUT)
    how, _, quote = report.partition("; its log from the panic on:\n")
    # The local provider's kubelet stays down and its exit status is recorded; kind's systemd unit starts it again
    # after RestartSec=1s, so a look in between finds no pid, a later one a new pid.
    supervised = ("exited (pid ", "exited and was started again by its supervisor")
    assert how == "exited with status 2" or how.startswith(supervised), report
    lines = quote.splitlines()
    assert lines[0] == "SIGABRT: abort", report
    assert any(line.startswith("goroutine ") for line in lines), report
    if node.kubelet.pid() == 0:
        node.kubelet.start()
    node.kubelet.wait_healthy()


def test_stays_up_fails_with_the_crash_report_when_the_kubelet_exits(node):
    if node.kubelet.pid() == 0:
        node.kubelet.start()
    node.kubelet.send_signal(signal.SIGABRT)
    with pytest.raises(KubeletExited) as caught:
        node.kubelet.stays_up(EXIT_TIMEOUT, what="after a SIGABRT")
    assert "\nSIGABRT: abort\n" in str(caught.value), str(caught.value)
    assert f"did not stay up for {EXIT_TIMEOUT}s after a SIGABRT: " in str(caught.value)
