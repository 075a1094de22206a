"""`device-conformance e2e`: the installed suites, set up and run as `make e2e` does (cli/e2e.py)."""

from __future__ import annotations

import sys

import pytest

from device_conformance.cli import e2e, main
from device_conformance.core.errors import BadInput


def _suites(at):
    at.mkdir(parents=True)
    (at / "durations.json").write_text("{}")
    return at


def test_an_installed_package_runs_the_suites_beside_it(tmp_path):
    package = tmp_path / "site-packages" / "device_conformance"
    suites = _suites(package / "suites")
    assert e2e.suites_dir(package) == suites


def test_an_editable_install_runs_the_checkouts_suites(tmp_path):
    package = tmp_path / "checkout" / "src" / "device_conformance"
    package.mkdir(parents=True)
    suites = _suites(tmp_path / "checkout" / "suites")
    assert e2e.suites_dir(package) == suites


def test_an_installation_without_suites_is_refused_with_the_fix(tmp_path):
    package = tmp_path / "a" / "b" / "device_conformance"
    package.mkdir(parents=True)
    with pytest.raises(BadInput) as refused:
        e2e.suites_dir(package)
    assert refused.value.problem == f"no conformance suites next to {package} (an installation without them)"


def test_the_setup_reads_the_options_pytest_shares_and_passes_them_on():
    args = ["-m", "smoke", "--provider", "kind", "--k8s-version=1.36.5", "-k", "restart", "--provider=local"]
    assert e2e.shared_options(args) == {"--provider": "local", "--k8s-version": "1.36.5"}


def test_an_installed_package_gets_the_checkouts_pytest_settings_and_no_cache(tmp_path):
    suites = _suites(tmp_path / "device_conformance" / "suites")
    assert e2e.pytest_argv(suites, ["-m", "smoke"]) == [
        sys.executable, "-m", "pytest", str(suites), f"--rootdir={suites.parent}",
        "-ra", "--strict-markers", "-o", "xfail_strict=true", "-p", "no:cacheprovider",
        "-n", "auto", "--dist", "loadgroup", "-m", "smoke",
    ]  # fmt: skip


def test_a_checkout_keeps_its_pytest_cache(tmp_path):
    suites = _suites(tmp_path / "checkout" / "suites")
    (tmp_path / "checkout" / "pyproject.toml").write_text("")
    assert "no:cacheprovider" not in e2e.pytest_argv(suites, [])


def test_pytest_arguments_reach_the_verb_in_order_and_other_verbs_refuse_them(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(e2e, "run", lambda args: seen.setdefault("args", args.pytest_args) and 0)
    parser = main.build_parser()
    monkeypatch.setattr(main, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["e2e"].set_defaults(func=e2e.run)
    assert main.main(["e2e", "-m", "smoke", "--no-setup", "-x", "--provider", "kind"]) == 0
    assert seen["args"] == ["-m", "smoke", "-x", "--provider", "kind"]
    with pytest.raises(SystemExit):
        main.main(["docs", "-m", "smoke"])
    assert "unrecognized arguments: -m smoke" in capsys.readouterr().err
