"""Run the fake device plugin as a vendor's subject would run, configured by flags instead of a config file:

    python -m device_conformance.fakes.device_plugin.as_subject --socket-dir DIR --resource NAME \\
        [--devices dev-0,dev-1] [--defect NAME ...] [--no-reregister]

so that vendor mode can take our fake, clean or with a defect, as its subject and be seen to fail exactly the
black-box tests the defect breaks:

    pytest suites/device_plugin --vendor-device-plugin example.com/dev \\
        --vendor-command "$PWD/.venv/bin/python -m device_conformance.fakes.device_plugin.as_subject \\
            --socket-dir {plugin_dir} --resource {resource} --defect unstable-device-ids"

Allocate answers with DC_DEVICES=<the IDs> (fixtures/device_plugins.py DEVICES_ENV), as the suites' registered
fake does. The config and the control socket live in a work folder /tmp/dcv-<pid>-XXXXXXXX (short: sun_path holds
107 bytes) removed at exit. A SIGKILLed process runs no `finally`, so the folder holds owner.lock, flock()ed by its
process for as long as it lives (the kernel drops the lock however the process ends, in any pid namespace, and a
reused pid cannot hold it); each start removes the folders whose lock it can take (work_dir, remove_orphans), as
toolchain/go_tmpdir.py removes the Go work directories of killed processes.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from device_conformance.fakes.device_plugin.config import (
    DEFECTS,
    LONG_SOCKET_NAME,
    PATTERNS,
    AllocateConfig,
    DeviceConfig,
    DevicePluginConfig,
)

DEVICES_ENV = "DC_DEVICES"
WORK_ROOT = Path("/tmp")
WORK_PREFIX = "dcv-"
# Made by mkdtemp, renamed to dcv-<pid>-XXXXXXXX once its lock is held: a folder of the final name is always locked
# while its process lives. One left by a kill between the two is its process's by the pid in its name.
STAGING_PREFIX = ".dcv-new-"
OWNER_LOCK = "owner.lock"
_STAGING = re.compile(rf"^{re.escape(STAGING_PREFIX)}(\d+)-")


@contextlib.contextmanager
def work_dir(root: Path = WORK_ROOT) -> Iterator[Path]:
    """This process's work folder root/dcv-<pid>-XXXXXXXX, its owner.lock held until the process ends; removed on
    leaving. The folders of processes that are gone are removed first (remove_orphans)."""
    remove_orphans(root)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=root))
    lock = os.open(staging / OWNER_LOCK, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the open file description stays ours: a child gets no copy (O_CLOEXEC)
    workdir = root / (WORK_PREFIX + staging.name.removeprefix(STAGING_PREFIX))
    try:
        staging.rename(workdir)
        yield workdir
    finally:
        shutil.rmtree(workdir if workdir.exists() else staging, ignore_errors=True)
        os.close(lock)


def remove_orphans(root: Path = WORK_ROOT) -> list[Path]:
    """Remove the work folders under root whose process is gone (their owner.lock can be taken; a staging folder's
    pid is not alive); returns them. Folders of other users, and any without an owner.lock, are left alone."""
    from device_conformance.process import pid_alive

    removed = []
    for entry in sorted(root.glob(f"{WORK_PREFIX}*")) + sorted(root.glob(f"{STAGING_PREFIX}*")):
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        staging = _STAGING.match(entry.name)
        if staging:
            if not pid_alive(int(staging.group(1))):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
            continue
        if _remove_unlocked(entry):
            removed.append(entry)
    return removed


def _remove_unlocked(entry: Path) -> bool:
    """Remove a work folder whose owner.lock nobody holds, holding it meanwhile; False when it is held or missing."""
    try:
        fd = os.open(entry / OWNER_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    try:
        shutil.rmtree(entry, ignore_errors=True)
    finally:
        os.close(fd)
    return True


def socket_name(patterns: list[str]) -> str:
    """dc-vendor-<pid>.sock, or with the long-socket-name pattern one of LONG_SOCKET_NAME characters."""
    if "long-socket-name" not in patterns:
        return f"dc-vendor-{os.getpid()}.sock"
    stem = f"dc-vendor-long-socket-name-{os.getpid()}-"
    return stem.ljust(LONG_SOCKET_NAME - len(".sock"), "x") + ".sock"


def config_from(argv: list[str] | None, workdir: Path) -> DevicePluginConfig:
    parser = argparse.ArgumentParser(prog="python -m device_conformance.fakes.device_plugin.as_subject")
    parser.add_argument("--socket-dir", required=True, help="the kubelet's device-plugin directory")
    parser.add_argument("--resource", required=True, help="the extended resource name it registers")
    parser.add_argument("--devices", default="dev-0,dev-1", help="comma-separated device IDs (default dev-0,dev-1)")
    parser.add_argument("--defect", action="append", default=[], choices=DEFECTS, help="a defective-vendor mode")
    parser.add_argument("--pattern", action="append", default=[], choices=PATTERNS, help="a real-world pattern")
    parser.add_argument(
        "--env-name", default=DEVICES_ENV, help=f"the Allocate env's name (default {DEVICES_ENV}; any the API allows)"
    )
    parser.add_argument(
        "--no-reregister", action="store_true", help="never register again after a kubelet restart (a defect)"
    )
    args = parser.parse_args(argv)
    return DevicePluginConfig(
        resource_name=args.resource,
        socket_dir=args.socket_dir,
        socket_name=socket_name(args.pattern),
        devices=[DeviceConfig(d) for d in args.devices.split(",") if d],
        allocate=AllocateConfig(envs={args.env_name: "{ids}"}),
        control_socket=str(workdir / "ctl.sock"),
        defects=list(args.defect),
        patterns=list(args.pattern),
        auto_reregister=not args.no_reregister,
    )


def main(argv: list[str] | None = None) -> int:
    from device_conformance.fakes.device_plugin.__main__ import main as run

    with work_dir() as workdir:
        config = config_from(argv, workdir)
        config.save(workdir / "config.json")
        return run(["--config", str(workdir / "config.json")])


if __name__ == "__main__":
    sys.exit(main())
