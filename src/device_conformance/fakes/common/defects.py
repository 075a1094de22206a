"""A fake's defects: the contract violations a "defective vendor" has, one registry per fake, one entry per defect.

A config's `defects` (DevicePluginConfig.defects, DriverConfig.defects) names entries of its fake's registry
(fakes/device_plugin/defect_registry.py, fakes/dra_driver/defect_registry.py); the suites, the certifier's tests
and `--defect` refer to them by those names. Each entry says what the defect breaks, the upstream rule it violates
and how it is applied, which is one of two ways:

- a fault from the start (`fault`): a call that always fails, crashes or panics the same way, whatever it asks
  (prestart-error: INTERNAL on every PreStartContainer). It is a Fault of the fault table (faults.py), preloaded
  when the fake starts (DefectRegistry.preload) and applied by Faults.admit exactly as the same fault a test adds at
  run time, so there is one mechanism for it; being the fake's nature, not a test's, it survives clear_faults.
- a standing change of the fake's answers (`bends`): what it answers depends on the request or on what it did
  before (renamed IDs, a list without the allocated devices, a claim's CDI edits made global), so no fault can
  say it. The code named in `bends` reads the name from the config (`"<name>" in config.defects`);
  tests/fakes/test_defect_registry.py checks that every such name is registered and every registered one is read.

Adding a misbehaviour: add its entry to the fake's registry; a fault-kind one needs nothing else, a bending one
also its `if "<name>" in config.defects` where the answer is made. Behaviours of real plugins and drivers that keep
the contract are the configs' `patterns`, not defects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from device_conformance.fakes.common.faults import Fault, Faults


class UnknownDefect(ValueError):
    """A config named a defect its fake's registry does not have."""


@dataclass(frozen=True)
class Defect:
    name: str
    breaks: str  # what a subject with this defect does wrong
    rule: str  # the upstream rule it violates: file (function), PR or issue
    fault: Fault | None = None  # a fault from the start: preloaded into the fault table
    # Otherwise: where the fake's code bends its answers, "module.function" or "module.Class.method" in its package.
    bends: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.fault is None) == (not self.bends):
            raise ValueError(f"defect {self.name!r}: give exactly one of fault (a fault from the start) and bends")


class DefectRegistry:
    """The defects of one fake, in the order its docs list them."""

    def __init__(self, fake: str, defects: Sequence[Defect]) -> None:
        self.fake = fake
        self._by_name = {d.name: d for d in defects}
        if len(self._by_name) != len(defects):
            raise ValueError(f"{fake}: a defect name is registered twice: {[d.name for d in defects]}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def __iter__(self) -> Iterator[Defect]:
        return iter(self._by_name.values())

    def __getitem__(self, name: str) -> Defect:
        self.check([name])
        return self._by_name[name]

    def unknown(self, names: Iterable[str]) -> list[str]:
        return sorted(set(names) - set(self._by_name))

    def check(self, names: Iterable[str]) -> None:
        """UnknownDefect naming the valid ones when a name is not registered."""
        unknown = self.unknown(names)
        if unknown:
            raise UnknownDefect(f"unknown defects {unknown}; the {self.fake}'s defects are {list(self.names)}")

    def preload(self, faults: Faults, names: Iterable[str]) -> None:
        """Put the faults of the named fault-kind defects into the fake's fault table, each a fresh copy."""
        names = list(names)
        self.check(names)
        for name in dict.fromkeys(names):
            fault = self._by_name[name].fault
            if fault is not None:
                faults.preload(name, dataclasses.replace(fault))
