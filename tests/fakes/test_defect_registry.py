"""The fakes' defects as one registry per fake (fakes/common/defects.py): every defect registered under the name the
suites and the certifier use, each applied one way (a fault from the start, or where the code bends its answers),
an unknown name refused naming the valid ones."""

import ast
import dataclasses
import importlib
import inspect
import pkgutil

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common import faults as faults_module
from device_conformance.fakes.common.defects import Defect, DefectRegistry, UnknownDefect
from device_conformance.fakes.common.faults import BLOCK, CRASH, ERROR, PANIC, Fault, Faults, Status
from device_conformance.fakes.device_plugin import DevicePluginConfig
from device_conformance.fakes.device_plugin import config as device_plugin_config
from device_conformance.fakes.device_plugin.defect_registry import DEVICE_PLUGIN_DEFECTS
from device_conformance.fakes.device_plugin.service import METHODS, REGISTER_METHOD
from device_conformance.fakes.dra_driver import config as dra_driver_config
from device_conformance.fakes.dra_driver.config import DriverConfig
from device_conformance.fakes.dra_driver.defect_registry import DRA_DRIVER_DEFECTS

# The names as the suites, fixtures/dra_drivers.py, tests/certify and the certify catalogue spell them.
DEVICE_PLUGIN_NAMES = (
    "duplicate-device-ids",
    "unstable-device-ids",
    "allocate-crash-on-unknown-id",
    "preferred-ignores-must-include",
    "allocate-first-container-only",
    "prestart-error",
    "options-crash",
    "register-crash",
    "allocate-refuses-handed-out-id",
    "ids-change-per-start",
    "list-omits-allocated",
    "allocate-mounts-host-dev",
)
DRA_DRIVER_NAMES = (
    "prepare-without-cdi",
    "prepare-first-device-only",
    "prepare-keeps-lost-cdi-spec",
    "prepare-rejects-repeat",
    "prepare-unknown-claim-succeeds",
    "prepare-one-claim-per-call",
    "prepare-crash-on-unknown-claim",
    "unprepare-keeps-cdi",
    "unprepare-unknown-claim-error",
    "unprepare-rejects-repeat",
    "cdi-invalid-version",
    "restart-renames-cdi-devices",
    "cdi-claim-edits-global",
    "health-stream-error",
    "health-report-unnamed-devices",
)
REGISTRIES = {
    "device_conformance.fakes.device_plugin": DEVICE_PLUGIN_DEFECTS,
    "device_conformance.fakes.dra_driver": DRA_DRIVER_DEFECTS,
}


def always():
    return True


def test_the_registries_list_every_defect_of_both_fakes_under_its_name():
    assert DEVICE_PLUGIN_DEFECTS.names == DEVICE_PLUGIN_NAMES == device_plugin_config.DEFECTS
    assert DRA_DRIVER_DEFECTS.names == DRA_DRIVER_NAMES == dra_driver_config.DEFECTS
    for defect in (*DEVICE_PLUGIN_DEFECTS, *DRA_DRIVER_DEFECTS):
        assert defect.breaks and defect.rule, defect.name


def test_the_defects_that_are_faults_from_the_start():
    faults = {d.name: d.fault for d in DEVICE_PLUGIN_DEFECTS if d.fault is not None}
    assert {name: (f.method, f.action) for name, f in faults.items()} == {
        "prestart-error": ("PreStartContainer", ERROR),
        "options-crash": ("GetDevicePluginOptions", PANIC),
        "register-crash": ("Register", PANIC),
    }
    assert {d.name: (d.fault.method, d.fault.action) for d in DRA_DRIVER_DEFECTS if d.fault is not None} == {
        "health-stream-error": ("NodeWatchResources", ERROR),
    }


def _reads(package: str) -> dict[str, set[str]]:
    """defect name -> the functions ("module.Class.method") of the package whose code tests `"<name>" in ...defects`."""
    found: dict[str, set[str]] = {}
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        tree = ast.parse(inspect.getsource(importlib.import_module(f"{package}.{info.name}")))
        for place, node in _functions(tree, info.name):
            for compare in ast.walk(node):
                if not isinstance(compare, ast.Compare) or not isinstance(compare.ops[0], ast.In | ast.NotIn):
                    continue
                container = compare.comparators[0]
                name = container.attr if isinstance(container, ast.Attribute) else getattr(container, "id", "")
                if name == "defects" and isinstance(compare.left, ast.Constant):
                    found.setdefault(compare.left.value, set()).add(place)
    return found


def _functions(tree: ast.Module, module: str):
    """(qualified name, node) of the module's functions and methods, nested functions included in theirs."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield f"{module}.{node.name}", node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{module}.{node.name}.{item.name}", item


@pytest.mark.parametrize("package", REGISTRIES)
def test_bends_names_exactly_the_code_that_reads_each_defect_and_the_code_reads_only_registered_ones(package):
    registry = REGISTRIES[package]
    reads = _reads(package)
    assert registry.unknown(reads) == [], "the code tests a defect name the registry does not have"
    assert {d.name: set(d.bends) for d in registry if d.bends} == reads
    assert not [d.name for d in registry if d.fault is not None and d.name in reads], "a fault is applied by admit()"


def test_an_unknown_defect_is_refused_naming_the_valid_ones():
    with pytest.raises(UnknownDefect) as raised:
        DEVICE_PLUGIN_DEFECTS.check(["prestart-error", "prestart-eror"])
    assert str(raised.value) == (
        f"unknown defects ['prestart-eror']; the fake device plugin's defects are {list(DEVICE_PLUGIN_NAMES)}"
    )
    with pytest.raises(ValueError, match=r"unknown defects \['typo'\]; the fake device plugin's defects are \["):
        DevicePluginConfig("example.com/dev", "/tmp/dp", defects=["typo"])
    config = DriverConfig(driver_name="d", node_name="n", registry_dir="/r", plugin_dir="/p", defects=["typo"])
    config.control_socket, config.call_log = "/c", "/l"
    with pytest.raises(BadInput, match=r"unknown defects \['typo'\]; the fake DRA driver's defects are \["):
        config.validate()
    with pytest.raises(UnknownDefect, match="prepare-without-cdi"):
        DRA_DRIVER_DEFECTS.preload(Faults(["NodePrepareResources"], api="DRA driver"), ["typo"])


def test_an_entry_is_applied_exactly_one_way_and_registered_once():
    with pytest.raises(ValueError, match="exactly one of fault"):
        Defect("both", "b", "r", fault=Fault("Allocate"), bends=("defects.listed",))
    with pytest.raises(ValueError, match="exactly one of fault"):
        Defect("neither", "b", "r")
    with pytest.raises(ValueError, match="registered twice"):
        DefectRegistry("fake", [Defect("x", "b", "r", bends=("m.f",))] * 2)


def _device_plugin_faults():
    return Faults([*METHODS, REGISTER_METHOD], api="DevicePlugin", outgoing_methods=[REGISTER_METHOD])


class Panicked(Exception):
    pass


def _verdict_or_panic(faults, method):
    try:
        return faults.admit(method, is_active=always)
    except Panicked as panic:
        return ("panic", str(panic))


@pytest.mark.parametrize("name", [d.name for d in DEVICE_PLUGIN_DEFECTS if d.fault is not None])
def test_a_preloaded_defect_does_what_the_same_fault_added_at_run_time_does(name, monkeypatch):
    def panic(message):
        raise Panicked(message)

    monkeypatch.setattr(faults_module, "go_panic", panic)
    fault = DEVICE_PLUGIN_DEFECTS[name].fault
    preloaded, at_run_time = _device_plugin_faults(), _device_plugin_faults()
    DEVICE_PLUGIN_DEFECTS.preload(preloaded, [name])
    at_run_time.add(dataclasses.replace(fault))

    for method in (*METHODS, REGISTER_METHOD):
        assert _verdict_or_panic(preloaded, method) == _verdict_or_panic(at_run_time, method), method
    assert _verdict_or_panic(preloaded, fault.method) != _verdict_or_panic(_device_plugin_faults(), fault.method)


def test_prestart_error_fails_every_prestart_with_internal():
    faults = _device_plugin_faults()
    DEVICE_PLUGIN_DEFECTS.preload(faults, ["prestart-error"])

    verdicts = [faults.admit("PreStartContainer", is_active=always).error for _ in range(3)]

    assert verdicts == [Status("INTERNAL", "PreStartContainer failed (defect prestart-error)")] * 3


def test_a_standing_fault_outlives_clear_and_unblock_and_ranks_below_a_tests_faults():
    faults = _device_plugin_faults()
    DEVICE_PLUGIN_DEFECTS.preload(faults, ["prestart-error"])
    faults.add(Fault("PreStartContainer", ERROR, "UNAVAILABLE", "test's", times=1))

    first, second = (faults.admit("PreStartContainer", is_active=always).error for _ in range(2))
    faults.clear()
    faults.unblock()
    faults.clear("PreStartContainer")

    assert (first.code, second.code) == ("UNAVAILABLE", "INTERNAL")
    assert faults.admit("PreStartContainer", is_active=always).error.code == "INTERNAL"
    described = faults.describe()
    assert described["faults"] == [] and described["blocked_calls"] == []
    assert [(s["defect"], s["method"], s["code"]) for s in described["standing"]] == [
        ("prestart-error", "PreStartContainer", "INTERNAL")
    ]
    assert "standing" not in _device_plugin_faults().describe()


def test_preloading_puts_one_copy_of_each_named_fault_in_the_table_and_leaves_the_entry_as_it_was():
    registry = DefectRegistry("fake", [Defect("lower", "b", "r", fault=Fault("Allocate", ERROR, "internal"))])
    faults = _device_plugin_faults()

    registry.preload(faults, ["lower", "lower"])

    assert [s["code"] for s in faults.describe()["standing"]] == ["INTERNAL"]  # the table's copy, checked
    assert registry["lower"].fault.code == "internal"


def test_a_standing_fault_neither_holds_nor_counts():
    faults = _device_plugin_faults()
    with pytest.raises(ValueError, match="cannot hold or count"):
        faults.preload("held", Fault("Allocate", BLOCK))
    with pytest.raises(ValueError, match="cannot hold or count"):
        faults.preload("counted", Fault("Allocate", ERROR, times=1))


def test_a_call_the_fake_makes_takes_only_a_crash_or_a_panic():
    faults = _device_plugin_faults()
    with pytest.raises(ValueError, match=r"Register is a call the fake makes: only \['crash', 'panic'\] apply"):
        faults.add(Fault(REGISTER_METHOD, ERROR, "INTERNAL"))
    faults.add(Fault(REGISTER_METHOD, CRASH))
    faults.add(Fault(REGISTER_METHOD, PANIC, message="boom"))


def test_the_dra_driver_preloads_its_fault_defects_as_the_device_plugin_does(monkeypatch, tmp_path):
    """A DRA defect added to its registry as a fault from the start is preloaded without more code."""
    from device_conformance.fakes.dra_driver import driver as driver_module

    unavailable = Defect("info-unavailable", "b", "r", fault=Fault("GetInfo", ERROR, "UNAVAILABLE"))
    registry = DefectRegistry("fake DRA driver", [*DRA_DRIVER_DEFECTS, unavailable])
    monkeypatch.setattr(driver_module, "DRA_DRIVER_DEFECTS", registry)
    monkeypatch.setattr(dra_driver_config, "DRA_DRIVER_DEFECTS", registry)
    config = DriverConfig(
        driver_name="d",
        node_name="n",
        registry_dir=str(tmp_path),
        plugin_dir=str(tmp_path),
        control_socket=str(tmp_path / "c"),
        call_log=str(tmp_path / "calls"),
        defects=["info-unavailable", "prepare-without-cdi"],
    )

    driver = driver_module.Driver(config)

    assert [s["defect"] for s in driver.faults.describe()["standing"]] == ["info-unavailable"]
    assert driver.faults.admit("GetInfo", is_active=always).error == Status("UNAVAILABLE", "")
