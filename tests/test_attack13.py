"""attack13's repros (``attacks13/``: a new attacker given only the README, the docs and the source), each a script
that exits 0 when the promise it attacks holds and 1 when it breaks. Those fixed are run here: each exited 1
before its fix (see each script's docstring for what broke)."""

from __future__ import annotations

from pathlib import Path

import pytest
from repros import assert_the_promise_holds

ROOT = Path(__file__).resolve().parent.parent
ATTACKS = ROOT / "attacks13"

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]

FIXED = [
    "a13_false_race_lock_released_by_close",
    "a16_false_race_dir_fd_relative_paths",
    "a01_script_threads_not_joined",
    "a08_script_exit_codes_differ",
    "a05_lint_nbformat3_silently_clean",
    "a10_timeline_parameters_unvalidated",
    "a12_report_timeline_sparse_rank",
    "a09_false_mismatch_same_numel_shapes",
    "a15_cli_scenario_kwargs_unchecked",
    "a04_report_quadratic_ordering",
    "a06_nb01_check_says_new_group_not_needed",
    "a07_nb02_rejects_tmpdir_inside_checkpoint_dir",
    "a14_nb07_check_passes_reduce_where_ranks_wait",
    "a02_script_join_all_threads",
]


@pytest.mark.timeout(400)
@pytest.mark.parametrize("name", FIXED)
def test_the_attack_no_longer_breaks_its_promise(name):
    assert_the_promise_holds(ATTACKS / f"{name}.py")
