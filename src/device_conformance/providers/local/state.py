"""The persisted record of a run: enough to tear the cluster down from another process after a crash."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field, fields

from device_conformance.host.process import pid_alive
from device_conformance.providers.local.layout import RunLayout
from device_conformance.providers.local.processes import ProcessRecord, start_time

# The bring-up records processes and saves from two threads (runtime and control plane, cluster.py _bring_up).
# Two saves at once share state.partial, and one rename finds it gone; a record during another thread's
# asdict() changes the dict it copies. So both go one at a time (soak 2026-11-24, run 10).
_CHANGING = threading.Lock()


@dataclass
class RunState:
    run_id: str
    k8s_version: str
    node_name: str
    owner_pid: int
    owner_started: int | None
    kept: bool = False
    ports: dict[str, int] = field(default_factory=dict)
    bridge: str = ""
    subnet: str = ""
    cgroup_root: str = ""
    binaries_dir: str = ""
    containerd_dir: str = ""
    namespace_holder: int = 0
    namespace_inode: int = 0
    processes: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def new(cls, run_id: str, k8s_version: str, node_name: str) -> RunState:
        return cls(run_id, k8s_version, node_name, os.getpid(), start_time(os.getpid()))

    def owner_alive(self) -> bool:
        return pid_alive(self.owner_pid) and start_time(self.owner_pid) == self.owner_started

    def record(self, process: ProcessRecord) -> None:
        with _CHANGING:
            self.processes[process.name] = process.to_dict()

    def process(self, name: str) -> ProcessRecord | None:
        data = self.processes.get(name)
        return ProcessRecord.from_dict(data) if data else None

    def save(self, layout: RunLayout) -> None:
        partial = layout.state_file.with_suffix(".partial")
        with _CHANGING:
            partial.write_text(json.dumps(asdict(self), indent=1))
            partial.rename(layout.state_file)

    @classmethod
    def load(cls, layout: RunLayout) -> RunState:
        """Unknown keys are dropped: a run written by another version of this harness (another checkout
        running at the same time) must still be recognised as alive, or torn down after a crash."""
        data = json.loads(layout.state_file.read_text())
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})
