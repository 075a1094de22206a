"""One node as the suites use it, written once over a provider's NodeTransport (node/transport.py).

Files, sockets, the container runtime and upstream's reboot simulation here; the kubelet's lifecycle
under `node.kubelet` (node/kubelet.py). Providers subclass NodeControl only to add what their nodes
alone can do (kind: a real reboot with `docker restart`).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from device_conformance.core.errors import BadInput, CommandError
from device_conformance.node.cri import Sandbox
from device_conformance.node.kubelet import KubeletControl
from device_conformance.node.transport import NodeTransport

# `sh -c WRITE_ATOMICALLY sh PATH MODE` with the content on stdin: atomic on the node too, the kubelet
# must never read a half-written checkpoint.
WRITE_ATOMICALLY = 'cat > "$1.dc-partial" && chmod "$2" "$1.dc-partial" && mv -f "$1.dc-partial" "$1"'

# `find -type` letters and the same test on a directory entry the test host sees (NodeControl._entries).
_FIND_TYPES = {"s": Path.is_socket, "f": Path.is_file}


class NodeControl:
    """Faults and file access on one node. Paths given to methods are as the kubelet sees them."""

    def __init__(self, transport: NodeTransport) -> None:
        self.transport = transport
        self.name = transport.name
        self.kubelet = KubeletControl(transport.name, transport.kubelet_service)

    # -- long-running processes on the node --------------------------------------------------
    def command_prefix(self) -> list[str]:
        """argv words that run the rest of a command line on the node (its mount namespace: the kubelet's
        fixed paths such as /var/lib/kubelet/device-plugins are the node's), for a process the harness starts
        and supervises itself, e.g. a vendor's device plugin (the {on_node} placeholder of --vendor-command).
        The provider's transport says how (local: nsenter into the node's mount namespace); one that cannot
        host such a process has no `command_prefix`."""
        prefix = getattr(self.transport, "command_prefix", None)
        if prefix is None:
            raise BadInput(
                f"node {self.name} cannot run a host-supervised process (its provider has no command_prefix)",
                "use the local provider, or deploy the subject on the node yourself",
            )
        return list(prefix())

    # -- the kubelet's container runtime endpoint ----------------------------------------------
    def runtime_socket(self) -> str:
        """The container runtime's CRI socket as the test host reaches it (a CRI proxy on the host forwards
        there). The provider's transport says where; one whose runtime the host cannot reach has none."""
        socket = getattr(self.transport, "runtime_socket", None)
        if socket is None:
            raise BadInput(
                f"the test host cannot reach the container runtime of node {self.name} (no runtime_socket)",
                "use the local or the kind provider",
            )
        return str(socket())

    def set_runtime_endpoint(self, endpoint: str | None) -> None:
        """The CRI endpoint (unix:///<node path>) the kubelet uses from its next start on; None: the node's own
        runtime again. Takes effect when the kubelet (re)starts; the caller restarts it."""
        setter = getattr(self.transport, "set_runtime_endpoint", None)
        if setter is None:
            raise BadInput(
                f"node {self.name} cannot point its kubelet at another container runtime endpoint",
                "use the local or the kind provider",
            )
        setter(endpoint)

    # -- files -------------------------------------------------------------------------------
    def host_path(self, node_path: str | Path) -> Path:
        """Where a path of the node (e.g. /var/lib/kubelet/device-plugins) is on the test host."""
        mapped = self._mapped(node_path)
        if mapped is None:
            raise BadInput(
                f"{node_path} is not bind-mounted from the host on node {self.name}",
                f"use a path under one of {', '.join(map(str, self.transport.mounts))}, or read_file()/write_file()",
            )
        return mapped

    def read_file(self, node_path: str | Path) -> bytes:
        mapped = self._mapped(node_path)
        if mapped is not None:
            return mapped.read_bytes()
        try:
            return self.transport.run(["cat", str(node_path)])
        except CommandError as exc:
            raise FileNotFoundError(f"{self.name}:{node_path}: {exc.output.strip()}") from None

    def write_file(self, node_path: str | Path, data: bytes, mode: int = 0o600) -> None:
        """Replace the file atomically (a partial file renamed over it) with `data` and `mode`."""
        mapped = self._mapped(node_path)
        if mapped is None:
            self.transport.run(["sh", "-c", WRITE_ATOMICALLY, "sh", str(node_path), f"{mode:o}"], stdin=data)
            return
        partial = mapped.with_name(f".{mapped.name}.partial")
        partial.write_bytes(data)
        partial.chmod(mode)
        partial.replace(mapped)

    def delete_file(self, node_path: str | Path) -> None:
        """Remove the file; no error when it is not there."""
        mapped = self._mapped(node_path)
        if mapped is not None:
            mapped.unlink(missing_ok=True)
        else:
            self.transport.run(["rm", "-f", str(node_path)])

    def delete_dir(self, node_path: str | Path) -> None:
        """Remove the directory when it is empty; no error when it is not there or not empty (a pod's
        hostPath directory the kubelet made on the node, whatever provider keeps the node's files)."""
        mapped = self._mapped(node_path)
        if mapped is not None:
            try:
                mapped.rmdir()
            except OSError:
                pass
        else:
            self.transport.run(["rmdir", "--", str(node_path)], check=False)

    def list_sockets(self, node_dir: str | Path) -> list[str]:
        """Names of the Unix sockets in a node directory (empty when it does not exist)."""
        return self._entries(node_dir, "s")

    def list_files(self, node_dir: str | Path) -> list[str]:
        """Names of the regular files in a node directory (empty when it does not exist)."""
        return self._entries(node_dir, "f")

    def _entries(self, node_dir: str | Path, find_type: str) -> list[str]:
        """Names of the entries of one `find -type` ("s" or "f") in a node directory, read on the test host
        where the directory is mounted there, else through the node."""
        mapped = self._mapped(node_dir)
        if mapped is not None:
            of_type = _FIND_TYPES[find_type]
            return sorted(e.name for e in mapped.iterdir() if of_type(e)) if mapped.is_dir() else []
        found = self.transport.run(["find", str(node_dir), "-maxdepth", "1", "-type", find_type], check=False)
        return sorted(PurePosixPath(line).name for line in found.decode(errors="replace").split())

    def _mapped(self, node_path: str | Path) -> Path | None:
        path = PurePosixPath(node_path)
        for node_dir, host_dir in sorted(self.transport.mounts.items(), key=lambda item: -len(item[0].parts)):
            if path == node_dir or node_dir in path.parents:
                return host_dir / path.relative_to(node_dir)
        return None

    # -- container runtime -------------------------------------------------------------------
    def pod_sandboxes(self) -> list[Sandbox]:
        """The container runtime's pod sandboxes (CRI ListPodSandbox), ready or not."""
        with self.transport.cri() as cri:
            return cri.sandboxes()

    def runtime_info(self) -> dict:
        """The container runtime's verbose CRI Status info (containerd: {"config": {...}, ...})."""
        with self.transport.cri() as cri:
            return cri.status_info()

    def container_annotations(self, container_id: str) -> dict[str, str]:
        """The annotations the runtime holds for a container (CRI ContainerStatus); `container_id` as in
        the pod's containerStatuses[].containerID, with or without its "<runtime>://" prefix."""
        with self.transport.cri() as cri:
            return cri.container_annotations(container_id.split("://", 1)[-1])

    def container_pid(self, container_id: str) -> int:
        """The pid in the node of a running container's main process (the runtime's verbose CRI
        ContainerStatus); `container_id` as in containerStatuses[].containerID."""
        with self.transport.cri() as cri:
            return cri.container_pid(container_id.split("://", 1)[-1])

    def signal_process(self, pid: int, signal_name: str) -> None:
        """`kill -<SIGNAL> <pid>` in the node (pid as container_pid gives it), e.g. STOP, CONT, KILL."""
        self.transport.run(["kill", f"-{signal_name}", str(pid)])

    def kill_container(self, container_id: str) -> int:
        """SIGKILL a container's main process on the node (a crash, as a vendor's binary might have); returns
        its pid in the node."""
        pid = self.container_pid(container_id)
        self.signal_process(pid, "KILL")
        return pid

    # -- whole-node faults -------------------------------------------------------------------
    def simulate_reboot(self) -> int:
        """Upstream's reboot: stop the kubelet, remove every pod sandbox through CRI, start it again.

        Returns the number of sandboxes removed."""
        with self.kubelet.stopped(), self.transport.cri() as cri:
            return len(cri.remove_all_sandboxes())
