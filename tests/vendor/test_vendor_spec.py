"""Vendor mode's inputs: option parsing, placeholder substitution, bad input with the fix,
the kubelet metrics the black-box tests count with, and the report of a vendor run (no cluster)."""

from __future__ import annotations

import json
import shlex

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.kube import kubelet_metrics, metrics
from device_conformance.settings import resolve
from device_conformance.vendor import spec as vendor_spec
from device_conformance.vendor.spec import DEVICE_PLUGIN, DRA_DRIVER, parse, placeholders_of, render

pytest_plugins = ["pytester"]


def test_no_vendor_option_means_our_fakes():
    assert parse(None, None, None) is None
    assert parse("", " ", "") is None
    assert resolve({}, {}).vendor.value is None


def test_device_plugin_and_dra_driver_specs():
    spec = parse("vendor.com/gpu", None, "my-plugin --dir {plugin_dir}")
    assert (spec.kind, spec.name, spec.upstream, spec.option) == (
        DEVICE_PLUGIN,
        "vendor.com/gpu",
        None,
        "--vendor-device-plugin",
    )
    spec = parse(None, "gpu.vendor.com", "x")
    assert (spec.kind, spec.name) == (DRA_DRIVER, "gpu.vendor.com")
    upstream = parse("example.com/resource", None, "upstream:sample-device-plugin")
    assert upstream.upstream == "sample-device-plugin"


def test_settings_take_options_and_variables_together():
    setting = resolve({"vendor_device_plugin": "vendor.com/gpu"}, {"VENDOR_COMMAND": "my-plugin"}).vendor
    assert setting.value.command == "my-plugin" and setting.source.name == "--vendor-device-plugin"
    setting = resolve({}, {"VENDOR_DRA_DRIVER": "gpu.vendor.com", "VENDOR_COMMAND": "d"}).vendor
    assert setting.value.kind == DRA_DRIVER and setting.source.kind == "environment"


def test_placeholders_are_filled_and_quoted_as_one_word():
    command = "{on_node} my-plugin --dir {plugin_dir} --cdi {cdi_dir} --node={node_name} --res {resource} {{x}}"
    values = {
        "on_node": "nsenter --target=42 --mount --",
        "plugin_dir": "/var/lib/runs/a b/device-plugins",
        "cdi_dir": "/run/cdi",
        "node_name": "n1",
        "resource": "vendor.com/gpu",
    }
    rendered = render(command, values)
    assert rendered == (
        "nsenter --target=42 --mount -- my-plugin --dir '/var/lib/runs/a b/device-plugins' --cdi /run/cdi "
        "--node=n1 --res vendor.com/gpu {x}"
    )
    assert shlex.split(rendered)[6] == "/var/lib/runs/a b/device-plugins"


def test_upstream_templates_use_only_known_placeholders_and_quote_the_binary():
    for name in vendor_spec.UPSTREAM_SUBJECTS:
        template = vendor_spec.upstream_template(name, "/cache/bin {odd}")
        assert set(placeholders_of(template)) <= set(vendor_spec.PLACEHOLDERS)
        values = {p: p.upper() for p in vendor_spec.PLACEHOLDERS}
        assert "'/cache/bin {odd}'" in render(template, values)
    sample = render(vendor_spec.upstream_template("sample-device-plugin", "/b/sample"), {"on_node": "nsenter --"})
    assert sample == "nsenter -- /b/sample"


@pytest.mark.parametrize(
    ("args", "problem", "fix"),
    [
        (("vendor.com/gpu", "gpu.vendor.com", "x"), "are both given", "give one of them"),
        ((None, None, "my-plugin"), "is given without a subject", "also pass --vendor-device-plugin RESOURCE"),
        (("vendor.com/gpu", None, None), "needs --vendor-command", "pass --vendor-command"),
        ((None, "gpu.vendor.com", ""), "needs --vendor-command", "upstream:dra-test-driver"),
        (("vendor.com/gpu", None, "p {socket}"), "unknown placeholder {socket}", "use only {on_node}"),
        (("vendor.com/gpu", None, "p {}"), "an empty placeholder {}", "a literal brace is written twice"),
        (("vendor.com/gpu", None, "p {plugin_dir"), "is not a valid template", "written twice"),
        (("gpu", None, "p"), "is not an extended resource name", "<domain>/<name>"),
        (("kubernetes.io/gpu", None, "p"), "is not an extended resource name", "outside kubernetes.io"),
        ((None, "GPU_Vendor", "p"), "is not a DRA driver name", "gpu.vendor.com"),
        (("vendor.com/gpu", None, "upstream:nvidia"), "names no upstream subject", "upstream:sample-device-plugin"),
        ((None, "gpu.vendor.com", "upstream:sample-device-plugin"), "is a device-plugin", "--vendor-device-plugin"),
        (("vendor.com/gpu", None, "upstream:sample-device-plugin"), "is not what", "example.com/resource"),
    ],
)
def test_bad_vendor_input_names_the_fix(args, problem, fix):
    with pytest.raises(BadInput) as raised:
        parse(*args)
    assert problem in raised.value.problem, raised.value.problem
    assert fix in raised.value.fix, raised.value.fix


def test_a_value_the_run_does_not_have_is_named():
    with pytest.raises(BadInput, match=r"uses \{driver\}"):
        render("d --name {driver}", {"resource": "vendor.com/gpu"})


def test_vendor_needs_the_local_provider():
    with pytest.raises(BadInput, match="only the local provider has"):
        resolve({"provider": "kind", "vendor_device_plugin": "vendor.com/gpu", "vendor_command": "p"}, {})


PREP, UNPREP = kubelet_metrics.DRA_PREPARE, kubelet_metrics.DRA_UNPREPARE
DRA = kubelet_metrics.DRA_GRPC


def _dra(driver: str, code: str, method: str, value: int) -> str:
    return f'{DRA}{{driver_name="{driver}",grpc_status_code="{code}",method_name="{method}"}} {value}'


METRICS = "\n".join(
    [
        "# HELP kubelet_device_plugin_registration_total [ALPHA] Cumulative number of device plugin registrations.",
        "# TYPE kubelet_device_plugin_registration_total counter",
        'kubelet_device_plugin_registration_total{resource_name="example.com/resource"} 2',
        'kubelet_device_plugin_registration_total{resource_name="other.com/x"} 5',
        'kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name="example.com/resource",le="0.005"} 1',
        'kubelet_device_plugin_alloc_duration_seconds_count{resource_name="example.com/resource"} 3',
        _dra("d.example.com", "OK", PREP, 4),
        _dra("d.example.com", "Unavailable", PREP, 1),
        _dra("d.example.com", "OK", UNPREP, 2),
        _dra("e.example.com", "OK", UNPREP, 7),
        # A 1.32-1.33 kubelet (or a v1beta1-only driver) calls the v1beta1 service: the same RPCs.
        _dra("d.example.com", "OK", PREP.replace(".v1.", ".v1beta1."), 10),
    ]
)


def test_kubelet_metrics_counts(monkeypatch):
    samples = metrics.parse(METRICS)
    assert kubelet_metrics.total(samples, kubelet_metrics.DP_REGISTRATIONS, resource_name="example.com/resource") == 2
    assert kubelet_metrics.total(samples, kubelet_metrics.DP_ALLOCATE, resource_name="example.com/resource") == 3
    assert kubelet_metrics.total(samples, kubelet_metrics.DP_ALLOCATE, resource_name="none.com/x") == 0
    monkeypatch.setattr(kubelet_metrics, "read", lambda kube, node: samples)
    counts = kubelet_metrics.KubeletCounts(None, "n")  # type: ignore[arg-type]
    assert counts.dra_counts("d.example.com") == (14, 2)
    assert counts.dra_counts("d.example.com", ok=None) == (15, 2)
    assert counts.dra_calls("d.example.com", kubelet_metrics.DRA_PREPARE, ok=True) == 14
    assert counts.dra_calls("d.example.com", kubelet_metrics.DRA_PREPARE, ok=False) == 1


def test_a_vendor_run_writes_the_certification_report(pytester):
    """A pytest run in vendor mode: marked tests run, the others are NOT APPLICABLE, and the report folder holds
    junit.xml, report.md, report.html and result.json with each test's verdict."""
    pytester.makepyfile(
        test_subject="""
        import pytest

        @pytest.mark.vendor_blackbox("device-plugin")
        def test_blackbox_ok():
            '''The node offers the devices.'''

        @pytest.mark.vendor_blackbox("device-plugin")
        def test_blackbox_broken():
            assert 1 == 2, "the subject broke it"

        @pytest.mark.vendor_blackbox("dra-driver")
        def test_dra_only():
            pass

        def test_needs_the_fake():
            raise AssertionError("must not run in vendor mode")
        """
    )
    out = pytester.path / "report"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--vendor-device-plugin",
        "vendor.com/gpu",
        "--vendor-command",
        "my-plugin {plugin_dir}",
        "--vendor-report",
        str(out),
        "--vendor-version",
        "1.2.3",
    )
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    data = json.loads((out / "result.json").read_text())
    verdicts = {c["title"]: (c["verdict"], c["message"]) for c in data["clauses"]}
    assert verdicts["test_blackbox_ok"] == ("PASS", "as required")
    assert (
        verdicts["test_blackbox_broken"][0] == "FAIL" and "the subject broke it" in verdicts["test_blackbox_broken"][1]
    )
    assert (
        verdicts["test_dra_only"][0] == "NOT APPLICABLE"
        and "the subject is a device plugin" in verdicts["test_dra_only"][1]
    )
    assert (
        verdicts["test_needs_the_fake"][0] == "NOT APPLICABLE"
        and "drives or reads our fake" in verdicts["test_needs_the_fake"][1]
    )
    assert data["subject"] == {
        "kind": "device-plugin",
        "name": "vendor.com/gpu",
        "version": "1.2.3",
        "command": "my-plugin {plugin_dir}",
    }
    assert data["counts"] == {"PASS": 1, "FAIL": 1, "NOT APPLICABLE": 2} and data["passed"] is False
    assert data["mode"].startswith("e2e:")
    assert {p.name for p in out.iterdir()} == {"junit.xml", "report.md", "report.html", "result.json"}
    assert "| test_subject.py::test_blackbox_broken | **FAIL** |" in (out / "report.md").read_text()
    assert "The node offers the devices." in (out / "report.md").read_text()
