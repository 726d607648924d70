"""attack27's repros (``attacks27/``: process groups made in unusual ways, work done in children and threads,
file hand-offs as libraries do them, very long runs). Those fixed run here: each exited 1 before its fix. The
others are listed, with what each shows, in the closing note of session 23."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks27"

FIXED = [
    "a01_sort_ranks_false_order",
    "a02_overlapping_groups_advice",
    "a04_forked_process_timeline",
    "a05_spawned_child_no_group_advice",
    "a06_thread_collective_advice",
    "a07_json_in_pieces_read_early",
    "a09_long_run_mixed_op_numbering",
    "a10_long_run_straggler_cut_record",
    "a11_rewrite_each_epoch_stale_read",
    "a12_ledger_subgroup_labels",
    "a13_spawn_dataloader_worker_init",
    "a14_new_group_ranks_generator",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
