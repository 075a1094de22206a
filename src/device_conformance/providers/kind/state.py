"""What we know about a kind cluster we created: enough to delete it from any process, also after a crash.

Only clusters with a state file saying `created: true` are ever deleted by us; a cluster that existed
before the run (reused by name) has none, or `created: false`.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass

from device_conformance.host.process import pid_alive
from device_conformance.providers.kind.layout import KindLayout, kind_root


@dataclass
class KindState:
    name: str
    created: bool
    owner_pid: int
    k8s_version: str
    image: str
    profile: str
    kept: bool = False

    def save(self, layout: KindLayout) -> None:
        layout.root.mkdir(parents=True, exist_ok=True)
        partial = layout.state_file.with_suffix(".partial")
        partial.write_text(json.dumps(asdict(self), indent=2))
        os.replace(partial, layout.state_file)

    @classmethod
    def load(cls, layout: KindLayout) -> KindState:
        return cls(**json.loads(layout.state_file.read_text()))

    def orphaned(self) -> bool:
        """Created by a run whose process is gone, and not kept on purpose."""
        return self.created and not self.kept and not pid_alive(self.owner_pid)


def all_layouts() -> list[KindLayout]:
    root = kind_root()
    if not root.is_dir():
        return []
    return [KindLayout(path) for path in sorted(root.iterdir()) if path.is_dir() and not path.name.startswith(".")]


def remove_host_dirs(layout: KindLayout) -> None:
    shutil.rmtree(layout.root, ignore_errors=True)
