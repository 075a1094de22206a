"""What a test holds for a vendor's subject: the black-box part of a fake's handle.

A fake's handle (fakes/common/handle.py) can inject faults, read a call log and be told what to serve; a
vendor's binary can only be started, stopped, killed and restarted, with the node's paths filled into its
command line (vendor_spec.py). Everything else a black-box test needs it reads from the outside: node status,
podresources, pod status, the kubelet's metrics (kube/kubelet_metrics.py) and checkpoint.

`CAPABILITIES` says what a handle can do; tests that need more skip as NOT APPLICABLE in vendor mode
(pytest_plugin/vendor.py), never pass. On kind the subject is a DaemonSet already deployed
(VendorDaemonSetHandle: the same verbs through the API server and the provider's node control); on an existing
cluster the same, the node control being the suite's node agent (--allow-node-disruption, providers/agent/).
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.handle import PROCESS, ProcessHandle
from device_conformance.fakes.common.process import FakeProcess
from device_conformance.fakes.common.sockets import SUN_PATH_MAX, sun_path_trouble, too_long_paths
from device_conformance.host.process import kill_group_of_reaped_leader
from device_conformance.kube.kubelet_metrics import KubeletCounts
from device_conformance.vendor.spec import DEVICE_PLUGIN, NODE_PATHS, VendorSpec, socket_names

# A vendor's subject can only be run (the names: fakes/common/handle.py).
VENDOR_CAPABILITIES = frozenset({PROCESS})

CommandFor = Callable[[Mapping[str, str]], str]

# Placeholders naming a directory the subject binds its sockets in, by the short link name it gets there.
# The host path of a node's /var/lib/kubelet/device-plugins is longer than the node's own (local provider:
# /var/lib/device-conformance/runs/<run>/node/kubelet/device-plugins, 69 bytes), which would leave a plugin
# 38 bytes of sun_path's 107 (unix(7)) for its socket name where the kubelet, dialling
# /var/lib/kubelet/device-plugins/<endpoint>, leaves 75. So such a directory is given through a symlink in a
# short /tmp directory (ShortDirs): the kernel follows symlinks in a socket path's directories
# (path_resolution(7)), the socket is the same file in the kubelet's directory, and the kubelet dials it by the
# relative endpoint the plugin registers (api.proto RegisterRequest.endpoint, pkg/kubelet/cm/devicemanager
# plugin/v1beta1/handler.go). Not for a DRA driver's directories: it registers an absolute endpoint
# (pluginregistration/v1 PluginInfo.endpoint), which the kubelet must be able to dial as it is.
SOCKET_DIRS = {"plugin_dir": "dp"}


class ShortDirs:
    """Short symlinks (/tmp/dcs-XXXXXXXX/<prefix><n>, 21 bytes) to long host directories, made on first use, one
    per directory; remove() deletes the links and their directory, never what they point to."""

    def __init__(self, parent: str = "/tmp") -> None:
        self.parent = parent
        self.root: Path | None = None
        self.links: dict[Path, Path] = {}

    def alias(self, prefix: str, target: Path) -> Path:
        if target not in self.links:
            if self.root is None:
                self.root = Path(tempfile.mkdtemp(prefix="dcs-", dir=self.parent))
            link = self.root / f"{prefix}{len(self.links)}"
            link.symlink_to(target, target_is_directory=True)
            self.links[target] = link
        return self.links[target]

    def remove(self) -> None:
        for link in self.links.values():
            link.unlink(missing_ok=True)
        if self.root is not None:
            self.root.rmdir()
        self.root, self.links = None, {}


def node_values(
    spec: VendorSpec, node: object, kubeconfig: Path, short: ShortDirs | None = None, template: str = ""
) -> dict[str, str]:
    """The placeholders' values for one node: host paths of its kubelet directories, its name, the cluster.
    With `short`, a socket directory (SOCKET_DIRS) whose host path is longer than the node's is given as a
    short symlink to it. `template`: the command, whose socket paths under {plugin_dir} are then checked."""
    host_path = node.host_path  # type: ignore[attr-defined]
    values = {name: str(host_path(path)) for name, path in NODE_PATHS.items()}
    for name, link in SOCKET_DIRS.items():
        if short is not None and len(values[name]) > len(NODE_PATHS[name]):
            values[name] = str(short.alias(link, Path(values[name])))
    values.update(kubeconfig=str(kubeconfig), node_name=node.name)  # type: ignore[attr-defined]
    values["on_node"] = shlex.join(node.command_prefix())  # type: ignore[attr-defined]
    values["resource" if spec.kind == DEVICE_PLUGIN else "driver"] = spec.name
    for socket in socket_names(template):
        check_socket_path(os.path.join(values["plugin_dir"], socket), "{plugin_dir}/" + socket)
    return values


def check_socket_path(path: str, what: str) -> None:
    """BadInput before the subject starts when a socket path its command names cannot be bound."""
    size = len(os.fsencode(path))
    if size > SUN_PATH_MAX:
        raise BadInput(
            f"--vendor-command: the socket path {what} is {path}, {size} bytes, over sun_path's {SUN_PATH_MAX} "
            "(unix(7)): the subject cannot bind it (bind: invalid argument)",
            f"give the socket a name of at most {SUN_PATH_MAX - len(os.fsencode(os.path.dirname(path))) - 1} bytes",
        )


def socket_dir_fix(socket_dir: str, tried: list[str]) -> str:
    """The fix for a socket path beyond sun_path: `socket_dir` is the directory the subject was given, `tried` the
    too-long paths its log names (where it really bound, e.g. after resolving the link)."""
    node_dir = NODE_PATHS["plugin_dir"]
    size = len(os.fsencode(socket_dir))
    elsewhere = sorted({os.path.dirname(p) for p in tried} - {socket_dir.rstrip("/")})
    if elsewhere:
        fix = (
            f"bind in the socket directory the subject is given ({{plugin_dir}}: {socket_dir}, {size} bytes), as it "
            f"is: it bound in {elsewhere[0]} ({len(os.fsencode(elsewhere[0]))} bytes) instead (a resolved link?)"
        )
    else:
        fix = f"name the socket at most {SUN_PATH_MAX - size - 1} bytes in {socket_dir} ({size} bytes)"
    return (
        f"{fix}; on any node the kubelet dials {node_dir}/<endpoint>, so an endpoint of more than "
        f"{SUN_PATH_MAX - len(node_dir) - 1} bytes never works"
    )


class VendorHandle(ProcessHandle):
    CAPABILITIES = VENDOR_CAPABILITIES

    def __init__(self, spec: VendorSpec, command: str, workdir: Path, counts: KubeletCounts) -> None:
        self.spec, self.command, self.workdir, self.counts = spec, command, workdir, counts
        workdir.mkdir(parents=True, exist_ok=True)
        self.process = FakeProcess(["/bin/sh", "-c", f"exec {command}"], workdir / "subject.log")
        self.starts = 0

    @property
    def name(self) -> str:
        return f"vendor {self.spec.kind} {self.spec.name} (pid {self.pid})"

    def start(self) -> None:
        """Start the subject; it counts as started once its process runs (readiness is the caller's wait on
        what the kubelet shows: node status, registration)."""
        if self.is_running():
            raise RuntimeError(f"{self.name} is still running; stop() or kill() it first")
        self.process.spawn(lambda: True, f"{self.name} to start", 10.0)
        self.starts += 1

    respawn = start  # the fakes' name for "start again after kill() or stop()"

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (a well-behaved subject removes its sockets), SIGKILL after `timeout`; whatever it left in
        its session goes too."""
        code = self.process.stop(timeout)
        pid = self.process.pid
        if pid is not None:
            kill_group_of_reaped_leader(pid)
        return code

    def restart(self, *, kill: bool = False) -> None:
        if kill:
            self.kill()
        else:
            self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()

    def start_failure(self, socket_dir: str) -> str | None:
        """Why the subject will not come up, as far as can be seen: its log says a socket path in `socket_dir`
        exceeds sun_path (whether it exited or retries), or it exited; None while it runs and says neither."""
        log = self.process.log_tail(60)
        trouble = sun_path_trouble(log)
        if trouble:
            tried = too_long_paths(log)
            paths = "".join(f"\n  path: {p} ({len(os.fsencode(p))} bytes)" for p in tried[:3])
            return (
                f"{self.name} could not bind its socket: a Unix socket path holds at most {SUN_PATH_MAX} bytes "
                f"(sun_path, unix(7)):\n{trouble}{paths}\nfix: {socket_dir_fix(socket_dir, tried)}"
            )
        if not self.is_running():
            return f"{self.name} exited (exit {self.process.returncode}) before registering; its log:\n{log}"
        return None

    def report(self) -> str:
        """For a failing test's artifacts: the command and the subject's output."""
        return f"command: {self.command}\nstarts: {self.starts}\n--- output (last 80 lines) ---\n{self.log_tail(80)}"


class VendorDevicePluginHandle(VendorHandle):
    """A vendor's device plugin on the node; `resource_name` is what it registers."""

    @property
    def resource_name(self) -> str:
        return self.spec.name


class VendorDraDriverHandle(VendorHandle):
    """A vendor's DRA kubelet plugin on the node; `driver_name` is its driver."""

    @property
    def driver_name(self) -> str:
        return self.spec.name


# -- a subject deployed as a DaemonSet (kind: --vendor-daemonset) ------------------------------------------
# The node label that stops the subject on one node: the DaemonSet gets one required node-affinity expression
# `STOP_LABEL DoesNotExist` (added for the test, removed afterwards), so labelling the node makes the DaemonSet
# controller delete the node's pod and create none; removing the label brings one back. A vendor's DaemonSet
# survives this unchanged in everything else (pkg/controller/daemon: a node failing the pod's node affinity
# neither runs nor keeps a daemon pod).
STOP_LABEL = "device-conformance.io/vendor-subject-stopped"
STOP_EXPRESSION = {"key": STOP_LABEL, "operator": "DoesNotExist"}


def with_stop_term(affinity: Mapping | None) -> dict:
    """`affinity` (a pod template's, camelCase JSON) with STOP_EXPRESSION required in every node selector
    term: the terms are ORed, so each one must exclude a stopped node. Nothing else changes."""
    import copy

    result = copy.deepcopy(dict(affinity or {}))
    node_affinity = result.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        expressions = term.setdefault("matchExpressions", [])
        if STOP_EXPRESSION not in expressions:
            expressions.append(dict(STOP_EXPRESSION))
    required["nodeSelectorTerms"] = terms
    return result


def has_stop_term(affinity: Mapping | None) -> bool:
    """Whether every required node selector term of `affinity` excludes a stopped node."""
    node_affinity = (affinity or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    return bool(terms) and all(STOP_EXPRESSION in (t.get("matchExpressions") or []) for t in terms)


class VendorDaemonSetHandle:
    """A vendor's device plugin or DRA kubelet plugin deployed as a DaemonSet, on one node, with the verbs of
    VendorHandle (`resource_name` / `driver_name`: the name it registers):

    - running: the DaemonSet's pod on the node is Ready;
    - restart(): delete that pod, wait for its replacement Ready (the DaemonSet controller makes it);
    - stop() / start(): label the node STOP_LABEL / remove the label (see with_stop_term);
    - kill(): SIGSTOP the container's main process through the node (NodeControl.signal_process), label the
      node, and once the DaemonSet controller marked the pod for deletion SIGKILL it: a crash (it never sees the
      deletion's SIGTERM) that the kubelet does not restart, the pod being deleted; start() brings a new one.
    `prepare()` checks the DaemonSet and its pod on the node and adds the affinity term; `cleanup()` removes
    the label and the term and waits for the pod Ready again: the DaemonSet is left as it was found."""

    CAPABILITIES = VENDOR_CAPABILITIES

    def __init__(self, spec: VendorSpec, kube: object, node: object, counts: KubeletCounts, timeout: float) -> None:
        from kubernetes import client

        self.spec, self.kube, self.node, self.counts, self.timeout = spec, kube, node, counts, timeout
        self.namespace, self.ds_name = spec.namespace_name
        self.apps = client.AppsV1Api(kube.core.api_client)  # type: ignore[attr-defined]
        self.original_affinity: dict | None = None
        self.patched = False
        self.rolling = True
        self.starts = 0
        self.events: list[str] = []
        self.last_pod: str | None = None

    # -- what the DaemonSet is -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"vendor {self.spec.kind} {self.spec.name} (DaemonSet {self.namespace}/{self.ds_name})"

    @property
    def resource_name(self) -> str:
        return self.spec.name

    @property
    def driver_name(self) -> str:
        return self.spec.name

    @property
    def pid(self) -> int | None:
        return None  # a process inside the node: kill() goes through the node's runtime

    def _daemonset(self) -> dict:
        import json

        from kubernetes.client.exceptions import ApiException

        try:
            answer = self.apps.read_namespaced_daemon_set(self.ds_name, self.namespace, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                raise BadInput(
                    f"--vendor-daemonset {self.spec.daemonset}: there is no DaemonSet {self.ds_name} in namespace "
                    f"{self.namespace} of the cluster under test",
                    "deploy the subject first (kubectl apply -f its manifest), or name the DaemonSet it runs as "
                    "(kubectl get daemonsets -A)",
                ) from None
            raise
        return json.loads(answer.data)

    def pods(self) -> list:
        """The DaemonSet's pods on the node that are not being deleted."""
        listed = self.kube.core.list_namespaced_pod(  # type: ignore[attr-defined]
            self.namespace,
            field_selector=f"spec.nodeName={self.node.name}",  # type: ignore[attr-defined]
        ).items
        return [
            p
            for p in listed
            if p.metadata.deletion_timestamp is None
            and any(o.kind == "DaemonSet" and o.name == self.ds_name for o in p.metadata.owner_references or [])
        ]

    def wait_ready(self, *, other_than: str | None = None, without_term: bool = False) -> object:
        from device_conformance.wait.core import Pending, until

        def probe() -> object:
            pods = self.pods()
            if not pods:
                return Pending(f"no pod of the DaemonSet on {self.node.name}")  # type: ignore[attr-defined]
            pod = pods[0]
            if other_than is not None and pod.metadata.uid == other_than:
                return Pending(f"still the old pod {pod.metadata.name}")
            self.last_pod = pod.metadata.name  # whose log report() shows, Ready or not
            if without_term and has_stop_term(self._pod_affinity(pod)):
                return Pending(f"pod {pod.metadata.name} still has the stop term (rolling update)")
            ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
            if not ready:
                return Pending(f"pod {pod.metadata.name} is {pod.status.phase}, not Ready")
            self.last_pod = pod.metadata.name
            return pod

        return until(probe, what=f"{self.name}: its pod on {self.node.name} Ready", timeout=self.timeout)  # type: ignore[attr-defined]

    def _pod_affinity(self, pod: object) -> dict | None:
        affinity = pod.spec.affinity  # type: ignore[attr-defined]
        return None if affinity is None else self.kube.core.api_client.sanitize_for_serialization(affinity)  # type: ignore[attr-defined]

    def is_running(self) -> bool:
        pods = self.pods()
        return bool(pods) and any(c.type == "Ready" and c.status == "True" for c in pods[0].status.conditions or [])

    # -- set up / tear down ------------------------------------------------------------------------
    def check(self) -> dict:
        """The DaemonSet, which must have a pod on the node (BadInput naming the fix otherwise)."""
        daemonset = self._daemonset()
        if not self.pods():
            selector = (daemonset["spec"]["template"]["spec"] or {}).get("nodeSelector")
            raise BadInput(
                f"--vendor-daemonset {self.spec.daemonset}: the DaemonSet has no pod on the test node "
                f"{self.node.name} (desired {daemonset.get('status', {}).get('desiredNumberScheduled')}, "  # type: ignore[attr-defined]
                f"nodeSelector {selector})",
                f"make it run on {self.node.name} (its nodeSelector, affinity or tolerations), e.g. label the node "  # type: ignore[attr-defined]
                "as the DaemonSet selects",
            )
        return daemonset

    def prepare(self) -> None:
        """check(), add the stop term, and leave the subject stopped on the node (no pod left: no Register in
        flight), so that the caller counts from here and start()s it: exactly one Register follows. A
        RollingUpdate DaemonSet rolls for the term; whatever pod that made on the node goes with the label."""
        daemonset = self._daemonset()
        # The previous test's cleanup may have left a rollout under way: wait for the node's pod first (the
        # session checked that the DaemonSet has one: fixtures/vendor.py vendor_daemonset).
        self.wait_ready()
        self.original_affinity = daemonset["spec"]["template"]["spec"].get("affinity")
        self.rolling = (daemonset["spec"].get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        if not has_stop_term(self.original_affinity):
            self._patch_affinity(with_stop_term(self.original_affinity))
            self.patched = True
        self.stop()

    def _patch_affinity(self, affinity: dict | None) -> None:
        path = "/spec/template/spec/affinity"
        op = [{"op": "remove", "path": path}] if affinity is None else [{"op": "add", "path": path, "value": affinity}]
        self.apps.patch_namespaced_daemon_set(self.ds_name, self.namespace, op)
        self.events.append(f"affinity {'restored' if affinity == self.original_affinity else 'patched'}")

    def cleanup(self) -> None:
        """Idempotent: the node unlabelled, the DaemonSet's affinity as found, its pod Ready on the node."""
        self._label(None)
        restored = self.patched
        if self.patched:
            self._patch_affinity(self.original_affinity)
            self.patched = False
        # A RollingUpdate DaemonSet rolls back to its own template: done when the node's pod has no stop term.
        self.wait_ready(without_term=restored and self.rolling)

    # -- the process verbs --------------------------------------------------------------------------
    def _label(self, value: str | None) -> None:
        body = {"metadata": {"labels": {STOP_LABEL: value}}}
        self.kube.core.patch_node(  # type: ignore[attr-defined]
            self.node.name,  # type: ignore[attr-defined]
            body,
            _content_type="application/merge-patch+json",  # a null value removes the label
        )
        self.events.append(f"node label {STOP_LABEL}={value}")

    def wait_no_pod(self) -> None:
        from device_conformance.wait.core import Pending, until

        def probe() -> bool | Pending:
            listed = self.kube.core.list_namespaced_pod(  # type: ignore[attr-defined]
                self.namespace,
                field_selector=f"spec.nodeName={self.node.name}",  # type: ignore[attr-defined]
            ).items
            left = [
                p.metadata.name
                for p in listed
                if any(o.kind == "DaemonSet" and o.name == self.ds_name for o in p.metadata.owner_references or [])
            ]
            return True if not left else Pending(f"pods left: {left}")

        until(probe, what=f"{self.name}: no pod on {self.node.name}", timeout=self.timeout)  # type: ignore[attr-defined]

    def start(self) -> None:
        """The node unlabelled: the DaemonSet controller creates the pod; wait until it is Ready."""
        if self.pods():
            raise RuntimeError(f"{self.name} is still running; stop() or kill() it first")
        self._label(None)
        self.wait_ready()
        self.starts += 1

    respawn = start

    def stop(self, timeout: float = 30.0) -> int | None:
        """The node labelled: the DaemonSet controller deletes the pod (SIGTERM, its grace period)."""
        self._label("true")
        self.wait_no_pod()
        return None

    def kill(self) -> None:
        """SIGKILL of the container's main process, the node labelled just before so that neither the kubelet
        nor the DaemonSet controller starts it again: the pod is deleted with its process already dead."""
        pods = self.pods()
        if not pods:
            raise RuntimeError(f"{self.name} has no pod on the node to kill")
        pod = pods[0]
        main = pod.spec.containers[0].name
        status = next((s for s in pod.status.container_statuses or [] if s.name == main), None)
        if status is None or not status.container_id:
            raise RuntimeError(f"{self.name}: container {main} of {pod.metadata.name} has no container ID yet")
        self.last_pod = pod.metadata.name
        node = self.node
        pid = node.container_pid(status.container_id)  # type: ignore[attr-defined]
        # Frozen first: the SIGTERM of the pod's deletion stays pending (only SIGKILL reaches a stopped process),
        # and the kubelet restarts no container that has not exited; once the pod is marked for deletion it
        # restarts none at all.
        node.signal_process(pid, "STOP")  # type: ignore[attr-defined]
        try:
            self._label("true")
            self._wait_marked_for_deletion()
        finally:
            node.signal_process(pid, "KILL")  # type: ignore[attr-defined]
        self.events.append(f"SIGKILL pid {pid} (container {main} of {pod.metadata.name})")
        self.wait_no_pod()

    def _wait_marked_for_deletion(self) -> None:
        from device_conformance.wait.core import Pending, until

        def probe() -> bool | Pending:
            left = self.pods()
            return True if not left else Pending(f"{left[0].metadata.name} not marked for deletion")

        until(probe, what=f"{self.name}: the DaemonSet controller to delete its pod", timeout=self.timeout)

    def restart(self, *, kill: bool = False) -> None:
        """kill=True: kill() and start(); else delete the pod and wait for the replacement Ready."""
        if kill:
            self.kill()
            self.start()
            return
        pods = self.pods()
        if not pods:
            raise RuntimeError(f"{self.name} has no pod on the node to restart")
        old = pods[0]
        self.kube.core.delete_namespaced_pod(old.metadata.name, self.namespace)  # type: ignore[attr-defined]
        self.events.append(f"deleted pod {old.metadata.name}")
        self.wait_ready(other_than=old.metadata.uid)
        self.starts += 1

    def log_tail(self, lines: int = 30) -> str:
        """The last `lines` of the pod's log; when its container has no output yet (it crashed and was
        restarted: a crash loop without a readiness probe looks Ready in between), the previous container's."""
        if self.last_pod is None:
            return "(no pod seen)"
        try:
            text = self._log(lines, previous=False)
        except Exception as exc:  # the pod may be gone: say so in the report
            return f"(log of {self.last_pod} unreadable: {exc})"
        if text.strip():
            return text
        try:
            return f"(no output yet; the previous container's log:)\n{self._log(lines, previous=True)}"
        except Exception:  # no previous container: it has just not written anything
            return "(no output yet)"

    def _log(self, lines: int, *, previous: bool) -> str:
        # Read raw: the client turns a body that is not JSON into str(bytes) ("b'...'") otherwise.
        answer = self.kube.core.read_namespaced_pod_log(  # type: ignore[attr-defined]
            self.last_pod, self.namespace, tail_lines=lines, previous=previous, _preload_content=False
        )
        return answer.data.decode(errors="replace")

    def report(self) -> str:
        return (
            f"DaemonSet: {self.namespace}/{self.ds_name}\nstarts: {self.starts}\nactions: {'; '.join(self.events)}\n"
            f"--- log of {self.last_pod} (last 80 lines) ---\n{self.log_tail(80)}"
        )
