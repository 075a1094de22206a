"""The real kind CLI against a real dockerd. No kindest/node image can be pulled here, so the "cluster"
nodes are fake-node containers carrying kind's labels (what `kind get clusters/nodes`, `kind export
logs` and `kind delete cluster` look for), and `kind create` runs on the fake image until kubeadm."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
import yaml

from device_conformance.core.errors import ConformanceError
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.kind.cli import KindCLI
from device_conformance.providers.kind.layout import NODE_MOUNTS, KindLayout
from device_conformance.providers.kind.provider import KindProvider
from device_conformance.providers.kind.state import KindState
from device_conformance.providers.kind.tools import find_kind
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.images.build import PAUSE_IMAGE, WORKLOAD_IMAGE, build_images

pytestmark = [pytest.mark.kind, pytest.mark.docker]

CLUSTER_LABEL = "io.x-k8s.kind.cluster"
ROLE_LABEL = "io.x-k8s.kind.role"


@pytest.fixture
def kind_state(tmp_path, monkeypatch):
    root = tmp_path / "kind"
    monkeypatch.setenv("DEVICE_CONFORMANCE_KIND_STATE", str(root))
    return root


@pytest.fixture
def kind_cli(docker_engine):
    kind = find_kind()
    if kind is None:
        pytest.skip("kind is not installed (device-conformance setup --provider kind: go install sigs.k8s.io/kind)")
    return KindCLI(kind, docker_engine)


@pytest.fixture
def fake_cluster(kind_cli, start_fake_node, kind_state):
    """A 'kind cluster' of one fake control-plane node with our per-node host directories bound."""
    name = f"dc-fake-{uuid.uuid4().hex[:6]}"
    layout = KindLayout.for_cluster(name)
    mounts = layout.node_mounts(0)
    for host_dir in mounts.values():
        host_dir.mkdir(parents=True)
    # kind takes the API endpoint from this label when present (Docker Desktop's), so no port is needed.
    labels = {CLUSTER_LABEL: name, ROLE_LABEL: "control-plane", "desktop.docker.io/ports/6443/tcp": "127.0.0.1:6443"}
    start_fake_node(f"{name}-control-plane", mounts, labels)
    yield name, layout
    kind_cli.docker.run(["rm", "-f", "-v", f"{name}-control-plane"], check=False)


def test_kind_lists_the_cluster_and_its_node_with_our_mounts(kind_cli, fake_cluster):
    name, layout = fake_cluster
    assert name in kind_cli.clusters()
    assert kind_cli.nodes(name) == [f"{name}-control-plane"]
    mounts = kind_cli.node_mounts(f"{name}-control-plane")
    assert {path: mounts[path] for path in NODE_MOUNTS} == layout.node_mounts(0)


def test_provider_builds_kind_nodes_from_what_docker_reports(kind_cli, fake_cluster):
    name, layout = fake_cluster
    provider = KindProvider(KubeVersion.parse("1.37.1"), docker=kind_cli.docker, log=lambda _: None)
    provider.cli = kind_cli
    (node,) = provider._nodes(name)
    assert node.name == f"{name}-control-plane"
    assert node.host_path("/var/lib/kubelet/device-plugins/x.sock") == layout.node_mounts(0)[
        "/var/lib/kubelet/device-plugins"] / "x.sock"  # fmt: skip
    node.kubelet.wait_healthy(timeout=30)  # docker exec into it works


def test_kind_export_logs_collects_the_node(kind_cli, fake_cluster, tmp_path):
    name, _ = fake_cluster
    kind_cli.export_logs(name, tmp_path / "logs")
    node_dir = tmp_path / "logs" / f"{name}-control-plane"
    assert (node_dir / "inspect.json").is_file()
    assert "Reached target Multi-User System" in (node_dir / "serial.log").read_text()
    assert (tmp_path / "logs" / "kind-version.txt").is_file()


def test_only_clusters_we_created_and_lost_are_deleted(kind_cli, fake_cluster, kind_state):
    name, layout = fake_cluster
    provider = KindProvider(KubeVersion.parse("1.37.1"), docker=kind_cli.docker, log=lambda _: None)
    provider.cli = kind_cli
    # No state file: a cluster someone else made (reused by name) -> never touched.
    assert provider.clean_orphans() == []
    # Ours, but the run that made it is alive (this process) -> kept.
    state = KindState(name, True, os.getpid(), "1.37.1", "img", "single-node")
    state.save(layout)
    assert provider.clean_orphans() == []
    # Ours and kept on purpose (--keep-cluster) -> kept even with its run gone.
    state.owner_pid, state.kept = _dead_pid(), True
    state.save(layout)
    assert provider.clean_orphans() == []
    assert name in kind_cli.clusters()
    # Ours, not kept, run gone -> `kind delete cluster` and the host directories go.
    state.kept = False
    state.save(layout)
    assert provider.clean_orphans() == [name]
    assert name not in kind_cli.clusters()
    assert not layout.root.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_failed_create_exports_node_logs_and_deletes_what_it_created(
    kind_cli, fake_node_image, kind_state, tmp_path, monkeypatch
):
    """`kind create cluster` with our rendered config, for real: kind accepts the config, creates its
    network and the node container (with our per-node mounts) from the fake image, then fails: here at
    `docker run --privileged` (this VM's capability bounding set lacks CAP_SYS_RESOURCE, so no kind node
    can start on it), elsewhere at kubeadm (the fake node has none). The provider exports kind's logs
    and deletes the retained node and its host directories."""
    monkeypatch.setenv("PATH", f"{kind_cli.kind.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("KIND", str(kind_cli.kind))
    name = f"dc-create-{uuid.uuid4().hex[:6]}"
    provider = KindProvider(
        KubeVersion.parse("1.37.1"),
        cluster_name=name,
        image=fake_node_image,
        artifacts=tmp_path / "artifacts",
        docker=kind_cli.docker,
        log=lambda _: None,
    )
    with pytest.raises(ConformanceError, match="kind create cluster") as failure:
        provider.up()
    message = str(failure.value)
    assert "✓ Ensuring node image" in message
    assert "Preparing nodes" in message or "kubeadm" in message
    logs = tmp_path / "artifacts" / f"kind-create-{name}"
    assert (logs / f"{name}-control-plane" / "inspect.json").is_file()
    inspect = (logs / f"{name}-control-plane" / "inspect.json").read_text()
    assert str(KindLayout.for_cluster(name).node_mounts(0)["/var/lib/kubelet/device-plugins"]) in inspect
    assert name not in kind_cli.clusters()
    assert not KindLayout.for_cluster(name).root.exists()


def test_reusing_a_cluster_by_name_exports_its_kubeconfig_loads_images_and_never_deletes_it(kind_cli, fake_cluster):
    name, _ = fake_cluster
    probe = kind_cli.docker.run(["exec", "--privileged", f"{name}-control-plane", "true"], check=False)
    if probe.returncode != 0:
        # kind runs every command in a node as `docker exec --privileged`.
        error = (probe.stdout + probe.stderr).decode().strip()[-100:]
        pytest.skip(f"`docker exec --privileged` (how kind runs node commands) fails on this host: {error}")
    provider = KindProvider(KubeVersion.parse("1.37.1"), cluster_name=name, docker=kind_cli.docker, log=lambda _: None)
    provider.cli = kind_cli
    try:
        kubeconfig = provider._reuse(name)
    except BaseException:
        provider.down()
        raise
    exported = yaml.safe_load(kubeconfig.read_text())
    assert exported["current-context"] == f"kind-{name}"
    assert exported["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    # `kind load image-archive` streams our OCI tarballs into the node's `ctr images import`.
    for image in build_images(cache_root() / "images"):
        kind_cli.load_image_archive(name, image.tarball)
    imported = kind_cli.docker.text(["exec", f"{name}-control-plane", "cat", "/var/lib/fake-ctr/imported.json"])
    assert WORKLOAD_IMAGE in imported and PAUSE_IMAGE in imported
    assert provider.keep().endswith("(reused, not ours)")
    provider.down()
    assert not kubeconfig.exists()
    assert name in kind_cli.clusters()
