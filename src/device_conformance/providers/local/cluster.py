"""A real single-node Kubernetes cluster from local processes.

Control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) on loopback ports of
its own; the node (containerd, runc, CNI, kubelet) inside a private mount namespace. All state lives
under one run directory (see layout.py) and is recorded in state.json, so teardown works from any
process, also after a crash.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from device_conformance.core import timeouts
from device_conformance.core.errors import ConformanceError
from device_conformance.expectations.cluster import control_plane_settings_for, settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.process import run
from device_conformance.node.cri import CRIClient
from device_conformance.providers.local import cgroups, components, configs, health, ports
from device_conformance.providers.local.layout import RunLayout, state_root
from device_conformance.providers.local.leftovers import live_port_bases
from device_conformance.providers.local.node_namespace import NodeNamespace
from device_conformance.providers.local.pki import Pki, generate_pki, write_kubeconfig
from device_conformance.providers.local.processes import RUN_ENV, ProcessRecord, exit_reason, spawn
from device_conformance.providers.local.state import RunState
from device_conformance.providers.local.teardown import teardown
from device_conformance.settings import DEFAULT_KNOBS, ComponentKnobs
from device_conformance.toolchain.binaries import KubernetesBinaries
from device_conformance.toolchain.containerd import ContainerdBinaries
from device_conformance.toolchain.images.build import PAUSE_IMAGE, Image
from device_conformance.wait.core import Abort, Pending
from device_conformance.wait.progress import Budget, nothing, of_process, run_progressing, until_progressing

Log = Callable[[str], None]
# Components start for as long as they make progress (CPU, their log): wait/progress.py.
STARTUP_BUDGET = Budget(timeouts.COMPONENT_START_STALL, timeouts.COMPONENT_START_CEILING)
IMPORT_BUDGET = Budget(timeouts.IMAGE_IMPORT_STALL, timeouts.IMAGE_IMPORT_CEILING)
# How much of a component's log that died at start-up is searched for the refusal of a user's gate or flag.
REFUSAL_LOG_LINES = 200


class LocalCluster:
    def __init__(
        self,
        layout: RunLayout,
        state: RunState,
        binaries: KubernetesBinaries,
        containerd: ContainerdBinaries,
        node_kubelet: tuple[Path, KubeVersion] | None = None,
        knobs: ComponentKnobs = DEFAULT_KNOBS,
    ) -> None:
        self.layout = layout
        self.state = state
        self.binaries = binaries
        self.containerd = containerd
        self.pki = Pki(layout.pki)
        self.ports = ports.Ports(**state.ports)
        # The control plane's; with an older kubelet it also serves the API version that kubelet reads.
        self.settings = control_plane_settings_for(
            binaries.version, node_kubelet[1] if node_kubelet else binaries.version
        )
        # The node's own kubelet (binary, release) when it is not the control plane's (KUBELET_VERSION).
        self.node_kubelet = node_kubelet
        # What the user asks of the components beyond the version's settings (--kubelet-verbosity, --feature-gates,
        # --kubelet-arg, --kubelet-config): every start of a component, the kubelet's restarts too.
        self.knobs = knobs
        # The kubelet's container runtime endpoint when not containerd's socket (a CRI proxy, fixtures/cri_proxy.py).
        self.runtime_endpoint: str | None = None
        self._kubelet_version: KubeVersion | None = None

    # ---- bring-up -------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        binaries: KubernetesBinaries,
        containerd: ContainerdBinaries,
        images: list[Image],
        log: Log = print,
        node_kubelet: tuple[Path, KubeVersion] | None = None,
        knobs: ComponentKnobs = DEFAULT_KNOBS,
    ) -> LocalCluster:
        run_id = "r" + secrets.token_hex(3)
        layout = RunLayout.for_run(run_id)
        state = RunState.new(run_id, str(binaries.version), node_name=f"dc-{run_id}")

        def reserve(chosen: ports.Ports) -> None:
            # Called only once the block is known free: a busy pinned port leaves no run directory.
            state.ports = chosen.as_dict()
            layout.root.mkdir(parents=True)
            state.save(layout)  # under the port lock: from here on live_port_bases() of others sees it

        try:
            # From the moment the run directory may exist: a Ctrl-C anywhere after it tears the run down.
            ports.allocate(state_root(), live_port_bases, reserve)
            state.bridge = f"dc{run_id}"
            state.subnet = f"10.{88 + (state.ports['etcd_client'] // ports.PORTS_PER_RUN) % 150}.0.0/24"
            state.cgroup_root = f"/device-conformance-{run_id}"
            state.binaries_dir = str(binaries.directory)
            state.containerd_dir = str(containerd.directory)
            state.save(layout)
            cluster = cls(layout, state, binaries, containerd, node_kubelet, knobs)
            cluster._bring_up(images, log)
        except BaseException:
            if layout.root.exists():
                log(f"bring-up of {run_id} failed; tearing down what was started")
                for problem in teardown(layout, log):
                    log(f"teardown left something behind: {problem}")
            raise
        return cluster

    def _bring_up(self, images: list[Image], log: Log) -> None:
        started = time.monotonic()
        generate_pki(self.layout.pki, self.state.node_name)
        server = f"https://127.0.0.1:{self.ports.apiserver}"
        write_kubeconfig(self.layout.kubeconfig, server, self.pki, "admin")
        self.layout.config_dir.mkdir(parents=True, exist_ok=True)
        for identity in ("controller-manager", "scheduler", "kubelet"):
            write_kubeconfig(self.layout.config_dir / f"{identity}.kubeconfig", server, self.pki, identity)
        # The node (runtime + images) comes up while the control plane starts: they are independent.
        with ThreadPoolExecutor(max_workers=1) as pool:
            node_ready = pool.submit(self._start_runtime, images)
            self._start_control_plane()
            node_ready.result()
        self.start_kubelet()
        self.wait_kubelet_healthy()
        log(
            f"cluster {self.state.run_id} up in {time.monotonic() - started:.1f}s (kubeconfig {self.layout.kubeconfig})"
        )

    def _start(
        self, name: str, argv: list[str], in_node: bool = False, env: dict[str, str] | None = None
    ) -> ProcessRecord:
        if in_node:
            argv = self.namespace.wrap(argv)
        process = spawn(name, argv, self.layout.log(name), env={RUN_ENV: self.state.run_id, **(env or {})})
        self.state.record(process)
        self.state.save(self.layout)
        return process

    def controller_manager_metrics(self) -> str:
        """kube-controller-manager's /metrics (admin client certificate; authorized by the API server)."""
        url = f"https://127.0.0.1:{self.ports.controller_manager}/metrics"
        return health.get(url, self.pki, timeout=10, verify=False)

    def _wait_healthy(self, name: str, check: Callable[[], bool], budget: Budget = STARTUP_BUDGET) -> None:
        """Until check() holds, for as long as the component uses CPU or writes its log; at once when it died."""

        def probe() -> bool | Pending:
            process = self.state.process(name)
            if process is not None and not process.alive():
                raise Abort(f"{name} {exit_reason(process)}")
            return True if check() else Pending(f"{name} not healthy yet")

        try:
            record = self.state.process(name)
            until_progressing(
                probe,
                what=f"{name} to become healthy",
                progress=of_process(record.pid, [self.layout.log(name)]) if record else nothing,
                budget=budget,
            )
        except (Abort, ConformanceError) as exc:
            # A gate or flag of the user's that the component refused: the user's input, named as such.
            refused = self.knobs.refusal(name, self.log_tail(name, lines=REFUSAL_LOG_LINES))
            if refused is not None:
                raise refused from None
            raise ConformanceError(
                f"{exc}\nlog tail of {name} ({self.layout.log(name)}):\n{self.log_tail(name)}"
            ) from None

    def _start_control_plane(self) -> None:
        self.layout.config_dir.mkdir(parents=True, exist_ok=True)
        self._start("etcd", components.etcd_argv(self.layout, self.ports))
        self._wait_healthy("etcd", lambda: health.etcd_healthy(self.ports.etcd_client))
        audit_policy = self.layout.config_dir / "audit-policy.yaml"
        audit_policy.write_text(configs.audit_policy())
        apiserver = components.apiserver_argv(
            self.binaries.path("kube-apiserver"),
            self.pki,
            self.ports,
            self.settings,
            audit=(audit_policy, self.layout.audit_log),
            knobs=self.knobs,
        )
        self._start("kube-apiserver", apiserver)
        self._wait_healthy(
            "kube-apiserver", lambda: health.ok(f"https://127.0.0.1:{self.ports.apiserver}/readyz", self.pki)
        )
        scheduler_config = self.layout.config_dir / "scheduler.yaml"
        scheduler_kubeconfig = self.layout.config_dir / "scheduler.kubeconfig"
        scheduler_config.write_text(configs.scheduler_config(scheduler_kubeconfig))
        kcm_kubeconfig = self.layout.config_dir / "controller-manager.kubeconfig"
        self._start(
            "kube-controller-manager",
            components.controller_manager_argv(
                self.binaries.path("kube-controller-manager"),
                self.pki,
                self.ports,
                kcm_kubeconfig,
                self.settings,
                knobs=self.knobs,
            ),
        )
        self._start(
            "kube-scheduler",
            components.scheduler_argv(
                self.binaries.path("kube-scheduler"),
                self.ports,
                scheduler_kubeconfig,
                scheduler_config,
                self.settings,
                knobs=self.knobs,
            ),
        )
        self._wait_healthy(
            "kube-controller-manager", lambda: health.ok(f"https://127.0.0.1:{self.ports.controller_manager}/healthz")
        )
        self._wait_healthy("kube-scheduler", lambda: health.ok(f"https://127.0.0.1:{self.ports.scheduler}/healthz"))

    def _start_runtime(self, images: list[Image]) -> None:
        cgroups.create_root(self.state.cgroup_root)
        namespace = NodeNamespace.create(self.layout)
        self.state.namespace_holder, self.state.namespace_inode = namespace.holder_pid, namespace.inode
        self.state.save(self.layout)
        self._create_bridge()
        self.layout.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        (self.layout.cni_conf_dir / "10-device-conformance.conflist").write_text(
            configs.cni_conflist(f"dc-{self.state.run_id}", self.state.bridge, self.state.subnet)
        )
        config = self.layout.containerd / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            configs.containerd_config(
                self.layout.containerd,
                self.layout.containerd_socket,
                self.layout.cni_conf_dir,
                PAUSE_IMAGE,
                shim=self.containerd.path("containerd-shim-runc-v2"),
                runc=shutil.which("runc") or "runc",
            )
        )
        self._start(
            "containerd",
            components.containerd_argv(self.containerd.path("containerd"), config),
            in_node=True,
            env=components.containerd_env(self.containerd.directory, os.environ.get("PATH", "")),
        )
        self._wait_healthy("containerd", self._cri_answers)
        containerd = self.state.process("containerd")
        for image in images:
            # ctr streams the tarball; containerd unpacks it: either working is progress.
            run_progressing(
                self.ctr(["images", "import", "--no-unpack=false", str(image.tarball)]),
                what=f"containerd to import {image.tarball.name}",
                budget=IMPORT_BUDGET,
                watch=lambda: [containerd.pid] if containerd else [],
            )

    @property
    def node_ip(self) -> str:
        """The bridge's gateway address: the kubelet refuses a loopback node IP."""
        return self.state.subnet.rsplit(".", 1)[0] + ".1"

    def _create_bridge(self) -> None:
        # Created here rather than by the CNI plugin, so the node IP exists before the first pod.
        bridge = self.state.bridge
        run(["ip", "link", "add", "name", bridge, "type", "bridge"])
        run(["ip", "addr", "add", f"{self.node_ip}/24", "dev", bridge])
        run(["ip", "link", "set", bridge, "up"])

    def _cri_answers(self) -> bool:
        if not self.layout.containerd_socket.is_socket():
            return False
        try:
            with CRIClient(str(self.layout.containerd_socket)) as cri:
                cri.version()
            return True
        except Exception:
            return False

    def ctr(self, argv: list[str]) -> list[str]:
        ctr = str(self.containerd.path("ctr"))
        return [ctr, f"--address={self.layout.containerd_socket}", "--namespace=k8s.io", *argv]

    # ---- the kubelet (providers/local/node.py supervises it through these) -----------------
    @property
    def namespace(self) -> NodeNamespace:
        return NodeNamespace(self.state.namespace_holder, self.state.namespace_inode)

    @property
    def kubelet_config_path(self) -> Path:
        return self.layout.config_dir / "kubelet.yaml"

    @property
    def kubelet_version(self) -> KubeVersion:
        """The version of the kubelet running now (another one while an upgrade test swapped it in)."""
        return self._kubelet_version or self.own_kubelet[1]

    @property
    def own_kubelet(self) -> tuple[Path, KubeVersion]:
        """The node's own kubelet (binary, release): the control plane's unless KUBELET_VERSION skews it."""
        return self.node_kubelet or (self.binaries.path("kubelet"), self.binaries.version)

    def start_kubelet(self, binary: Path | None = None, version: KubeVersion | None = None) -> ProcessRecord:
        """Start the kubelet (by default the node's own); `version` picks the config rules."""
        if binary is None:
            binary, version = self.own_kubelet
        settings = settings_for(version) if version else self.settings
        self.kubelet_config_path.write_text(
            configs.kubelet_config(
                self.node_ip,
                self.ports,
                self.pki.ca,
                self.layout.containerd_socket,
                self.state.cgroup_root,
                settings,
                knobs=self.knobs,
                runtime_endpoint=self.runtime_endpoint,
            )
        )
        argv = components.kubelet_argv(
            binary,
            self.kubelet_config_path,
            self.layout.config_dir / "kubelet.kubeconfig",
            self.state.node_name,
            self.node_ip,
            settings,
            knobs=self.knobs,
        )
        process = self._start("kubelet", argv, in_node=True)
        self._kubelet_version = version or self.own_kubelet[1]
        self.state.processes["kubelet"]["version"] = str(self._kubelet_version)  # for people reading state.json
        self.state.save(self.layout)
        return process

    def kubelet_healthy(self) -> bool:
        return health.ok(f"http://127.0.0.1:{self.ports.kubelet_healthz}/healthz")

    def wait_kubelet_healthy(self, budget: Budget = STARTUP_BUDGET) -> None:
        self._wait_healthy("kubelet", self.kubelet_healthy, budget)

    def log_tail(self, name: str, lines: int = 40) -> str:
        try:
            return "\n".join(self.layout.log(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ---- teardown -------------------------------------------------------------------------
    def keep(self) -> None:
        self.state.kept = True
        self.state.save(self.layout)

    def down(self, log: Log = lambda _: None) -> list[str]:
        return teardown(self.layout, log)
