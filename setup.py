# The top-level fixtures/ folder ships as the subpackage device_conformance.fixtures, so it never
# shadows (or is shadowed by) the unrelated PyPI package named "fixtures". The conformance suites ship as
# device_conformance/suites (files only: pytest collects them by path, `device-conformance e2e`), so an installed
# package runs them without a checkout.
from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages("src"),
        "device_conformance.fixtures",
        "device_conformance.kind_configs",
        "device_conformance.suites",
    ],
    package_dir={
        "": "src",
        "device_conformance.fixtures": "fixtures",
        "device_conformance.kind_configs": "kind-configs",  # kind cluster templates (YAML)
        "device_conformance.suites": "suites",
    },
)
