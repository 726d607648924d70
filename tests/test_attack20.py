"""attack20's repros (``attacks20/``: a new attacker pointed at the ordering model with orderings other than a
barrier, the script runner's exits against torchrun, torchrun record folders, the live view and the timeline of
subgroups and p2p, and parameter validation). Those fixed are run here: each exited 1 before its fix. The others
are listed, with what each shows, in the closing note of session 19."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks20"

FIXED = [
    "a03_module_os_exit0_not_finished",
    "a04_fork_child_exit_writes_rank_outcome",
    "a13_atexit_os_exit0_not_finished",
    "a19_script_builtins_is_a_dict",
    "a20_empty_reduce_scatter_missed_race",
    "a10_unvalidated_parameters",
    "a15_cli_key_value_after_options_unrecognized",
    "a17_cli_module_package_without_main",
    "a18_store_append_queue_false_races",
    "a21_nb07_check_refuses_store_queue_answer",
    "a01_p2p_tags_false_race",
    "a02_p2p_tags_missed_race",
    "a05_p2p_tag_mismatch_diagnosis_names_no_line",
    "a09_p2p_groups_false_race",
    "a06_timeline_fifo_without_extension",
    "a14_live_view_numbers_differ_per_rank",
    "a07_thread_handoff_false_races",
    "a12_reused_record_folder",
    "a11_per_node_folder_blames_other_nodes_ranks",
    "a08_report_races_clock_skew_store_handoff",
    "a16_learner_tcpstore_listens_beyond_loopback",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
