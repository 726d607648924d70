"""attack18's repros (``attacks18/``: a new attacker pointed at the ordering model on the file shapes real training
code uses, ordering through stores, point-to-point calls and futures, the wrappers barrierlab puts in torch's and
the standard library's place, and argument validation). Those fixed are run here: each exited 1 before its fix.
The others are listed, with what each shows, in docs/reference.md ("What the ordering model does not see") and in
the closing note of session 17."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks18"

FIXED = [
    "a01_nb01_glob_poll_refused",
    "a02_listdir_poll_false_races",
    "a04_compare_set_poll_false_race",
    "a06_nb02_symlink_swap_refused",
    "a07_nb02_partial_rename_wrong_reason",
    "a08_irecv_any_source_unordered",
    "a10_published_then_removed_false_race",
    "a11_store_keys_across_stores",
    "a14_pickle_patched_functions",
    "a15_future_then_callback_false_race",
    "a16_ordering_api_unvalidated_run",
    "a17_marker_poll_other_looks",
    "a18_builtin_as_class_attribute",
    "a20_quiet_not_validated",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
