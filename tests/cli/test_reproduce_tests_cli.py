"""`device-conformance reproduce --test NODEID --affected ... --fixed ...`: a bug that is not in the catalogue.

The arguments, the sides each run puts under test, the verdict of each side (from JUnit XML), the refusal of a
release that cannot be had (the proxy is a stand-in: no network), and a whole command with setup and pytest
replaced by stand-ins that write JUnit, so the table and the exit status are seen as the user sees them.
"""

from pathlib import Path

import pytest

from device_conformance.cli import release_run, reproduce
from device_conformance.cli.main import build_parser, main
from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain.module_proxy import REFUSED, SERVED, UNKNOWN, ReleaseAnswer

V = KubeVersion.parse
TEST = "suites/device_plugin/test_plugin_restart.py"  # exists in the repository


def parse(*argv):
    return build_parser().parse_args(["reproduce", *argv])


def junit(path: Path, *cases: str) -> Path:
    """JUnit XML with one test case per entry: "pass", "fail", "error", "skip" or "xfail"."""
    body = {
        "pass": "",
        "fail": '<failure message="assert 2 == 1">boom</failure>',
        "error": '<error message="failed on setup with &quot;BadInput&quot;">setup</error>',
        "skip": '<skipped type="pytest.skip" message="needs 1.38">skip</skipped>',
        "xfail": '<skipped type="pytest.xfail" message="its own xfail"/>',
    }
    cases_xml = "".join(
        f'<testcase classname="suites.x" name="test_{i}">{body[c]}</testcase>' for i, c in enumerate(cases)
    )
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases_xml}</testsuite></testsuites>')
    return path


def source_tree(root: Path, version_defs: str | None = None) -> Path:
    """The least a Kubernetes source tree is (go.mod of k8s.io/kubernetes, no staging modules to replace)."""
    root.mkdir(parents=True)
    (root / "go.mod").write_text("module k8s.io/kubernetes\n\ngo 1.22\n")
    if version_defs is not None:
        (root / ".kube-version-defs").write_text(f"KUBE_GIT_VERSION='{version_defs}'\n")
    return root


# -- arguments ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "problem", "fix"),
    [
        ((), "no bug and no test given", "--test NODEID"),
        (("kubernetes#134434", "--test", TEST), "both a catalogued bug", "--test alone"),
        (("--test", TEST, "--fixed", "1.37.2"), "--test needs the affected side", "--affected-source DIR"),
        (("--test", TEST, "--affected", "1.37.1"), "--test needs the fixed side", "--fixed X.Y.Z"),
        (
            ("--test", TEST, "--affected", "1.37.1", "--affected-source", "/x", "--fixed", "1.37.2"),
            "--affected 1.37.1 and --affected-source /x both name the affected side",
            "give one of them",
        ),
        (
            ("kubernetes#134434", "--fixed-source", "/x"),
            "--fixed-source goes with --test, not with the catalogued bug",
            "--test NODEID --fixed-source /x",
        ),
        (
            ("--test", "suites/nope/test_nothing.py::test_x", "--affected", "1.37.1", "--fixed", "1.37.2"),
            "suites/nope/test_nothing.py does not exist",
            "pytest node ID under suites/",
        ),
    ],
)
def test_arguments_name_no_test_or_not_one_of_each_side_are_refused(argv, problem, fix):
    with pytest.raises(BadInput) as excinfo:
        reproduce.check_arguments(parse(*argv))
    assert problem in excinfo.value.problem and fix in excinfo.value.fix


def test_the_same_release_on_both_sides_is_refused():
    with pytest.raises(BadInput, match=r"both 1\.37\.1"):
        reproduce.given_sides(parse("--test", TEST, "--affected", "1.37.1", "--fixed", "1.37.1"))


def test_a_bad_knob_is_refused_before_anything_runs():
    with pytest.raises(BadInput, match="is not a log verbosity"):
        reproduce.knob_args(parse("--test", TEST, "--kubelet-verbosity", "loud"))
    args = parse("--test", TEST, "--kubelet-verbosity", "6", "--feature-gates", "kubelet:Foo=true")
    args.kubelet_args = ["--node-status-max-images=3"]
    assert reproduce.knob_args(args) == [
        "--kubelet-verbosity=6",
        "--feature-gates=kubelet:Foo=true",
        "--kubelet-arg=--node-status-max-images=3",
    ]


# -- the sides ------------------------------------------------------------------------------------------------


def test_two_releases_compare_only_the_kubelet_by_default():
    sides, how = reproduce.given_sides(parse("--test", TEST, "--affected", "1.37.1", "--fixed", "1.37.2"))
    assert [(s.role, s.control_plane, s.kubelet) for s in sides] == [
        ("affected", V("1.37.2"), V("1.37.1")),
        ("fixed", V("1.37.2"), None),
    ]
    assert how.startswith("kubelet-only comparison: the 1.37.1 kubelet under the 1.37.2 control plane")


def test_a_regression_runs_the_older_fixed_kubelet_under_the_affected_control_plane():
    sides, _ = reproduce.given_sides(parse("--test", TEST, "--affected", "1.37.2", "--fixed", "1.36.5"))
    assert [(s.control_plane, s.kubelet) for s in sides] == [(V("1.37.2"), None), (V("1.37.2"), V("1.36.5"))]


@pytest.mark.parametrize(
    ("extra", "affected", "fixed", "said"),
    [
        (("--whole-cluster",), "1.37.1", "1.37.2", "whole clusters (--whole-cluster): each side runs its own"),
        ((), "1.33.13", "1.37.2", "more than the version-skew policy allows"),
    ],
)
def test_whole_clusters_when_asked_or_outside_the_skew(extra, affected, fixed, said):
    sides, how = reproduce.given_sides(parse("--test", TEST, "--affected", affected, "--fixed", fixed, *extra))
    assert [(s.control_plane, s.kubelet) for s in sides] == [(V(affected), None), (V(fixed), None)]
    assert said in how


def test_a_source_tree_side_is_its_release_plus_patch_and_runs_whole(tmp_path):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    sides, how = reproduce.given_sides(parse("--test", TEST, "--affected", "1.37.1", "--fixed-source", str(tree)))
    affected, fixed = sides
    assert (affected.control_plane, affected.kubelet, affected.source) == (V("1.37.1"), None, None)
    assert (fixed.control_plane, fixed.kubelet, fixed.source) == (V("1.37.1"), None, tree)
    assert fixed.label == f"1.37.1 + patch (source {tree})"
    assert how == "whole clusters (a source tree is built as all four binaries): each side runs its own four binaries"
    assert release_run.versions(fixed.control_plane, None, fixed.source) == [
        "--k8s-version",
        "1.37.1",
        "--k8s-source",
        str(tree),
    ]


def test_a_source_tree_that_is_none_or_names_no_release_is_refused(tmp_path):
    with pytest.raises(BadInput, match="not a Kubernetes source tree"):
        reproduce.given_sides(parse("--test", TEST, "--affected-source", str(tmp_path), "--fixed", "1.37.2"))
    tree = source_tree(tmp_path / "k8s")
    with pytest.raises(BadInput, match="does not say which Kubernetes release"):
        reproduce.given_sides(parse("--test", TEST, "--affected-source", str(tree), "--fixed", "1.37.2"))


# -- the verdicts ---------------------------------------------------------------------------------------------


def test_affected_fails_and_fixed_passes_is_a_reproduction(tmp_path):
    failed = reproduce.read_side_run(junit(tmp_path / "a.xml", "fail", "fail"))
    passed = reproduce.read_side_run(junit(tmp_path / "f.xml", "pass", "pass"))
    assert failed == reproduce.SideRun(failed=2)
    assert reproduce.side_verdict(failed, affected=True) == "reproduced"
    assert reproduce.side_verdict(passed, affected=False) == "fixed as expected"


@pytest.mark.parametrize(
    ("cases", "affected", "expected"),
    [
        (("pass",), True, "not reproduced: the test passed"),
        (("fail", "pass"), True, "not reproduced: 1 of 2 failed"),
        (("fail",), False, "still fails on the fixed side: 1 of 1 failed"),
        # an error at setup (the cluster, a fixture) is no reproduction, and no fix either
        (("error",), True, "errored: 1 of 1 errored in setup, teardown or collection"),
        (("error",), False, "errored: 1 of 1 errored"),
        (("fail", "error"), True, "errored: 1 of 2 errored"),
        (("skip",), True, "not run: 1 of 1 skipped or xfailed"),
        (("xfail",), False, "not run: 1 of 1 skipped or xfailed"),
        ((), True, "errored: no test ran"),
    ],
)
def test_anything_else_is_said_plainly(tmp_path, cases, affected, expected):
    run = reproduce.read_side_run(junit(tmp_path / "j.xml", *cases))
    assert reproduce.side_verdict(run, affected=affected).startswith(expected)


def test_no_junit_is_an_error():
    assert reproduce.side_verdict(None, affected=True).startswith("errored: pytest wrote no result")


# -- the whole command, with stand-ins for setup and pytest ---------------------------------------------------


@pytest.fixture
def stand_ins(monkeypatch, tmp_path):
    """setup and pytest of release_run replaced: `outcomes` maps a (control plane, kubelet) to the JUnit cases
    its pytest run writes; `setup_fails` the runs whose setup fails. The proxy check sees everything cached."""
    calls = {"setup": [], "pytest": []}
    outcomes: dict = {}
    setup_fails: set = set()

    def setup(version, folder, kubelet=None, *, source=None):
        calls["setup"].append((str(version), kubelet and str(kubelet), source))
        return 1 if (str(version), kubelet and str(kubelet)) in setup_fails else 0

    def pytest_run(version, folder, *args, kubelet=None, source=None):
        calls["pytest"].append((str(version), kubelet and str(kubelet), source, args))
        key = (str(version), kubelet and str(kubelet))
        return 0, junit(folder / "junit.xml", *outcomes.get((*key, source), outcomes.get(key, ())))

    monkeypatch.setattr(release_run, "setup", setup)
    monkeypatch.setattr(release_run, "pytest", pytest_run)
    monkeypatch.setattr(release_run, "cached", lambda version, components: True)
    return calls, outcomes, setup_fails


def run_main(tmp_path, *argv):
    return main(["reproduce", "--test", TEST, *argv, "--out", str(tmp_path / "out")])


def test_reproduced_and_fixed_exits_0_and_prints_the_table(stand_ins, tmp_path, capsys):
    calls, outcomes, _ = stand_ins
    outcomes[("1.37.2", "1.37.1")] = ("fail",)
    outcomes[("1.37.2", None)] = ("pass",)
    assert run_main(tmp_path, "--affected", "1.37.1", "--fixed", "1.37.2", "--kubelet-verbosity", "5") == 0
    out = capsys.readouterr().out
    folder = tmp_path / "out" / "test_plugin_restart"
    assert f"| 1.37.1 | reproduced | {folder / 'affected-1.37.1'} |" in out
    assert f"| 1.37.2 | fixed as expected | {folder / 'fixed-1.37.2'} |" in out
    assert "kubelet-only comparison: the 1.37.1 kubelet under the 1.37.2 control plane" in out
    assert "known-bug expectations ignored (--ignore-known-bugs)" in out
    args = calls["pytest"][0][3]
    assert args[0] == TEST and "--ignore-known-bugs" in args and "--kubelet-verbosity=5" in args


def test_a_setup_error_on_the_affected_side_is_no_reproduction(stand_ins, tmp_path, capsys):
    calls, outcomes, setup_fails = stand_ins
    setup_fails.add(("1.37.2", "1.37.1"))
    outcomes[("1.37.2", None)] = ("pass",)
    assert run_main(tmp_path, "--affected", "1.37.1", "--fixed", "1.37.2") == 1
    out = capsys.readouterr().out
    assert "| 1.37.1 | errored: setup failed, see " in out and "(an error at setup is not a reproduction)" in out
    assert len(calls["pytest"]) == 1  # the affected side's pytest never ran


def test_a_test_that_errors_at_setup_is_no_reproduction(stand_ins, tmp_path, capsys):
    _, outcomes, _ = stand_ins
    outcomes[("1.37.2", "1.37.1")] = ("error",)
    outcomes[("1.37.2", None)] = ("pass",)
    assert run_main(tmp_path, "--affected", "1.37.1", "--fixed", "1.37.2") == 1
    assert "| 1.37.1 | errored: 1 of 1 errored in setup" in capsys.readouterr().out


def test_still_failing_on_the_fixed_side_exits_1(stand_ins, tmp_path, capsys):
    _, outcomes, _ = stand_ins
    outcomes[("1.37.2", "1.37.1")] = ("fail",)
    outcomes[("1.37.2", None)] = ("fail",)
    assert run_main(tmp_path, "--affected", "1.37.1", "--fixed", "1.37.2") == 1
    assert "| 1.37.2 | still fails on the fixed side: 1 of 1 failed |" in capsys.readouterr().out


def test_a_source_side_runs_setup_and_pytest_on_the_tree(stand_ins, tmp_path, capsys):
    calls, outcomes, _ = stand_ins
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    outcomes[("1.37.1", None)] = ("fail",)
    outcomes[("1.37.1", None, tree)] = ("pass",)
    assert run_main(tmp_path, "--affected", "1.37.1", "--fixed-source", str(tree)) == 0
    assert calls["setup"] == [("1.37.1", None, None), ("1.37.1", None, tree)]
    out = capsys.readouterr().out
    assert f"| 1.37.1 + patch (source {tree}) | fixed as expected | " in out
    assert "whole clusters (a source tree is built as all four binaries)" in out


# -- releases that cannot be had ------------------------------------------------------------------------------


def answers(**states):
    def check(version, proxies):
        state, detail = states.get(str(version), (SERVED, "served"))
        return ReleaseAnswer(version, state, detail)

    return check


def test_a_release_the_proxy_does_not_serve_is_refused_with_the_fixes(monkeypatch):
    monkeypatch.delenv("K8S_BIN_DIR", raising=False)
    said = []
    with pytest.raises(BadInput) as excinfo:
        release_run.refuse_unavailable(
            [(V("1.37.99"), ("kubelet",)), (V("1.37.2"), release_run.COMPONENTS)],
            said.append,
            check=answers(**{"1.37.99": (REFUSED, "k8s.io/kubernetes@v1.37.99: proxy answers 403")}),
            is_cached=lambda version, components: False,
            goproxy=lambda: "https://proxy.example",
        )
    assert excinfo.value.problem == (
        "cannot be had here, so nothing was built or started: Kubernetes 1.37.99: k8s.io/kubernetes@v1.37.99: "
        "proxy answers 403"
    )
    fix = excinfo.value.fix
    assert fix.startswith("use a patch the proxy serves instead of 1.37.99, e.g. 1.37's matrix release 1.37.2")
    assert "K8S_BIN_DIR" in fix and "K8S_SOURCE" in fix and "--affected-source" in fix
    assert said == [
        "1.37.99 is not cached: asking the Go module proxy (GOPROXY=https://proxy.example) whether it can be built",
        "1.37.2 is not cached: asking the Go module proxy (GOPROXY=https://proxy.example) whether it can be built",
    ]


def test_an_unreachable_proxy_is_said_and_the_run_goes_on(monkeypatch):
    monkeypatch.delenv("K8S_BIN_DIR", raising=False)
    said = []
    release_run.refuse_unavailable(
        [(V("1.37.2"), release_run.COMPONENTS)],
        said.append,
        check=answers(**{"1.37.2": (UNKNOWN, "https://proxy.example: [Errno -3] no such host")}),
        is_cached=lambda version, components: False,
        goproxy=lambda: "https://proxy.example",
    )
    assert said[-1] == (
        "could not ask the Go module proxy about 1.37.2 (https://proxy.example: [Errno -3] no such host): going on, "
        "the build will name what fails"
    )


def test_cached_releases_and_k8s_bin_dir_ask_no_proxy(monkeypatch):
    def never(*_):
        raise AssertionError("the proxy must not be asked")

    monkeypatch.delenv("K8S_BIN_DIR", raising=False)
    release_run.refuse_unavailable([(V("1.37.1"), ("kubelet",))], never, check=never, is_cached=lambda v, c: True)
    monkeypatch.setenv("K8S_BIN_DIR", "/opt/k8s")
    release_run.refuse_unavailable([(V("1.37.99"), ("kubelet",))], never, check=never, is_cached=lambda v, c: False)


def test_the_command_refuses_before_any_setup(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("K8S_BIN_DIR", raising=False)
    started = []
    monkeypatch.setattr(release_run, "setup", lambda *a, **k: started.append(a) or 0)
    monkeypatch.setattr(release_run, "cached", lambda version, components: version != V("1.37.99"))
    monkeypatch.setattr(release_run, "goproxy_setting", lambda: "https://proxy.example")
    monkeypatch.setattr(
        release_run, "check_release", answers(**{"1.37.99": (REFUSED, "k8s.io/kubernetes@v1.37.99: 403")})
    )
    assert run_main(tmp_path, "--affected", "1.37.99", "--fixed", "1.37.2") == 2
    assert "Kubernetes 1.37.99: k8s.io/kubernetes@v1.37.99: 403" in capsys.readouterr().err
    assert not started and not (tmp_path / "out").exists()
    # the catalogued path and bisect check alike
    # kubernetes#141426: no fix on 1.37, fixed in 1.38.0-alpha.1
    assert main(["reproduce", "kubernetes#141426", "--affected", "1.37.99", "--fixed", "1.38.0-alpha.1"]) == 2
    assert "Kubernetes 1.37.99: k8s.io/kubernetes@v1.37.99: 403" in capsys.readouterr().err
    assert main(["bisect", TEST, "--good", "1.37.2", "--bad", "1.37.99", "--out", str(tmp_path / "b")]) == 2
    assert "Kubernetes 1.37.99: k8s.io/kubernetes@v1.37.99: 403" in capsys.readouterr().err
    assert not started and not (tmp_path / "b").exists()
