"""The device list the plugin advertises, and the signals that open ListAndWatch streams follow.

Every change bumps `version`; each open stream sends the full list again when it sees a new version
(the kubelet treats each response as the complete list). Ending streams works by generation: a
stream ends when end_streams() was called after it started, so streams opened later are unaffected.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace

from device_conformance.fakes.common.faults import Status
from device_conformance.fakes.device_plugin.config import HEALTHY, UNHEALTHY, DeviceConfig


@dataclass(frozen=True)
class Update:
    """What an open stream must do next: send `devices` (version changed) or end (maybe with an error)."""

    version: int
    devices: list[DeviceConfig]
    end: bool = False
    error: Status | None = None


class DeviceState:
    def __init__(self, devices: Iterable[DeviceConfig]) -> None:
        self._cond = threading.Condition()
        self._devices = {d.id: replace(d) for d in devices}
        self._version = 1
        self._end_generation = 0
        self._end_errors: dict[int, Status | None] = {}
        self._open_streams = 0
        self._handed_out: set[str] = set()

    def devices(self) -> list[DeviceConfig]:
        with self._cond:
            return [replace(d) for d in self._devices.values()]

    def set_health(self, device_id: str, healthy: bool) -> int:
        with self._cond:
            if device_id not in self._devices:
                raise KeyError(f"no device {device_id!r}; devices are {sorted(self._devices)}")
            self._devices[device_id].health = HEALTHY if healthy else UNHEALTHY
            return self._bump()

    def set_devices(self, devices: Iterable[DeviceConfig]) -> int:
        with self._cond:
            self._devices = {d.id: replace(d) for d in devices}
            return self._bump()

    def add_device(self, device: DeviceConfig) -> int:
        with self._cond:
            if device.id in self._devices:
                raise ValueError(f"device {device.id!r} already exists")
            self._devices[device.id] = replace(device)
            return self._bump()

    def remove_device(self, device_id: str) -> int:
        with self._cond:
            if self._devices.pop(device_id, None) is None:
                raise KeyError(f"no device {device_id!r}; devices are {sorted(self._devices)}")
            return self._bump()

    def handed_out(self) -> frozenset[str]:
        """The device IDs Allocate answered for since the process started."""
        with self._cond:
            return frozenset(self._handed_out)

    def hand_out(self, device_ids: Iterable[str]) -> None:
        """Record IDs an Allocate answered for."""
        with self._cond:
            self._handed_out.update(device_ids)

    def relist(self) -> int:
        """Have every open stream send the list again."""
        with self._cond:
            return self._bump()

    def end_streams(self, error: Status | None) -> int:
        """Ask every stream open now to end; returns how many were open."""
        with self._cond:
            self._end_generation += 1
            self._end_errors[self._end_generation] = error
            self._cond.notify_all()
            return self._open_streams

    def open_stream(self) -> int:
        """Register a new stream; returns the generation it started in."""
        with self._cond:
            self._open_streams += 1
            return self._end_generation

    def close_stream(self) -> None:
        with self._cond:
            self._open_streams -= 1

    def open_streams(self) -> int:
        with self._cond:
            return self._open_streams

    def next_update(self, seen_version: int, generation: int, cancelled: threading.Event) -> Update | None:
        """Block until there is something to send or to end; None if the caller went away."""
        with self._cond:
            while not cancelled.is_set():
                if self._end_generation > generation:
                    return Update(self._version, [], end=True, error=self._end_errors[generation + 1])
                if self._version != seen_version:
                    return Update(self._version, [replace(d) for d in self._devices.values()])
                # Short waits so a cancelled stream notices even if nobody notifies.
                self._cond.wait(0.1)
            return None

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _bump(self) -> int:
        self._version += 1
        self._cond.notify_all()
        return self._version
