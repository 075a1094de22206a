"""The kubelet's state files saved before a test and put back after it (suites/dra/conftest.py kubelet_restored).

A file that was absent is absent again afterwards: the DRA health-info checkpoint (dra_health_state) appears only
once the kubelet first saved health data, and a forged one left behind would be read by every later kubelet start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from device_conformance.kubelet_state import dra, drahealth

# The DRA manager's files, both in the kubelet's state directory (pkg/kubelet/cm/dra/manager.go NewManager).
DRA_FILES = (dra.DEFAULT_PATH, drahealth.DEFAULT_PATH)


class NodeFiles(Protocol):
    """What of a node (node.base.NodeControl) saving and putting back needs."""

    def read_file(self, node_path: str | Path) -> bytes: ...

    def write_file(self, node_path: str | Path, data: bytes, mode: int = 0o600) -> None: ...

    def delete_file(self, node_path: str | Path) -> None: ...


@dataclass(frozen=True)
class SavedFiles:
    """Node path -> its bytes when saved, None when it did not exist."""

    files: dict[str, bytes | None]

    @classmethod
    def take(cls, node: NodeFiles, paths: tuple[str, ...] = DRA_FILES) -> SavedFiles:
        files: dict[str, bytes | None] = {}
        for path in paths:
            try:
                files[path] = node.read_file(path)
            except FileNotFoundError:
                files[path] = None
        return cls(files)

    def put_back(self, node: NodeFiles) -> None:
        """Each file as it was (mode 0600, as the kubelet writes them), or gone if it was not there."""
        for path, data in self.files.items():
            if data is None:
                node.delete_file(path)
            else:
                node.write_file(path, data)
