"""A pin-bump rehearsal finds the distribution of a module the new sglang imports from that
sglang's own requirements (the wheel's files decide, not the name)."""

from __future__ import annotations

import zipfile

import pytest

from discovery_harness.runtime.pin_bump import declared, most_like, top_level_modules

pytestmark = pytest.mark.unit

REQUIRES = [
    "apache-tvm-ffi==0.1.11",
    "torch==2.14.1",
    "tvm-tools==1.0",
    "python-dateutil<3",
    'sgl-flash-mla==1.0.0; sys_platform == "win32"',
    'pytest; extra == "test"',
]


def test_only_what_this_platform_needs_and_lacks_is_a_candidate():
    names = [r.name for r in declared(REQUIRES, installed={"torch"})]
    assert names == ["apache-tvm-ffi", "tvm-tools", "python-dateutil"]


def test_a_name_holding_the_modules_comes_first():
    candidates = most_like("tvm_ffi", declared(REQUIRES, installed=set()))
    assert [r.name for r in candidates][:2] == ["apache-tvm-ffi", "tvm-tools"]
    assert most_like("dateutil", declared(REQUIRES, set()))[0].name == "python-dateutil"


def test_a_wheels_top_level_modules_come_from_its_files(tmp_path):
    wheel = tmp_path / "apache_tvm_ffi-0.1.11-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in (
            "tvm_ffi/__init__.py",
            "tvm_ffi/core.py",
            "tvm_ffi_helpers.py",
            "apache_tvm_ffi-0.1.11.dist-info/METADATA",
            "apache_tvm_ffi-0.1.11.data/scripts/x",
        ):
            archive.writestr(name, "")
    assert top_level_modules(wheel) == {"tvm_ffi", "tvm_ffi_helpers"}
