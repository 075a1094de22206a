"""Tearing down a node's mount namespace never kills another cluster's processes.

The kernel numbers namespaces from one pool and hands out the lowest free number (proc_alloc_inum,
fs/proc/generic.c, an IDA). Once the last process of a node's namespace died, its number goes to the next
namespace created anywhere on the host, typically a container just started by another cluster's runtime. A
teardown that kept scanning /proc by that number then SIGKILLed the other cluster's fresh container: the
"exit 137, 70 ms after start" flake of test_pod_runs_once_its_driver_publishes_devices under xdist."""

import os
import subprocess
import time

import pytest

from device_conformance.host.process import pid_alive
from device_conformance.providers.local.node_namespace import NodeNamespace, mount_ns_inode

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="unshare --mount needs root")


def _new_mount_namespace() -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(["unshare", "--mount", "--", "sleep", "60"], start_new_session=True)
    own = mount_ns_inode(os.getpid())
    deadline = time.monotonic() + 10
    while (inode := mount_ns_inode(proc.pid)) in (None, own):
        assert time.monotonic() < deadline, "unshare --mount made no namespace"
        time.sleep(0.01)
    return proc, inode


def test_a_namespace_created_during_teardown_is_left_alone(monkeypatch):
    holder, inode = _new_mount_namespace()
    namespace = NodeNamespace(holder.pid, inode)
    strangers: list[tuple[subprocess.Popen, int]] = []
    scan = namespace.member_pids

    def scan_after_another_cluster_starts_a_container() -> list[int]:
        if not strangers and not pid_alive(holder.pid):
            # The node's last process is gone: another cluster creates a namespace before the next scan.
            strangers.append(_new_mount_namespace())
        return scan()

    monkeypatch.setattr(namespace, "member_pids", scan_after_another_cluster_starts_a_container)
    try:
        namespace.destroy()
        assert strangers, "the holder never died"
        stranger, stranger_inode = strangers[0]
        assert stranger.poll() is None, (
            f"teardown of the namespace {inode} killed a process of another namespace ({stranger_inode})"
        )
        assert not pid_alive(holder.pid), "the holder survived"
    finally:
        for proc in [holder, *(p for p, _ in strangers)]:
            proc.kill()
            proc.wait()


def test_a_dead_holders_number_is_not_taken_for_its_namespace():
    holder, inode = _new_mount_namespace()
    holder.kill()
    holder.wait()
    stranger, _ = _new_mount_namespace()  # may well get the holder's old number
    try:
        NodeNamespace(holder.pid, inode).destroy()
        assert stranger.poll() is None, "teardown of a namespace whose holder was gone killed another process"
    finally:
        stranger.kill()
        stranger.wait()


def test_every_process_of_the_namespace_dies(monkeypatch):
    holder, inode = _new_mount_namespace()
    member = subprocess.Popen(["nsenter", f"--target={holder.pid}", "--mount", "--", "sleep", "60"])
    deadline = time.monotonic() + 10
    while mount_ns_inode(member.pid) != inode:
        assert time.monotonic() < deadline, "nsenter did not enter the namespace"
        time.sleep(0.01)
    try:
        NodeNamespace(holder.pid, inode).destroy()
        member.wait(5)  # destroy may have reaped it already (it is our child): then this returns at once
        assert not pid_alive(member.pid), "a member of the namespace survived its teardown"
        assert not pid_alive(holder.pid), "the holder survived its teardown"
    finally:
        for proc in (holder, member):
            proc.kill()
            proc.wait()
