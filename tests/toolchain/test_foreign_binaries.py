"""Binaries of another architecture: the cache is keyed by version, not by architecture, so an entry a machine of
the other architecture filled (a shared DEVICE_CONFORMANCE_CACHE), or a K8S_BIN_DIR of such binaries, is refused
naming the fix, never run (exec format error) nor thrown away and rebuilt."""

from __future__ import annotations

import os
import struct

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import binaries, platform_arch

V = KubeVersion(1, 36, 4)


def elf(machine: int, *, big_endian: bool = False) -> bytes:
    """The first bytes of a 64-bit ELF executable for `machine` (e_machine at offset 18)."""
    order = ">" if big_endian else "<"
    return b"\x7fELF" + bytes([2, 2 if big_endian else 1, 1]) + bytes(9) + struct.pack(f"{order}HH", 2, machine)


@pytest.mark.parametrize(
    ("header", "arch"),
    [
        (elf(62) + bytes(64), "amd64"),
        (elf(183) + bytes(64), "arm64"),
        (elf(183, big_endian=True) + bytes(64), "arm64"),
        (elf(243) + bytes(64), "elf-machine-243"),
        (b"#!/bin/sh\necho kubelet\n", None),
        (b"\x7fELF\x02\x01", None),
    ],
)
def test_an_elf_files_architecture_is_read_from_its_header(tmp_path, header, arch):
    (tmp_path / "kubelet").write_bytes(header)
    assert platform_arch.binary_arch(tmp_path / "kubelet") == arch


def test_a_missing_file_has_no_architecture(tmp_path):
    assert platform_arch.binary_arch(tmp_path / "absent") is None


@pytest.fixture
def on_amd64(monkeypatch):
    monkeypatch.setattr(platform_arch.platform, "machine", lambda: "x86_64")


def _fill_foreign(version: KubeVersion, target, components, progress) -> None:
    for name in components:
        (target / name).write_bytes(elf(183) + bytes(64))


def test_a_cache_entry_of_another_architecture_is_refused_naming_the_fix_and_kept(monkeypatch, tmp_path, on_amd64):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    monkeypatch.setattr(binaries, "build_release", _fill_foreign)  # as an arm64 machine sharing the cache filled it
    monkeypatch.setattr(binaries, "_download_release", lambda *a: False)
    first = binaries.ensure_binaries(V, components=binaries.KUBELET_ONLY, progress=lambda _: None)
    with pytest.raises(BadInput) as refused:
        binaries.ensure_binaries(V, components=binaries.KUBELET_ONLY, progress=lambda _: None)
    assert refused.value.problem == (
        f"the binary cache entry {first.directory} holds binaries built for another architecture than this amd64 "
        "host: kubelet (arm64)"
    )
    assert refused.value.fix == (
        "give this machine a cache of its own: set DEVICE_CONFORMANCE_CACHE to a directory only amd64 machines use"
    )
    assert first.path("kubelet").exists(), "the other machine's entry is left to it"


def test_a_k8s_bin_dir_of_another_architecture_is_refused_before_running_anything(tmp_path, on_amd64):
    for name in binaries.COMPONENTS:
        (tmp_path / name).write_bytes(elf(183) + bytes(64))
        os.chmod(tmp_path / name, 0o755)
    with pytest.raises(BadInput) as refused:
        binaries.ensure_binaries(V, user_dir=tmp_path, progress=lambda _: None)
    found = ", ".join(f"{name} (arm64)" for name in binaries.COMPONENTS)
    assert refused.value.problem == (
        f"K8S_BIN_DIR={tmp_path} holds binaries built for another architecture than this amd64 host: {found}"
    )
    assert refused.value.fix == "put linux/amd64 binaries of v1.36.4 there, or unset K8S_BIN_DIR to build them"
