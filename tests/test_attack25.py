"""attack25's repros (``attacks25/``: a campaign on the README's commands on a fresh machine, the programs
beginners write when they first meet barriers (``attacks25/learner/``), and the figures). Those fixed run here:
each exited 1 before its fix. The others are listed, with what each shows, in the closing note of session 22."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks25"

FIXED = [
    "a02_missing_barrier_said_nobody_wrote",
    "a07_input_on_rank0_stdin",
    "a08_hardcoded_world_size_advice",
    "a04_dataloader_worker_barrier",
    "a05_mp_spawn_inside_rank",
    "a06_new_group_own_ranks",
    "a10_timeline_cut_record_drawn_stuck",
    "a11_timeline_vs_diagnosis_worker_barrier",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
