"""The xdist controller sweeps the clusters of workers that ended before their teardown."""

from types import SimpleNamespace

import pytest

from device_conformance.pytest_plugin import worker_leftovers
from device_conformance.settings import PROVIDER_CAPABILITIES


def _config(*, numprocesses, worker=False, collectonly=False):
    config = SimpleNamespace(option=SimpleNamespace(numprocesses=numprocesses, collectonly=collectonly))
    if worker:
        config.workerinput = {"workerid": "gw0"}
    return config


@pytest.mark.parametrize(
    ("numprocesses", "worker", "expected"),
    [(4, False, True), (4, True, False), (None, False, False), (0, False, False)],
)
def test_only_the_process_that_spawned_workers_is_the_controller(numprocesses, worker, expected):
    assert worker_leftovers.is_xdist_controller(_config(numprocesses=numprocesses, worker=worker)) is expected


def _run(monkeypatch, config, leftovers):
    swept, said = [], []
    settings = SimpleNamespace(capabilities=SimpleNamespace(leftovers=leftovers))
    monkeypatch.setattr(worker_leftovers, "session_settings", lambda _: settings)
    monkeypatch.setattr(worker_leftovers, "say", lambda _, message: said.append(message))

    def sweep(log):
        swept.append("called")
        log("found run r1 left by a crashed or interrupted session (owner pid 7 is gone); cleaning it up")
        return ["r1", "r2"]

    monkeypatch.setattr("device_conformance.providers.load", lambda target: sweep)
    worker_leftovers.pytest_unconfigure(config)
    return swept, said


def test_the_controller_sweeps_and_says_what_it_tore_down(monkeypatch):
    swept, said = _run(monkeypatch, _config(numprocesses=2), "some.module:sweep")
    assert swept == ["called"]
    assert said[-1] == "tore down 2 cluster(s) of workers that ended before their teardown: r1, r2"


@pytest.mark.parametrize(
    "config",
    [_config(numprocesses=2, worker=True), _config(numprocesses=None), _config(numprocesses=2, collectonly=True)],
)
def test_a_worker_a_run_without_xdist_or_a_collection_sweeps_nothing(monkeypatch, config):
    assert _run(monkeypatch, config, "some.module:sweep") == ([], [])


def test_a_provider_without_leftovers_is_not_swept(monkeypatch):
    assert _run(monkeypatch, _config(numprocesses=2), None) == ([], [])


def test_each_provider_that_brings_up_clusters_names_a_sweep_in_its_own_folder():
    for name, capabilities in PROVIDER_CAPABILITIES.items():
        if capabilities.brings_up_clusters:
            assert capabilities.leftovers is not None, name
            assert capabilities.leftovers.startswith(f"device_conformance.providers.{name}."), name
        else:
            assert capabilities.leftovers is None, name
