"""The kind provider's preflight: each problem is named with the command that fixes it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.dockercli import Docker
from device_conformance.providers.kind import preflight
from device_conformance.providers.kind.provider import KindProvider


def test_low_inotify_limits_name_the_sysctl(tmp_path):
    (tmp_path / "max_user_watches").write_text("8192\n")
    (tmp_path / "max_user_instances").write_text("1024\n")
    problem = preflight.inotify_problem(tmp_path)
    assert problem is not None
    assert "fs.inotify.max_user_watches=8192" in problem.problem
    assert "sudo sysctl fs.inotify.max_user_watches=524288" in problem.fix
    assert "max_user_instances" not in problem.fix
    (tmp_path / "max_user_watches").write_text("524288\n")
    assert preflight.inotify_problem(tmp_path) is None


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker CLI not installed")
def test_docker_not_running_says_how_to_start_it(tmp_path):
    problem = preflight.docker_problem(Docker(host=f"unix://{tmp_path}/no-such-docker.sock"))
    assert problem is not None
    assert "Docker engine is not reachable" in problem.problem
    assert "dockerd" in problem.fix


def test_missing_docker_cli_is_named(monkeypatch):
    problem = preflight.docker_problem(Docker(binary="no-such-docker-cli"))
    assert problem is not None and "not on PATH" in problem.problem


def test_every_problem_is_reported_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("KIND", str(tmp_path / "missing-kind"))
    monkeypatch.setattr(preflight, "INOTIFY_DIR", tmp_path)
    (tmp_path / "max_user_watches").write_text("1\n")
    with pytest.raises(BadInput) as failure:
        preflight.preflight(
            Docker(binary="no-such-docker-cli"), KubeVersion.parse("1.37.1"), "kindest/node:v1.37.0", clusters=2
        )
    message = str(failure.value)
    assert "kind is not installed" in message
    assert "not on PATH" in message
    assert "inotify" in message


def test_one_cluster_only_warns_about_inotify(tmp_path, monkeypatch):
    monkeypatch.setenv("KIND", str(tmp_path / "missing-kind"))
    monkeypatch.setattr(preflight, "INOTIFY_DIR", tmp_path)
    (tmp_path / "max_user_watches").write_text("1\n")
    said = []
    with pytest.raises(BadInput) as failure:
        preflight.preflight(
            Docker(binary="no-such-docker-cli"), KubeVersion.parse("1.37.1"), "img", clusters=1, log=said.append
        )
    assert "inotify" not in str(failure.value)
    assert any("inotify" in line for line in said)


@pytest.mark.docker
def test_absent_node_image_names_pull_and_published_versions(docker_engine):
    problem = preflight.node_image_problem(docker_engine, "kindest/node:v1.37.1")
    assert problem is not None
    assert "docker pull kindest/node:v1.37.1" in problem.fix
    assert "1.37.0" in problem.fix


def test_provider_names_a_bad_cluster_name():
    with pytest.raises(BadInput, match="not a usable kind cluster name"):
        KindProvider(KubeVersion.parse("1.37.1"), cluster_name="Bad_Name", log=lambda _: None).up()


def test_kind_is_checked_against_the_node_image_version(tmp_path, monkeypatch):
    from device_conformance.expectations.kind import image_version

    assert str(image_version("kindest/node:v1.36.4@sha256:099e")) == "1.36.4"
    assert image_version("my/node:latest") is None
    old = tmp_path / "kind"
    old.write_text("#!/bin/sh\necho 'kind v0.31.0 go1.25.5 linux/amd64'\n")
    old.chmod(0o755)
    monkeypatch.setenv("KIND", str(old))
    with pytest.raises(BadInput, match=r"too old for Kubernetes 1\.37\.0"):
        preflight.preflight(Docker(binary="no-such-docker-cli"), KubeVersion.parse("1.35.8"), "kindest/node:v1.37.0")


def test_kind_version_is_checked_against_the_node_version(tmp_path, monkeypatch):
    old = tmp_path / "kind"
    old.write_text("#!/bin/sh\necho 'kind v0.31.0 go1.25.5 linux/amd64'\n")
    old.chmod(0o755)
    monkeypatch.setenv("KIND", str(old))
    from device_conformance.providers.kind.tools import require_kind

    with pytest.raises(BadInput, match=r"kind v0\.31\.0, too old for Kubernetes 1\.37\.1 .*needs kind >= v0\.32\.0"):
        require_kind(KubeVersion.parse("1.37.1"))
    assert require_kind(KubeVersion.parse("1.35.8")) == old
    monkeypatch.setenv("KIND", str(Path("/nonexistent/kind")))
    with pytest.raises(BadInput, match="kind is not installed"):
        require_kind(KubeVersion.parse("1.37.1"))


def test_raise_inotify_limits_sets_only_the_low_ones(tmp_path):
    (tmp_path / "max_user_watches").write_text("192536\n")
    (tmp_path / "max_user_instances").write_text("1024\n")
    assert preflight.raise_inotify_limits(tmp_path) == ["fs.inotify.max_user_watches=524288"]
    assert (tmp_path / "max_user_watches").read_text() == "524288\n"
    assert (tmp_path / "max_user_instances").read_text() == "1024\n"
    assert preflight.inotify_problem(tmp_path) is None
