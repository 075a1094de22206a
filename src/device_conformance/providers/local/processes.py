"""Long-running component processes of a local cluster, each logging to its own file.

A process is identified by pid and start time, so a recorded pid that the kernel has since reused
for something else is never signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from device_conformance.host.process import pid_alive, terminate

# Every process a run starts carries its run id in this environment variable (children inherit it), so
# teardown finds what the run's state does not record: a process started moments before a crash.
RUN_ENV = "DEVICE_CONFORMANCE_RUN"


def start_time(pid: int) -> int | None:
    """The process start time in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class ProcessRecord:
    name: str
    pid: int
    started: int | None
    argv: list[str]
    log: str

    def alive(self) -> bool:
        return pid_alive(self.pid) and start_time(self.pid) == self.started

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            terminate(self.pid, grace=grace)

    def to_dict(self) -> dict:
        return {"name": self.name, "pid": self.pid, "started": self.started, "argv": self.argv, "log": self.log}

    @classmethod
    def from_dict(cls, data: dict) -> ProcessRecord:
        return cls(**{key: data[key] for key in ("name", "pid", "started", "argv", "log")})


def spawn(name: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> ProcessRecord:
    """Start argv in its own session (a Ctrl-C of pytest does not hit it; teardown stops it)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    return ProcessRecord(name, proc.pid, start_time(proc.pid), argv, str(log))


def exit_reason(record: ProcessRecord) -> str:
    """What happened to a process that is gone (best effort, for error messages)."""
    try:
        pid, status = os.waitpid(record.pid, os.WNOHANG)
    except ChildProcessError:
        return "exited"
    if pid == 0:
        return "running"
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


_PF_KTHREAD = 0x00200000  # include/linux/sched.h


def read_environ(proc_entry: Path, attempts: int = 50) -> bytes:
    """A process's environment; b"" if it is gone or a kernel thread.

    A process in the middle of execve reads as empty (fs/proc/base.c environ_read: no mm yet), and the
    namespace holder is exactly that right after `unshare` execs `sleep`: an empty read of a user
    process is read again rather than taken as "not ours".
    """
    for _ in range(attempts):
        try:
            environ = (proc_entry / "environ").read_bytes()
            if environ:
                return environ
            stat = (proc_entry / "stat").read_text()
        except OSError:
            return b""
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] in ("Z", "X") or int(fields[6]) & _PF_KTHREAD:  # no environment to read, ever
            return b""
        time.sleep(0.002)
    return b""
