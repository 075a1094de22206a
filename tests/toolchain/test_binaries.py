import threading
import time

from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion
from device_conformance.toolchain import binaries, cache

V = KubeVersion(1, 36, 4)


def _fake_build(monkeypatch, built):
    def build(version, target, components, progress):
        built.append(tuple(components))
        for name in components:
            (target / name).write_bytes(f"{name} {version}".encode())

    monkeypatch.setattr(binaries, "build_release", build)
    monkeypatch.setattr(binaries, "_download_release", lambda *a: False)


def test_kubelet_only_is_built_alone_into_its_own_entry(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    built = []
    _fake_build(monkeypatch, built)
    kubelet = binaries.ensure_binaries(V, components=binaries.KUBELET_ONLY, progress=lambda _: None)
    assert built == [("kubelet",)]
    assert kubelet.directory == tmp_path / "kubernetes" / "v1.36.4-kubelet" and kubelet.source == "go build"
    assert kubelet.path("kubelet").read_bytes() == b"kubelet 1.36.4"
    again = binaries.ensure_binaries(V, components=["kubelet"], progress=lambda _: None)
    assert again.source == "cache" and built == [("kubelet",)]


def test_kubelet_only_comes_from_the_full_entry_when_there_is_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    built = []
    _fake_build(monkeypatch, built)
    full = binaries.ensure_binaries(V, progress=lambda _: None)
    assert built == [binaries.COMPONENTS] and full.directory == tmp_path / "kubernetes" / "v1.36.4"
    kubelet = binaries.ensure_binaries(V, components=binaries.KUBELET_ONLY, progress=lambda _: None)
    assert (kubelet.directory, kubelet.source) == (full.directory, "cache") and len(built) == 1


def test_binary_source_says_where_without_building(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    assert binaries.binary_source(V).startswith("not cached: fetched or built (go build) at session start into ")
    assert binaries.binary_source(V, user_dir=tmp_path / "bin") == f"K8S_BIN_DIR {tmp_path / 'bin'}"
    _fake_build(monkeypatch, [])
    binaries.ensure_binaries(V, components=binaries.KUBELET_ONLY, progress=lambda _: None)
    assert binaries.binary_source(V, components=binaries.KUBELET_ONLY) == (
        f"cache {tmp_path / 'kubernetes' / 'v1.36.4-kubelet'}"
    )
    assert binaries.binary_source(V).startswith("not cached")


def test_concurrent_fills_of_one_entry_build_once(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    fills = []

    def fill(staging):
        fills.append(staging)
        time.sleep(0.2)  # the other thread arrives while this one builds
        (staging / "tool").write_bytes(b"x")
        return "built"

    sources = []
    threads = [
        threading.Thread(
            target=lambda: sources.append(cache.ensure_cached(tmp_path / "entry", ["tool"], fill, lambda _: None))
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fills) == 1 and sorted(sources) == ["built", "cache"]


def test_setup_builds_only_the_kubelet_of_upgrade_from(monkeypatch, capsys):
    from device_conformance.providers.local import setup
    from device_conformance.settings import resolve

    asked = []

    def ensure(version, *, components, progress):
        asked.append((version, tuple(components)))
        return cache.BinarySet(version, cache.cache_root() / "x", "cache")

    monkeypatch.setattr(setup, "ensure_binaries", ensure)
    setup.ensure_upgrade_kubelet(resolve({}, {}))
    assert asked == [(KubeVersion(1, 36, 4), ("kubelet",))]
    setup.ensure_upgrade_kubelet(resolve({}, {"UPGRADE_FROM": "1.35.8"}))
    assert len(asked) == 1 and f"1.35.8 is not one minor below {DEFAULT_K8S_VERSION}" in capsys.readouterr().out


def test_node_image_tools_are_built_into_their_own_entry(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    built = []
    _fake_build(monkeypatch, built)
    tools = binaries.ensure_binaries(V, components=["kube-proxy", "kubeadm", "kubectl"], progress=lambda _: None)
    assert built == [("kubeadm", "kubectl", "kube-proxy")]
    assert tools.directory == tmp_path / "kubernetes" / "v1.36.4-kubeadm-kubectl-kube-proxy"
    assert tools.path("kubeadm").read_bytes() == b"kubeadm 1.36.4"
