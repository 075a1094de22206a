# The top-level fixtures/ folder ships as the subpackage device_conformance.fixtures, so it never
# shadows (or is shadowed by) the unrelated PyPI package named "fixtures".
from setuptools import find_packages, setup

setup(
    packages=[*find_packages("src"), "device_conformance.fixtures", "device_conformance.kind_configs"],
    package_dir={
        "": "src",
        "device_conformance.fixtures": "fixtures",
        "device_conformance.kind_configs": "kind-configs",  # kind cluster templates (YAML)
    },
)
