"""What the driver holds: prepared claims and allocations pushed by tests, optionally kept in a file.

With a state file the prepared set survives a SIGKILL + restart (as a real driver's checkpoint
would), so NodeUnprepareResources after a restart still finds its CDI spec, and the handle can
read what was prepared while the process is dead.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from typing import Any


class DriverState:
    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._prepared: dict[str, dict[str, Any]] = {}
        self._allocations: dict[str, dict[str, Any]] = {}
        if path:
            data = load_state(path)
            self._prepared = data["prepared"]
            self._allocations = data["allocations"]

    def prepared(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._prepared)

    def get_prepared(self, uid: str) -> dict[str, Any] | None:
        with self._lock:
            return copy.deepcopy(self._prepared.get(uid))

    def set_prepared(self, uid: str, record: dict[str, Any]) -> None:
        with self._lock:
            self._prepared[uid] = copy.deepcopy(record)
            self._save()

    def drop_prepared(self, uid: str) -> None:
        with self._lock:
            if self._prepared.pop(uid, None) is not None:
                self._save()

    def allocation(self, uid: str) -> dict[str, Any] | None:
        with self._lock:
            return copy.deepcopy(self._allocations.get(uid))

    def set_allocation(self, uid: str, allocation: dict[str, Any]) -> None:
        with self._lock:
            self._allocations[uid] = copy.deepcopy(allocation)
            self._save()

    def drop_allocation(self, uid: str) -> None:
        with self._lock:
            if self._allocations.pop(uid, None) is not None:
                self._save()

    def _save(self) -> None:
        if not self._path:
            return
        tmp = f"{self._path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"prepared": self._prepared, "allocations": self._allocations}, f, sort_keys=True)
        os.replace(tmp, self._path)  # atomic: a reader or a SIGKILL never sees half a file


def load_state(path: str) -> dict[str, dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        data = {}
    return {"prepared": data.get("prepared", {}), "allocations": data.get("allocations", {})}
