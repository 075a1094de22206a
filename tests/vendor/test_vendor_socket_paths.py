"""Vendor mode and sun_path (107 bytes, unix(7)): a device plugin gets {plugin_dir} as a short link, so it has the
room for its socket name that the kubelet has; a socket named in --vendor-command is checked before anything
starts; a subject that cannot bind is one error quoting its log and naming the limit and the fix, at once."""

from __future__ import annotations

import os
import shlex
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.sockets import sun_path_trouble
from device_conformance.fakes.device_plugin.as_subject import socket_name
from device_conformance.kube.kubelet_metrics import KubeletCounts
from device_conformance.vendor.handles import ShortDirs, VendorDevicePluginHandle, check_socket_path, node_values
from device_conformance.vendor.spec import parse

# The local provider's host path of a node's /var/lib/kubelet/device-plugins (layout.py RunLayout.private).
HOST_PLUGIN_DIR = "/var/lib/device-conformance/runs/20261128-0800/node/kubelet/device-plugins"
LONG_NAME = "dc-vendor-long-socket-name-12345-".ljust(55, "x") + ".sock"  # as socket_name() makes one, pid 12345


class Node:
    """The part of a NodeControl node_values uses: host paths under `root` (standing for the run directory)."""

    name = "node-1"

    def __init__(self, root: Path) -> None:
        self.root = root

    def host_path(self, node_path: str) -> Path:
        return self.root / node_path.strip("/")

    def command_prefix(self) -> list[str]:
        return ["nsenter", "--target=1", "--mount", "--"]


@pytest.fixture
def long_root():
    """A host root as long as the local provider's: its device-plugins directory is 69+ bytes."""
    base = Path(tempfile.mkdtemp(prefix="dcl-", dir="/tmp"))
    root = base / ("r" * (len(HOST_PLUGIN_DIR) - len(str(base)) - len("/var/lib/kubelet/device-plugins") - 1))
    (root / "var/lib/kubelet/device-plugins").mkdir(parents=True)
    yield root
    for path in sorted(base.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        path.unlink() if path.is_socket() or path.is_symlink() else path.rmdir()
    base.rmdir()


def test_the_long_socket_name_pattern_is_60_characters():
    made = socket_name(["long-socket-name"])
    assert (
        len(made) == len(LONG_NAME) == 60 and made.startswith("dc-vendor-long-socket-name-") and made.endswith(".sock")
    )
    assert socket_name([]) == f"dc-vendor-{os.getpid()}.sock"
    assert len(f"{HOST_PLUGIN_DIR}/{LONG_NAME}") > 107 >= len(f"/var/lib/kubelet/device-plugins/{LONG_NAME}")


def test_plugin_dir_is_a_short_link_a_60_character_socket_binds_in(long_root):
    spec = parse("vendor.com/gpu", None, "p --socket-dir {plugin_dir}")
    short = ShortDirs()
    try:
        values = node_values(spec, Node(long_root), Path("/k"), short)
        real = long_root / "var/lib/kubelet/device-plugins"
        assert len(str(real)) >= len(HOST_PLUGIN_DIR)
        assert values["plugin_dir"] == str(short.root / "dp0") and len(values["plugin_dir"]) == 21
        assert os.path.realpath(values["plugin_dir"]) == str(real)
        assert values["registry_dir"] == str(long_root / "var/lib/kubelet/plugins_registry"), "DRA: not linked"
        # The same link for the same directory, every test.
        assert node_values(spec, Node(long_root), Path("/k"), short)["plugin_dir"] == values["plugin_dir"]
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(f"{values['plugin_dir']}/{LONG_NAME}")  # the kernel follows the link
            assert (real / LONG_NAME).is_socket(), "the socket is in the kubelet's directory"
            with pytest.raises(OSError, match="AF_UNIX path too long"), socket.socket(socket.AF_UNIX) as direct:
                direct.bind(f"{real}/{LONG_NAME}")
    finally:
        short.remove()
    assert short.root is None and real.is_dir() and (real / LONG_NAME).is_socket(), "only the link went"


def test_without_short_dirs_or_for_a_short_directory_the_host_path_is_given(tmp_path):
    spec = parse("vendor.com/gpu", None, "p {plugin_dir}")
    assert node_values(spec, Node(tmp_path), Path("/k"))["plugin_dir"] == str(
        tmp_path / "var/lib/kubelet/device-plugins"
    )
    short = ShortDirs()
    node = Node(Path("/"))
    assert node_values(spec, node, Path("/k"), short)["plugin_dir"] == "/var/lib/kubelet/device-plugins"
    assert short.root is None, "nothing made"


def test_a_socket_the_command_names_is_checked_against_the_kubelets_path_before_anything_starts():
    fits = "s" * 75  # /var/lib/kubelet/device-plugins/ + 75 = 107 bytes
    assert parse("vendor.com/gpu", None, f"p --socket {{plugin_dir}}/{fits}").command
    with pytest.raises(BadInput) as raised:
        parse("vendor.com/gpu", None, f"p --socket {{plugin_dir}}/{fits}s --resource {{resource}}")
    assert raised.value.problem == (
        f"--vendor-command names the socket {{plugin_dir}}/{fits}s: the kubelet would dial "
        f"/var/lib/kubelet/device-plugins/{fits}s, 108 bytes, over sun_path's 107 (unix(7)); no plugin can bind it "
        "either"
    )
    assert raised.value.fix == "give the socket a name of at most 75 bytes"


def test_a_rendered_socket_path_beyond_sun_path_is_bad_input_naming_the_room(long_root):
    spec = parse("vendor.com/gpu", None, "{on_node} p")  # on the node: no link
    template = f"p --socket {{plugin_dir}}/{LONG_NAME}"
    with pytest.raises(BadInput) as raised:
        node_values(spec, Node(long_root), Path("/k"), None, template)
    path = f"{long_root}/var/lib/kubelet/device-plugins/{LONG_NAME}"
    assert raised.value.problem.startswith(f"--vendor-command: the socket path {{plugin_dir}}/{LONG_NAME} is {path}")
    assert raised.value.fix == f"give the socket a name of at most {107 - len(path) + 60} bytes"
    short = ShortDirs()
    try:
        node_values(spec, Node(long_root), Path("/k"), short, template)  # through the link it fits
    finally:
        short.remove()
    check_socket_path("/tmp/x.sock", "x")


@pytest.mark.parametrize(
    "line",
    [
        # Go's net.Listen("unix", path) (the kubelet's own plugins, NVIDIA's, dra-example-driver's)
        f"E1128 listen unix {HOST_PLUGIN_DIR}/{LONG_NAME}: bind: invalid argument",
        # gRPC C-core, under Python's and C++'s servers
        "E1128 08:04:51.719398 16747 add_port.cc:83] Failed to add port to server: Path name should not have more "
        "than 107 characters",
        "OSError: AF_UNIX path too long",
        # only the path: the grpcio RuntimeError
        f"RuntimeError: Failed to bind to address unix://{HOST_PLUGIN_DIR}/{LONG_NAME}; set GRPC_VERBOSITY=debug",
    ],
    ids=["go", "grpc-core", "python", "path"],
)
def test_a_log_line_saying_the_socket_path_is_too_long_is_found(line):
    log = f"starting\n{line}\nexiting"
    assert sun_path_trouble(log) == f"  log: {line}"


def test_other_log_lines_are_not_sun_path_trouble():
    log = f"listening on {HOST_PLUGIN_DIR}/gpu.sock\nRegister failed: rpc error: code = Unavailable"
    assert sun_path_trouble(log) is None


def run_to_exit(command: str, workdir: Path, socket_dir: str) -> tuple[VendorDevicePluginHandle, str]:
    spec = parse("vendor.com/gpu", None, "p {plugin_dir}")
    handle = VendorDevicePluginHandle(spec, command, workdir, KubeletCounts(None, "node-1"))
    try:
        handle.start()
        handle.process._proc.wait(timeout=60)
        return handle, handle.start_failure(socket_dir)
    finally:
        handle.cleanup()


FAKE = [sys.executable, "-m", "device_conformance.fakes.device_plugin.as_subject", "--resource", "vendor.com/gpu"]


def test_a_subject_that_cannot_bind_fails_at_once_with_its_log_the_limit_and_the_fix(long_root, tmp_path):
    """Our fake with a 60-character socket name given the long host directory itself: it exits, and
    start_failure quotes the log lines, names the path and the room the directory leaves."""
    real = f"{long_root}/var/lib/kubelet/device-plugins"
    command = shlex.join([*FAKE, "--socket-dir", real, "--pattern", "long-socket-name"])
    handle, why = run_to_exit(command, tmp_path / "subject", real)
    first, *logged, path, fix = why.splitlines()
    assert first == (
        f"vendor device-plugin vendor.com/gpu (pid {handle.pid}) could not bind its socket: a Unix socket path holds "
        "at most 107 bytes (sun_path, unix(7)):"
    )
    assert any("Path name should not have more than 107 characters" in line for line in logged), logged
    assert any(f"Failed to bind to address unix://{real}/dc-vendor-long-socket-name-" in x for x in logged), logged
    assert all(line.startswith("  log: ") for line in logged)
    assert path.startswith(f"  path: {real}/dc-vendor-long-socket-name-") and path.endswith(
        f" ({len(real) + 61} bytes)"
    )
    assert fix == (
        f"fix: name the socket at most {107 - len(real) - 1} bytes in {real} ({len(real)} bytes); on any node the "
        "kubelet dials /var/lib/kubelet/device-plugins/<endpoint>, so an endpoint of more than 75 bytes never works"
    )


def test_a_subject_that_resolves_its_short_link_is_told_to_use_the_path_as_given(long_root, tmp_path):
    """As the e2e run with --socket-dir $(readlink -f {plugin_dir}) showed: the link fits, the resolved path not."""
    real = f"{long_root}/var/lib/kubelet/device-plugins"
    short = ShortDirs()
    try:
        link = str(short.alias("dp", Path(real)))
        command = " ".join([shlex.join(FAKE), "--pattern long-socket-name --socket-dir", f"$(readlink -f {link})"])
        _, why = run_to_exit(command, tmp_path / "subject", link)
    finally:
        short.remove()
    assert why.splitlines()[-1] == (
        f"fix: bind in the socket directory the subject is given ({{plugin_dir}}: {link}, 21 bytes), as it is: it "
        f"bound in {real} ({len(real)} bytes) instead (a resolved link?); on any node the kubelet dials "
        "/var/lib/kubelet/device-plugins/<endpoint>, so an endpoint of more than 75 bytes never works"
    )


def test_a_subject_that_exits_otherwise_is_named_with_its_log(tmp_path):
    spec = parse("vendor.com/gpu", None, "p {plugin_dir}")
    handle = VendorDevicePluginHandle(
        spec, "sh -c 'sleep 0.5; echo no devices found; exit 3'", tmp_path, KubeletCounts(None, "")
    )
    try:
        handle.start()
        assert handle.start_failure("/tmp") is None, "running: no failure yet"
        handle.process._proc.wait(timeout=10)
        why = handle.start_failure("/tmp")
    finally:
        handle.cleanup()
    assert (
        why.splitlines()[0]
        == f"vendor device-plugin vendor.com/gpu (pid {handle.pid}) exited (exit 3) before registering; its log:"
    )
    assert "no devices found" in why
