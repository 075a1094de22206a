"""The floor of a wait: when the API server first showed the state, seen by a watch opened before the action.

A watch delivers each change as it is written (no polling interval), so the moment its event arrives is
the component's own latency (the kubelet's, or the controller's for an eviction) plus milliseconds of
transport; what our wait takes beyond that is its overhead.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.watch.watch import iter_resp_lines

from device_conformance.kube.client import Kube


class FirstSeen:
    """Watch one collection from its current resourceVersion; remember when `holds(object)` first was true.

    Opened (the watch is established at the API server) when the constructor returns, so an action
    started afterwards cannot be missed."""

    def __init__(self, kube: Kube, list_call: Callable[..., Any], holds: Callable[[dict], bool], **selector: Any):
        listed = list_call(**selector)
        self.holds = holds
        self.at: float | None = None
        self.last: dict | None = None
        self._response = list_call(
            **selector,
            watch=True,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=600,
            _preload_content=False,
        )
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in iter_resp_lines(self._response):
                event = json.loads(line)
                self.last = event.get("object")
                if event.get("type") in ("ADDED", "MODIFIED") and self.holds(event["object"]):
                    self.at = time.monotonic()
                    break
        except Exception:  # the response was closed by close()
            pass
        finally:
            self._done.set()

    def wait(self, timeout: float) -> float:
        """The monotonic time the state was first seen (raises if it never was within `timeout`)."""
        if not self._done.wait(timeout) or self.at is None:
            self.close()
            raise TimeoutError(f"the watch never saw the state; last object: {json.dumps(self.last)[:400]}")
        self.close()
        return self.at

    def close(self) -> None:
        self._response.close()
        self._response.release_conn()


def condition(obj: dict, type_: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


def running_ready(obj: dict) -> bool:
    ready = condition(obj, "Ready")
    return (obj.get("status") or {}).get("phase") == "Running" and ready is not None and ready["status"] == "True"


def allocatable_is(resource: str, count: int) -> Callable[[dict], bool]:
    return lambda obj: ((obj.get("status") or {}).get("allocatable") or {}).get(resource) == str(count)


def has_condition(type_: str) -> Callable[[dict], bool]:
    return lambda obj: condition(obj, type_) is not None
