"""The pytest plugin (entry point pytest11): options, markers, fixtures, report header, failure reports.

It prepares nothing until a collected test uses the `cluster` fixture, so `pytest tests/` needs no
cluster and builds nothing; the report header only says what a cluster run would use.
"""

from __future__ import annotations

import importlib

import pytest

from device_conformance.pytest_plugin.markers import MARKERS
from device_conformance.pytest_plugin.options import add_options

FIXTURE_MODULES = (
    "device_conformance.fixtures.session",
    "device_conformance.fixtures.cluster",
    "device_conformance.fixtures.nodes",
    "device_conformance.fixtures.pods",
    "device_conformance.fixtures.device_plugins",
    "device_conformance.fixtures.dra_drivers",
    "device_conformance.fixtures.cri_proxy",
    "device_conformance.fixtures.vendor",
    "device_conformance.pytest_plugin.vendor",
    "device_conformance.pytest_plugin.report",
    "device_conformance.pytest_plugin.declarative_markers",
    "device_conformance.pytest_plugin.known_bug_blocks",
    "device_conformance.pytest_plugin.declared_json",
    "device_conformance.pytest_plugin.xdist_groups",
    "device_conformance.pytest_plugin.group_scheduling",
    "device_conformance.pytest_plugin.bringup_report",
    "device_conformance.pytest_plugin.provider_preflight",
    "device_conformance.pytest_plugin.header",
    "device_conformance.pytest_plugin.marker_expression",
    "device_conformance.pytest_plugin.opt_in",
    "device_conformance.pytest_plugin.worker_leftovers",
    "device_conformance.pytest_plugin.overlapping",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    for module in FIXTURE_MODULES:
        # register() rather than import_plugin(): these modules import each other, and import_plugin
        # warns about assertion rewriting for modules already imported (they use no bare asserts).
        if config.pluginmanager.get_plugin(module) is None:
            config.pluginmanager.register(importlib.import_module(module), module)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one cluster per worker, as many as cores and memory allow (pytest_plugin/workers.py).

    Here rather than in a module registered at pytest_configure: xdist asks in pytest_cmdline_main."""
    from device_conformance.core.errors import BadInput
    from device_conformance.fixtures.session import session_settings
    from device_conformance.pytest_plugin.workers import CHOICE_KEY, Choice, auto_choice
    from device_conformance.pytest_plugin.xdist_groups import shared_cluster

    if shared_cluster(config) is not None:
        choice = Choice(1, "one cluster every worker would share: its tests run in turn anyway")  # xdist_groups.py
    else:
        try:
            choice = auto_choice(provider=session_settings(config).provider.value)
        except BadInput as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[CHOICE_KEY] = choice  # the report header says why
    return choice.workers
