"""`setup --provider kind` on a fresh machine: the node image build's Debian packages are installed when missing."""

from __future__ import annotations

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.providers.kind import host


@pytest.fixture
def apt(monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(host, "run", lambda argv, **_: calls.append(list(argv)))
    monkeypatch.setattr(host.os, "geteuid", lambda: 0)
    return calls


def fake_host(monkeypatch, present: set[str]) -> None:
    """Commands on PATH and absolute paths that exist: only those in `present`."""
    monkeypatch.setattr(host.shutil, "which", lambda command: f"/usr/bin/{command}" if command in present else None)
    monkeypatch.setattr(host.Path, "exists", lambda path: str(path) in present)


def test_a_fresh_machine_gets_every_package_in_one_apt_call(monkeypatch, apt):
    fake_host(monkeypatch, set())
    assert host.install_node_image_packages(progress=lambda _: None) == ["busybox-static", "debootstrap", "gcc"]
    assert apt == [
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "busybox-static", "debootstrap", "gcc"],
    ]


def test_only_what_is_missing_is_installed(monkeypatch, apt):
    fake_host(monkeypatch, {"gcc", "/bin/busybox"})
    assert host.install_node_image_packages(progress=lambda _: None) == ["debootstrap"]
    assert apt[-1] == ["apt-get", "install", "-y", "-qq", "debootstrap"]


def test_nothing_missing_runs_no_apt(monkeypatch, apt):
    fake_host(monkeypatch, {"gcc", "/bin/busybox", "debootstrap"})
    assert host.install_node_image_packages(progress=lambda _: None) == []
    assert apt == []


def test_not_root_names_the_apt_command(monkeypatch, apt):
    fake_host(monkeypatch, {"gcc", "/bin/busybox"})
    monkeypatch.setattr(host.os, "geteuid", lambda: 1000)
    with pytest.raises(BadInput) as raised:
        host.install_node_image_packages(progress=lambda _: None)
    assert "sudo apt-get install -y debootstrap" in str(raised.value.fix)
    assert apt == []
