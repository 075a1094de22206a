import hashlib
import json

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.toolchain import cache, go_tmpdir
from device_conformance.toolchain import containerd as containerd_build

MODULE = "github.com/containerd/containerd/v2"


def test_install_commands_build_daemon_ctr_and_shim_at_one_version():
    daemon, shim = containerd_build.install_commands("/usr/bin/go", "v2.3.4")
    assert daemon[:3] == ["/usr/bin/go", "install", "-v"]
    assert daemon[daemon.index("-tags") + 1] == "no_btrfs,no_devmapper,no_zfs"
    assert daemon[-2:] == [f"{MODULE}/cmd/containerd@v2.3.4", f"{MODULE}/cmd/ctr@v2.3.4"]
    assert shim[shim.index("-tags") + 1] == "no_grpc"
    assert shim[-1] == f"{MODULE}/cmd/containerd-shim-runc-v2@v2.3.4"
    for argv in (daemon, shim):
        assert f"-X {MODULE}/version.Version=v2.3.4" in argv[argv.index("-ldflags") + 1]


def test_missing_go_toolchain_is_reported_when_containerd_must_be_built(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    monkeypatch.setattr(go_tmpdir.shutil, "which", lambda _: None)
    with pytest.raises(BadInput) as excinfo:
        containerd_build.ensure_containerd("v2.3.4", progress=lambda _: None)
    assert "containerd v2.3.4" in excinfo.value.problem and "Go >= 1.26" in excinfo.value.fix
    assert not (tmp_path / "containerd" / "v2.3.4").exists()  # nothing half-built is left as a cache entry
    assert list((tmp_path / "containerd").iterdir()) == []


def test_cached_containerd_is_reused_and_a_corrupt_one_rebuilt(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    builds = []

    def fake_run_go(argv, workdir, label, progress, env=None):
        builds.append(argv[-1])
        for package in argv[argv.index("-ldflags") + 4 :]:
            name = package.rsplit("/", 1)[1].split("@")[0]
            (workdir / name).write_bytes(name.encode())
        return 0.0

    monkeypatch.setattr(containerd_build, "run_go", fake_run_go)
    monkeypatch.setattr(containerd_build, "go_binary", lambda *a, **k: "/usr/bin/go")
    first = containerd_build.ensure_containerd("v2.3.4", progress=lambda _: None)
    assert first.source == "go install" and len(builds) == 2
    manifest = json.loads((first.directory / cache.MANIFEST).read_text())
    assert manifest["ctr"] == hashlib.sha256(b"ctr").hexdigest()
    assert containerd_build.ensure_containerd("v2.3.4", progress=lambda _: None).source == "cache"
    first.path("containerd").write_bytes(b"truncated")
    assert containerd_build.ensure_containerd("v2.3.4", progress=lambda _: None).source == "go install"
    assert first.path("containerd").read_bytes() == b"containerd"
