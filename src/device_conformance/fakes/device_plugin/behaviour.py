"""Injected faults: make an RPC fail with a status (optionally only N times) or block until released."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import grpc

METHODS = ("GetDevicePluginOptions", "ListAndWatch", "GetPreferredAllocation", "Allocate", "PreStartContainer")


def status_code(name: str | grpc.StatusCode) -> grpc.StatusCode:
    """Accept "INTERNAL", "internal" or grpc.StatusCode.INTERNAL."""
    if isinstance(name, grpc.StatusCode):
        return name
    try:
        return grpc.StatusCode[name.upper()]
    except KeyError:
        raise ValueError(f"unknown gRPC status code {name!r}; use one of {[c.name for c in grpc.StatusCode]}") from None


def check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown DevicePlugin method {method!r}; use one of {list(METHODS)}")
    return method


@dataclass
class Failure:
    code: grpc.StatusCode
    message: str
    times: int | None  # None = every call until cleared


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, Failure] = {}
        self._gates: dict[str, threading.Event] = {}  # set = open

    def fail(self, method: str, code: str | grpc.StatusCode, message: str, times: int | None = None) -> None:
        with self._lock:
            self._failures[check_method(method)] = Failure(status_code(code), message, times)

    def take_failure(self, method: str) -> Failure | None:
        """The failure this call must return, if any; counts down a limited one."""
        with self._lock:
            failure = self._failures.get(method)
            if failure is None:
                return None
            if failure.times is not None:
                failure.times -= 1
                if failure.times <= 0:
                    del self._failures[method]
            return failure

    def block(self, method: str) -> None:
        with self._lock:
            self._gates[check_method(method)] = threading.Event()

    def unblock(self, method: str) -> None:
        with self._lock:
            gate = self._gates.pop(check_method(method), None)
        if gate:
            gate.set()

    def wait_if_blocked(self, method: str, cancelled: threading.Event) -> None:
        """Return once the method is unblocked or the caller went away (cancelled is set)."""
        with self._lock:
            gate = self._gates.get(method)
        while gate is not None and not gate.is_set() and not cancelled.is_set():
            gate.wait(0.05)

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            gates, self._gates = list(self._gates.values()), {}
        for gate in gates:
            gate.set()

    def describe(self) -> dict[str, object]:
        with self._lock:
            return {
                "failures": {
                    m: {"code": f.code.name, "message": f.message, "times": f.times} for m, f in self._failures.items()
                },
                "blocked": sorted(self._gates),
            }
