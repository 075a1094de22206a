"""A fake DRA driver does not outlive a test run killed with SIGKILL (bench/interrupt.py found it did), also
when the run dies while the driver is still starting (a soak run interrupted at that moment left one)."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from device_conformance.host.process import pid_alive

# A stand-in for pytest: starts a driver the way the fixtures do, prints its pid, then waits to be killed.
PARENT = textwrap.dedent(
    """
    import sys
    from device_conformance.fakes.dra_driver import DeviceSpec, DriverConfig
    from device_conformance.fakes.dra_driver.handle import start
    sockets, workdir = sys.argv[1], sys.argv[2]
    config = DriverConfig(
        driver_name="dra.example.com", node_name="node-1", registry_dir=sockets + "/registry",
        plugin_dir=sockets + "/plugins", kubelet_endpoint_path="/var/lib/kubelet/plugins/dra.example.com/dra.sock",
        devices=[DeviceSpec("dev-0")], control_socket=sockets + "/driver.ctl",
    )
    handle = start(config, workdir)
    print(handle.process.pid, flush=True)
    sys.stdin.read()
    """
)


def _kill_the_parent_and_expect_no_driver(script: str, workdir: str, timeout: float, outlived: str) -> None:
    """Run `script` as the stand-in parent, SIGKILL it once it printed the driver's pid, and require the driver
    to be gone within `timeout` with its registration socket removed."""
    sockets = tempfile.mkdtemp(prefix="dra-", dir="/tmp")  # tmp_path can exceed sun_path's 107 bytes
    parent = subprocess.Popen(
        [sys.executable, "-c", script, sockets, workdir], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        driver_pid = int(parent.stdout.readline())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + timeout
        while pid_alive(driver_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = pid_alive(driver_pid)
        if alive:
            os.kill(driver_pid, signal.SIGKILL)
        assert not alive, outlived
        assert sorted(os.listdir(f"{sockets}/registry")) == [], "its registration socket stayed behind"
    finally:
        parent.kill()
        subprocess.run(["rm", "-rf", sockets], check=False)


def test_driver_exits_when_the_process_that_started_it_is_killed(tmp_path):
    outlived = "the fake DRA driver outlived the killed test run"
    _kill_the_parent_and_expect_no_driver(PARENT, str(tmp_path / "driver"), 10, outlived)


# A stand-in for pytest killed while the driver starts: it prints the driver's pid as soon as the process
# exists and never waits for it to be ready (FakeProcess's wait replaced by a block).
PARENT_KILLED_DURING_START = PARENT.replace(
    "handle = start(config, workdir)\nprint(handle.process.pid, flush=True)\n",
    "import subprocess as sp, device_conformance.fakes.common.process as fp\n"
    "real_popen = sp.Popen\n"
    "def popen(*args, **kwargs):\n"
    "    proc = real_popen(*args, **kwargs)\n"
    "    print(proc.pid, flush=True)\n"
    "    sys.stdin.read()\n"
    "fp.subprocess.Popen = popen\n"
    "start(config, workdir)\n",
)


def test_driver_exits_when_the_run_is_killed_while_it_starts(tmp_path):
    assert PARENT_KILLED_DURING_START != PARENT, "the stand-in parent's script no longer matches"
    # Killed before the driver's interpreter has even imported its modules.
    outlived = "the fake DRA driver outlived a test run killed while it was starting"
    _kill_the_parent_and_expect_no_driver(PARENT_KILLED_DURING_START, str(tmp_path / "driver"), 20, outlived)
