"""`device-conformance e2e [PYTEST ARGS...]`: what `make e2e` does, for an installed package.

The conformance suites ship in the wheel as `device_conformance/suites` (setup.py), so a vendor who ran `pipx
install device-conformance` runs them without a checkout: this sets up what the provider needs (as
`device-conformance setup`), then becomes `pytest SUITES -n auto --dist loadgroup` with every other argument passed
on (`-m smoke`, `--provider kind`, `--kubeconfig FILE`, `--vendor-device-plugin ...`). pytest replaces this
process (exec), so Ctrl-C reaches it as it would from `make e2e` and its teardown runs.

In a checkout (an editable install) the suites are the checkout's own `suites/`. An installed package has no
pyproject.toml beside its suites, so the pytest settings the checkout's file gives (strict markers, strict xfails)
are passed on the command line, and pytest's cache is not written into the installation.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import device_conformance
from device_conformance.core.errors import BadInput

# The checkout's [tool.pytest.ini_options], which an installed package does not carry: known bugs are strict
# xfails (an XPASS fails the run) and a misspelled marker is an error.
PYTEST_SETTINGS = ("-ra", "--strict-markers", "-o", "xfail_strict=true")
# Options of `setup` that pytest takes too (pytest_plugin/options.py): read for the set-up, and passed on.
SHARED_OPTIONS = ("--provider", "--k8s-version", "--k8s-source", "--kubelet-version")


def register(subparsers: argparse._SubParsersAction) -> None:
    e2e = subparsers.add_parser(
        "e2e",
        help="set up what is missing and run the conformance suites installed with this package (as make e2e); "
        "other arguments go to pytest",
        description=__doc__.split("\n\n")[0],
    )
    e2e.add_argument("--no-setup", action="store_true", help="skip the set-up (packages, binaries, images)")
    e2e.add_argument(
        "--workers",
        help="pytest-xdist workers, one cluster each (E2E_WORKERS: a number, 0 for none; default auto, the rule "
        "pytest_plugin/workers.py applies to the machine as it is)",
    )
    e2e.set_defaults(func=run, passes_unknown_arguments=True, pytest_args=[])


def suites_dir(package_dir: Path | None = None) -> Path:
    """The suites: beside the installed package, else in the checkout an editable install points at."""
    package_dir = package_dir or Path(device_conformance.__file__).resolve().parent
    for candidate in (package_dir / "suites", package_dir.parents[1] / "suites"):
        if (candidate / "durations.json").is_file():
            return candidate
    raise BadInput(
        f"no conformance suites next to {package_dir} (an installation without them)",
        "reinstall the package (pip install device-conformance) or run `make e2e` in a checkout",
    )


def shared_options(pytest_args: list[str]) -> dict[str, str]:
    """The SHARED_OPTIONS given among pytest's arguments (`--opt VALUE` or `--opt=VALUE`), the last one winning."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for option in SHARED_OPTIONS:
        parser.add_argument(option)
    given, _ = parser.parse_known_args(pytest_args)
    return {option: value for option in SHARED_OPTIONS if (value := getattr(given, option[2:].replace("-", "_")))}


def pytest_argv(suites: Path, pytest_args: list[str]) -> list[str]:
    """The pytest command line, as the Makefile's e2e target: the suites, one cluster per xdist worker (`-n auto`:
    the worker rule reads E2E_WORKERS), each module on one worker, longest first."""
    argv = [sys.executable, "-m", "pytest", str(suites), f"--rootdir={suites.parent}", *PYTEST_SETTINGS]
    if not (suites.parent / "pyproject.toml").is_file():
        argv += ["-p", "no:cacheprovider"]  # never write .pytest_cache into an installation
    return [*argv, "-n", "auto", "--dist", "loadgroup", *pytest_args]


def run(args: argparse.Namespace) -> int:
    suites = suites_dir()
    if not args.no_setup:
        from device_conformance.cli.setup import setup_for

        given = shared_options(args.pytest_args)
        code = setup_for(
            provider=given.get("--provider"),
            k8s_version=given.get("--k8s-version"),
            k8s_source=given.get("--k8s-source"),
            kubelet_version=given.get("--kubelet-version"),
        )
        if code:
            return code
    argv = pytest_argv(suites, args.pytest_args)
    if args.workers is not None:
        os.environ["E2E_WORKERS"] = args.workers
    print("+ " + " ".join(argv[1:]), flush=True)
    sys.stderr.flush()
    os.execv(argv[0], argv)
    return 0  # not reached
