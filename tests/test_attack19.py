"""attack19's repros (``attacks19/``: a new attacker pointed at the exercise checks with learners' own answers,
the script runner against python and torchrun, long and odd runs' timelines and summaries, and lint on public-style
code). Those fixed are run here: each exited 1 before its fix. The others are listed, with what each shows, in the
closing note of session 18."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks19"

FIXED = [
    "a07_unmatched_send_diagnosed_as_skipped_barrier",
    "a09_lock_file_opened_w_false_race",
    "a01_script_traceback_missing",
    "a02_script_excepthook_skipped",
    "a03_script_cwd_on_sys_path",
    "a04_script_argv0_absolute",
    "a06_nb04_wrong_explanation",
    "a08_nb03_steps_not_multiple",
    "a11_nb02_link_called_open_for_writing",
    "a14_late_rank_init_timeout_masked",
    "a12_summary_idle_while_main_thread_computes",
    "a10_script_module_mode_missing",
    "a13_summary_quadratic_on_long_runs",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
