"""Tear a local cluster down from its recorded state, leaving nothing: processes, mounts, sockets,
containers, cgroups, network interfaces. Works on a live run and on one left by a crashed run."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

from device_conformance.core.interrupts import deferred_interrupts
from device_conformance.host.process import pid_alive, run
from device_conformance.node.cri import CRIClient
from device_conformance.providers.local import cgroups
from device_conformance.providers.local.layout import RunLayout, state_root
from device_conformance.providers.local.node_namespace import NodeNamespace, host_dirs_lock, remove_created_host_dirs
from device_conformance.providers.local.processes import RUN_ENV, read_environ
from device_conformance.providers.local.state import RunState

CONTROL_PLANE_STOP_ORDER = ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd")


def teardown(layout: RunLayout, log: Callable[[str], None] = lambda _: None) -> list[str]:
    """Tear down the run at layout; returns problems that remain (empty when everything is gone).

    Ctrl-C during it is held until it is done (core/interrupts.py), then raised."""
    with deferred_interrupts(log):
        return _teardown(layout, log)


def _teardown(layout: RunLayout, log: Callable[[str], None]) -> list[str]:
    problems: list[str] = []
    state = RunState.load(layout) if layout.state_file.exists() else None
    if state is not None:
        _stop_node(state, layout, log)
        for name in CONTROL_PLANE_STOP_ORDER:
            process = state.process(name)
            if process is not None:
                process.stop(grace=10)
    # What the state does not record: a process started moments before its owner crashed (the node's
    # namespace holder before its pid was saved, a component before state.save). Each carries the run id.
    for pid in run_processes(layout.run_id):
        log(f"killing pid {pid}, started by run {layout.run_id} but not in its state")
        _kill(pid)
    if state is not None:
        if state.cgroup_root:
            left = cgroups.remove_root(state.cgroup_root)
            problems += [f"cgroup {path} could not be removed" for path in left]
        if state.bridge and run(["ip", "link", "show", state.bridge], check=False).returncode == 0:
            run(["ip", "link", "delete", state.bridge], check=False)
    shutil.rmtree(layout.root, ignore_errors=True)
    if layout.root.exists():
        problems.append(f"{layout.root} could not be removed")
    with host_dirs_lock():  # a run being created holds it while it mounts on them (its state.json exists by then)
        if not any((state_root() / "runs").glob("*/state.json")):
            remove_created_host_dirs()
    return problems


def _stop_node(state: RunState, layout: RunLayout, log: Callable[[str], None]) -> None:
    kubelet = state.process("kubelet")
    if kubelet is not None:
        kubelet.stop(grace=10)
    containerd = state.process("containerd")
    if containerd is not None and containerd.alive() and layout.containerd_socket.is_socket():
        # Through CRI, so CNI DEL runs for every pod (IP released, veth gone) before containerd stops.
        try:
            with CRIClient(str(layout.containerd_socket)) as cri:
                removed = cri.remove_all_sandboxes()
            if removed:
                log(f"removed {len(removed)} pod sandboxes")
        except Exception as exc:  # a broken runtime must not stop the rest of the teardown
            log(f"could not remove pod sandboxes through CRI: {exc}")
    if containerd is not None:
        containerd.stop(grace=10)
    if state.namespace_holder:
        namespace = NodeNamespace(state.namespace_holder, state.namespace_inode)
        if namespace.alive():
            namespace.destroy()


def run_processes(run_id: str) -> list[int]:
    """Processes (other than this one) whose environment names run_id in RUN_ENV."""
    wanted = f"{RUN_ENV}={run_id}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if wanted in read_environ(entry).split(b"\0"):
            pids.append(int(entry.name))
    return pids


def _kill(pid: int, timeout: float = 10) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.02)
