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
    "a03_repeat_look_race_missed",
    "a04_compare_set_poll_false_race",
    "a05_mmap_load_race_missed",
    "a06_nb02_symlink_swap_refused",
    "a07_nb02_partial_rename_wrong_reason",
    "a08_irecv_any_source_unordered",
    "a09_clean_outdir_race_missed",
    "a10_published_then_removed_false_race",
    "a11_store_keys_across_stores",
    "a12_rewrite_vs_listing_false_race",
    "a13_read_kept_open_false_race",
    "a14_pickle_patched_functions",
    "a15_future_then_callback_false_race",
    "a16_ordering_api_unvalidated_run",
    "a17_marker_poll_other_looks",
    "a18_builtin_as_class_attribute",
    "a19_devshm_and_py_files_unseen",
    "a20_quiet_not_validated",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)


def _raises_after_reading_its_source():
    import inspect
    import linecache
    import traceback

    linecache.checkcache()
    inspect.getsource(_raises_after_reading_its_source)  # the standard library reading this .py file
    try:
        raise ValueError("on purpose")
    except ValueError:
        traceback.format_exc()
    return 1


def test_the_learners_own_source_read_by_the_standard_library_is_not_a_file_event():
    """a19: a ``.py`` file the learner's code opens is recorded (a generated config handed between ranks), but
    inspect, linecache and traceback reading the learner's source are not the learner's accesses."""
    import barrierlab as bl

    run = bl.run(_raises_after_reading_its_source, world_size=2, timeout=20)
    assert run.ok, run
    read = [
        e for r in range(2) for e in run[r].events if e.get("kind") == "file" and str(e.get("path")).endswith(".py")
    ]
    assert read == []
