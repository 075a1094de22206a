"""DRA-HEALTH's look at a driver's DRAResourceHealth stream: open NodeWatchResources in one API version, as the
kubelet does, until the first report, a decline, or the end of the observation window.

The kubelet opens the stream once the driver registered, calls again 5 s after any end, and stops for good on
UNIMPLEMENTED: "The driver advertises the health service but does not support health reporting"
(pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go add(), v1.37.2). The kubeletplugin helper always advertises and
serves the service and declines so (k8s.io/dynamic-resource-allocation v0.37.2 kubeletplugin/health.go,
ErrHealthNotSupported). No rule says when the first report comes: the helper asks drivers to send one at once and to
re-send within each device's health-check timeout (draplugin.go WatchHealthStatus), 30 s by default, after which the
kubelet reports an unrefreshed device Unknown; so the window is that timeout.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from device_conformance.certify.exchange import rpc_error

# What NodeWatchResources' first answer was: a report, a decline, an error (the kubelet calls again), or nothing yet.
REPORT, DECLINED, ERROR, SILENT = "report", "declined", "error", "silent"


@dataclass
class HealthWatch:
    """What the driver's stream in one API version gave within the window."""

    api: str  # v1, v1alpha1
    outcome: str = SILENT
    report: Any = None  # the first NodeWatchResourcesResponse (REPORT)
    errors: list[str] = field(default_factory=list)  # each call's error, in order ("CODE: details")
    calls: int = 0
    seconds: float = 0.0


def _first_answer(stream: Iterator[Any], answers: queue.Queue[tuple[str, Any]]) -> None:
    try:
        answers.put((REPORT, next(stream)))
    except StopIteration:  # the driver ended the stream with OK and no report: the kubelet calls again
        answers.put((ERROR, "OK: the stream ended without a report"))
    except grpc.RpcError as err:
        code = err.code() if hasattr(err, "code") else None
        answers.put((DECLINED if code == grpc.StatusCode.UNIMPLEMENTED else ERROR, rpc_error(err)))


def watch_first_report(
    open_stream: Callable[[], Any],
    api: str,
    *,
    now: Callable[[], float],
    sleep: Callable[[float], None],
    window: float,
    pause: float,
) -> HealthWatch:
    """Open the stream (open_stream() returns a cancellable response iterator) until it sends its first report or
    declines; after an error, open it again `pause` seconds later, as the kubelet does, while `window` lasts. The
    stream is cancelled before returning."""
    watch = HealthWatch(api)
    started = now()
    while True:
        stream = open_stream()
        watch.calls += 1
        answers: queue.Queue[tuple[str, Any]] = queue.Queue()
        threading.Thread(target=_first_answer, args=(stream, answers), daemon=True).start()
        try:
            kind, value = answers.get(timeout=max(0.0, window - (now() - started)))
        except queue.Empty:  # open, and nothing sent within the window
            kind, value = SILENT, None
        finally:
            stream.cancel()
        watch.seconds = now() - started
        if kind == REPORT:
            watch.outcome, watch.report = REPORT, value
            return watch
        if kind != SILENT:
            watch.errors.append(value)
        watch.outcome = kind
        if kind != ERROR or watch.seconds + pause >= window:
            return watch
        sleep(pause)  # the kubelet's spacing between calls, not a wait for an event


def unnamed(report: Any) -> list[str]:
    """The entries of a report that name no device: an empty pool or device name, which no ResourceSlice device has
    (pkg/apis/resource/validation: a pool name and a device name are required)."""
    return [
        f"devices[{i}] (pool {d.device.pool_name!r}, device {d.device.device_name!r})"
        for i, d in enumerate(report.devices)
        if not d.device.pool_name or not d.device.device_name
    ]
