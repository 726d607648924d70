"""The recorder puts its wrappers in every torch.distributed module that holds a c10d function under its name
(``device_mesh`` imports ``new_group`` by name, attack16 a02), looking only in modules it has not looked in
before (a rank's start no longer reads every module each time): a module imported later, one that gained names
since, and one first looked in while recording are all still found, and every one gets its original back."""

from __future__ import annotations

import sys
import types

import pytest
import torch.distributed.distributed_c10d as c10d

from barrierlab import record

NAME = "torch.distributed._barrierlab_test_holder"


@pytest.fixture
def holder_module():
    module = types.ModuleType(NAME)
    yield module
    sys.modules.pop(NAME, None)
    record.stop()


def test_a_module_imported_after_the_first_look_gets_the_wrapper_and_its_original_back(tmp_path, holder_module):
    original = c10d.new_group
    record.start(str(tmp_path / "a.events"), 0)  # looks in every module imported so far
    record.stop()
    holder_module.new_group = original
    sys.modules[NAME] = holder_module  # imported afterwards
    record.start(str(tmp_path / "b.events"), 0)
    assert holder_module.new_group is c10d.new_group is not original
    record.stop()
    assert holder_module.new_group is original is c10d.new_group


def test_a_module_that_gained_the_name_since_it_was_looked_in_is_found(tmp_path, holder_module):
    original = c10d.new_group
    sys.modules[NAME] = holder_module  # looked in while it holds nothing (as if still being imported)
    record.start(str(tmp_path / "a.events"), 0)
    record.stop()
    holder_module.new_group = original
    record.start(str(tmp_path / "b.events"), 0)
    assert holder_module.new_group is c10d.new_group is not original
    record.stop()
    assert holder_module.new_group is original


def test_a_module_first_looked_in_while_recording_is_still_a_holder_afterwards(tmp_path, holder_module):
    original = c10d.new_group
    record.start(str(tmp_path / "a.events"), 0)
    holder_module.new_group = c10d.new_group  # `from distributed_c10d import new_group` while recording
    sys.modules[NAME] = holder_module
    record.stop()
    record.start(str(tmp_path / "b.events"), 0)  # looks in it now: it holds the wrapper
    record.stop()
    holder_module.new_group = original  # as the module would hold it had it been imported before
    record.start(str(tmp_path / "c.events"), 0)
    assert holder_module.new_group is c10d.new_group is not original
    record.stop()
    assert holder_module.new_group is original
