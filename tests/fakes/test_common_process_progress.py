"""A fake's start under load: FakeProcess.spawn waits for as long as the fake makes progress, not for a fixed
wall-clock budget (wait/progress.py). A real fake DRA driver, starved by SIGSTOP/SIGCONT duty cycles."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from device_conformance.fakes.common.control import ControlClient
from device_conformance.fakes.common.process import FakeProcess, FakeStartError
from device_conformance.fakes.dra_driver.config import DriverConfig

OLD_BUDGET = 2.0  # seconds: as a wall-clock budget this is what the starved start below exceeds


@pytest.fixture
def driver_process():
    root = Path(tempfile.mkdtemp(prefix="dpp-", dir="/tmp"))  # short: sun_path holds 107 bytes
    for sub in ("reg", "plug"):
        (root / sub).mkdir()
    config = DriverConfig(
        driver_name="dra.example.com",
        node_name="node-a",
        registry_dir=str(root / "reg"),
        plugin_dir=str(root / "plug"),
        control_socket=str(root / "c.ctl"),
        call_log=str(root / "calls.jsonl"),
        state_file=str(root / "state.json"),
    )
    (root / "config.json").write_text(config.to_json())
    argv = [sys.executable, "-m", "device_conformance.fakes.dra_driver", "--config", str(root / "config.json")]
    process = FakeProcess(argv, root / "driver.log")
    yield process, config
    process.kill()
    shutil.rmtree(root, ignore_errors=True)


def ping(config: DriverConfig):
    return lambda: ControlClient(config.control_socket, timeout=5).call("ping")


def starve(process: FakeProcess, ready: threading.Event, stopped: float, running: float) -> threading.Thread:
    """SIGSTOP/SIGCONT the fake's group in turn until `ready`: it gets running/(stopped+running) of a CPU."""

    def loop() -> None:
        while process.pid is None and not ready.is_set():
            time.sleep(0.001)
        while not ready.is_set():
            try:
                os.killpg(process.pid, signal.SIGSTOP)
                ready.wait(stopped)
                os.killpg(process.pid, signal.SIGCONT)
            except ProcessLookupError:
                return
            time.sleep(running)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_a_starved_fake_starts_even_when_it_takes_longer_than_a_wall_clock_budget(driver_process):
    process, config = driver_process
    ready = threading.Event()
    thread = starve(process, ready, stopped=0.5, running=0.05)
    started = time.monotonic()
    try:
        process.spawn(ping(config), "the starved driver to answer", OLD_BUDGET)  # stall window: 2 s
    finally:
        ready.set()
        thread.join()
    assert time.monotonic() - started > OLD_BUDGET  # it did take longer than a budget of that size
    assert process.is_running(), process.log_tail()


def test_a_fake_stopped_for_longer_than_the_stall_window_is_reported_as_hung_with_its_log(driver_process):
    process, config = driver_process
    ready = threading.Event()
    thread = starve(process, ready, stopped=30, running=0)
    try:
        with pytest.raises(FakeStartError) as failure:
            process.spawn(ping(config), "the stopped driver to answer", 1.0)
    finally:
        ready.set()
        thread.join()
    message = str(failure.value)
    assert "no progress for 1s" in message
    assert f"log {process.log_path}:\n=== starting: " in message
    assert not process.is_running()


def test_a_dead_fake_is_reported_at_once_with_its_log(tmp_path):
    process = FakeProcess([sys.executable, "-c", "print('bad config: boom'); raise SystemExit(3)"], tmp_path / "log")
    started = time.monotonic()
    with pytest.raises(FakeStartError) as failure:
        process.spawn(lambda: None, "it to answer", 60.0)
    assert time.monotonic() - started < 10
    message = str(failure.value)
    assert "the process exited with code 3 before it was ready" in message
    assert message.endswith("bad config: boom")


def test_a_ready_fake_survives_being_stopped_and_continued(driver_process):
    """SIGSTOP/SIGCONT (a frozen or CPU-starved process) can wake the driver's sigtimedwait with a siginfo no signal
    filled in; the driver must go on, not die on a signal number that is none (it did within 19-300 cycles)."""
    process, config = driver_process
    process.spawn(ping(config), "the driver to answer")
    for _ in range(300):
        os.killpg(process.pid, signal.SIGSTOP)
        time.sleep(0.002)
        os.killpg(process.pid, signal.SIGCONT)
        time.sleep(0.002)
    assert process.is_running(), process.log_tail()
    assert ping(config)() == {"pid": process.pid}  # and it still answers
