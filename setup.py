"""The wheel's packages: each folder of the repository under its installed import name.

The folders keep the design's layout (harness/ workers/ scenarios/); installed, they are
discovery_harness, discovery_harness_workers and discovery_harness_scenarios, names that
nothing else in the Dynamo/SGLang stack uses. Everything else is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

FOLDERS = {
    "harness": "discovery_harness",
    "workers": "discovery_harness_workers",
    "scenarios": "discovery_harness_scenarios",
}

packages, package_dir = [], {}
for folder, name in FOLDERS.items():
    package_dir[name] = folder
    packages.append(name)
    found = find_namespace_packages(folder, exclude=["*__pycache__*"])
    packages += [f"{name}.{sub}" for sub in found]

# The CI files the commands need (history builds release environments with ci/setup.sh from
# ci/requirements/; preflight reads the proven pins there): data of the harness's package.
package_dir["discovery_harness.ci"] = "ci"
packages.append("discovery_harness.ci")
package_data = {
    "discovery_harness.ci": [
        "setup.sh",
        "requirements/*.txt",
        "requirements/releases/*.txt",
        "requirements/releases/*/*.txt",
    ],
}

setup(packages=packages, package_dir=package_dir, package_data=package_data)
