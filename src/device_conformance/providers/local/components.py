"""Command lines of the cluster's components (pure: values in, argv out)."""

from __future__ import annotations

from pathlib import Path

from device_conformance.expectations.cluster import ComponentSettings
from device_conformance.providers.local.layout import RunLayout
from device_conformance.providers.local.pki import Pki
from device_conformance.providers.local.ports import Ports
from device_conformance.settings import DEFAULT_KNOBS, ComponentKnobs

SERVICE_CIDR = "10.0.0.0/24"


def etcd_argv(layout: RunLayout, ports: Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        "etcd",
        "--name=dc",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=dc={peer}",
        "--log-level=warn",
        # Throw-away data: skip fsync, it is most of etcd's latency on a small VM.
        "--unsafe-no-fsync",
    ]


def apiserver_argv(
    binary: Path,
    pki: Pki,
    ports: Ports,
    settings: ComponentSettings,
    audit: tuple[Path, Path] | None = None,
    knobs: ComponentKnobs = DEFAULT_KNOBS,
) -> list[str]:
    """audit: (policy file, log file) to write an audit log (configs.audit_policy), None for none. `knobs`: what
    the user asks beyond the version's settings (settings.ComponentKnobs): here its gates for kube-apiserver."""
    argv = [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={pki.cert('apiserver')}",
        f"--tls-private-key-file={pki.key('apiserver')}",
        f"--client-ca-file={pki.ca}",
        f"--service-account-key-file={pki.service_account_public_key}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC",
        f"--kubelet-client-certificate={pki.cert('apiserver-kubelet-client')}",
        f"--kubelet-client-key={pki.key('apiserver-kubelet-client')}",
        "--kubelet-preferred-address-types=InternalIP",
        "--allow-privileged=true",
        "--enable-admission-plugins=NodeRestriction",
        # A loopback advertise address cannot back the kubernetes Service; nothing here needs it.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
        *knobs.gates_flag("kube-apiserver", settings.feature_gates),
    ]
    if settings.runtime_config:
        argv.append("--runtime-config=" + ",".join(settings.runtime_config))
    if audit is not None:
        policy, log = audit
        argv += [f"--audit-policy-file={policy}", f"--audit-log-path={log}", "--audit-log-format=json"]
    return argv


def _client_flags(kubeconfig: Path) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
    ]


def controller_manager_argv(
    binary: Path,
    pki: Pki,
    ports: Ports,
    kubeconfig: Path,
    settings: ComponentSettings,
    knobs: ComponentKnobs = DEFAULT_KNOBS,
) -> list[str]:
    return [
        str(binary),
        *_client_flags(kubeconfig),
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.controller_manager}",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca}",
        "--use-service-account-credentials=true",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--leader-elect=false",
        "--profiling=false",
        *knobs.gates_flag("kube-controller-manager", settings.feature_gates),
    ]


def scheduler_argv(
    binary: Path,
    ports: Ports,
    kubeconfig: Path,
    config: Path,
    settings: ComponentSettings,
    knobs: ComponentKnobs = DEFAULT_KNOBS,
) -> list[str]:
    return [
        str(binary),
        f"--config={config}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.scheduler}",
        "--profiling=false",
        *knobs.gates_flag("kube-scheduler", settings.feature_gates),
    ]


def kubelet_argv(
    binary: Path,
    config: Path,
    kubeconfig: Path,
    node_name: str,
    node_ip: str,
    settings: ComponentSettings,
    knobs: ComponentKnobs = DEFAULT_KNOBS,
) -> list[str]:
    """The kubelet at the verbosity the session asks (--kubelet-verbosity, default 2: tests read V(2) lines), with
    the version's gates and the user's, then the user's extra flags (--kubelet-arg) last."""
    return [
        str(binary),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        f"--hostname-override={node_name}",
        f"--node-ip={node_ip}",
        "--root-dir=/var/lib/kubelet",
        f"--v={knobs.kubelet_verbosity}",
        *knobs.gates_flag("kubelet", settings.feature_gates),
        *knobs.kubelet_args,
    ]


def containerd_argv(binary: Path, config: Path) -> list[str]:
    return [str(binary), f"--config={config}"]


def containerd_env(bin_dir: Path, path: str) -> dict[str, str]:
    """Our containerd's directory first on PATH: containerd finds the io.containerd.runc.v2 shim through PATH
    for containers not made through CRI (`ctr run`), and Debian's 1.6 shim there cannot talk to a 2.x daemon."""
    return {"PATH": f"{bin_dir}:{path}" if path else str(bin_dir)}
