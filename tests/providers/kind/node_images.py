"""Root filesystems of the two kinds of node container the kind tests exec into (no registry here).

The fake node: busybox-static plus small stand-ins (fake_node/) for systemd, the kubelet, journalctl,
crictl, curl, containerd and ctr. The systemd node: the host's own /usr (read-only) so the real
systemd and journald run as PID 1, with a kubelet.service like kind's around a stand-in kubelet.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

FAKE_NODE_DIR = Path(__file__).with_name("fake_node")
FAKE_NODE_IMAGE = "device-conformance.local/fake-kind-node:test"
BUSYBOX = Path("/bin/busybox")
SCRIPTS = {
    "/usr/local/lib/fake/supervisor": "supervisor",
    "/usr/local/lib/fake/start-kubelet": "start-kubelet",
    "/usr/local/lib/fake/kubelet-alive": "kubelet-alive",
    "/usr/bin/kubelet": "kubelet",
    "/usr/bin/systemctl": "systemctl",
    "/usr/bin/journalctl": "journalctl",
    "/usr/bin/crictl": "crictl",
    "/usr/bin/curl": "curl",
    "/usr/bin/containerd": "containerd",
    "/usr/bin/ctr": "ctr",
}
# Node directories bound from the host, as the kind provider mounts them.
MOUNTED = ("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi")


def _add(tar: tarfile.TarFile, path: str, data: bytes | None = None, mode: int = 0o755, link: str = "") -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.mode = mode
    if link:
        info.type, info.linkname = tarfile.SYMTYPE, link
        tar.addfile(info)
    elif data is None:
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    else:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def fake_node_rootfs() -> bytes:
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in (
            "/bin",
            "/usr",
            "/usr/bin",
            "/usr/local",
            "/usr/local/lib",
            "/usr/local/lib/fake",
            "/etc",
            "/var",
            "/var/log",
            "/var/lib",
            "/var/lib/kubelet",
            "/run",
            "/tmp",
            "/kind",
        ):
            _add(tar, directory, mode=0o1777 if directory == "/tmp" else 0o755)
        _add(tar, "/var/run", link="/run")  # as on Debian (kind's nodes): /var/run/cdi lands on the /run tmpfs
        _add(tar, "/bin/busybox", BUSYBOX.read_bytes())
        for applet in applets:
            if applet != "busybox":
                _add(tar, f"/bin/{applet}", link="busybox")
        for target, name in SCRIPTS.items():
            _add(tar, target, (FAKE_NODE_DIR / name).read_bytes())
        _add(tar, "/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
        _add(tar, "/kind/version", b"v0.0.0-fake-node\n", 0o644)
        _add(tar, "/etc/kubernetes")
        _add(tar, "/etc/kubernetes/admin.conf", (FAKE_NODE_DIR / "admin.conf").read_bytes(), 0o600)
    return buffer.getvalue()


# kind's nodes run the kubelet as a systemd unit. This host has Debian's systemd 252 installed (not as
# PID 1), so a container whose /usr is the host's /usr (read-only) boots the real systemd, with a
# kubelet.service like kind's (Restart=always, RestartSec=1s, KillMode=process) around a stand-in
# kubelet. The kind node's systemctl/journalctl/kill/file calls then meet the real tools.
SYSTEMD = Path("/usr/lib/systemd/systemd")
SYSTEMD_NODE_IMAGE = "device-conformance.local/systemd-node:test"
KUBELET_UNIT = b"""[Unit]
Description=stand-in kubelet (unit settings as kind's kubelet.service)
[Service]
ExecStart=/opt/kubelet
Restart=always
StartLimitInterval=0
RestartSec=1s
KillMode=process
[Install]
WantedBy=multi-user.target
"""
STAND_IN_KUBELET = b"""#!/bin/sh
echo "stand-in kubelet started pid $$"
mkdir -p /run/www && echo ok > /run/www/healthz
exec busybox httpd -f -p 127.0.0.1:10248 -h /run/www
"""


def systemd_node_rootfs() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in (
            "/usr",
            "/etc",
            "/etc/systemd",
            "/etc/systemd/system",
            "/var",
            "/var/lib",
            "/var/lib/kubelet",
            "/var/log",
            "/var/tmp",
            "/run",
            "/tmp",
            "/root",
            "/kind",
            "/opt",
            "/etc/systemd/system/multi-user.target.wants",
        ):
            _add(tar, directory, mode=0o1777 if directory in ("/tmp", "/var/tmp") else 0o755)
        for link, target in (
            ("/bin", "usr/bin"),
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/sbin", "usr/sbin"),
            ("/var/run", "/run"),
        ):
            _add(tar, link, link=target)
        _add(tar, "/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
        _add(tar, "/etc/group", b"root:x:0:\nsystemd-journal:x:999:\n", 0o644)
        _add(tar, "/etc/machine-id", b"", 0o444)
        _add(tar, "/kind/version", b"v1.37.1\n", 0o644)
        _add(tar, "/opt/kubelet", STAND_IN_KUBELET)  # not under /usr: that is the host's, read-only
        _add(tar, "/etc/systemd/system/kubelet.service", KUBELET_UNIT, 0o644)
        _add(
            tar,
            "/etc/systemd/system/multi-user.target.wants/kubelet.service",
            link="/etc/systemd/system/kubelet.service",
        )
    return buffer.getvalue()
