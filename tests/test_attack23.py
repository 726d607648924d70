"""attack23's repros (``attacks23/``: a campaign on notebooks as a learner runs them, ``bl.run``'s options, ``report``
on hand-made folders, and lint on published training scripts). Those fixed are run here: each exited 1 before its
fix. The others are listed, with what each shows, in the closing note of session 21."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks23"

FIXED = [
    "a01_record_false_barrier_raises",
    "a03_report_mixed_folder_claims",
    "a04_diagnosis_names_one_ranks_line_for_all",
    "a07_nb01_cached_answer_refused_without_reason",
    # held when the campaign ran, kept as guards: interrupts at random moments, bl.run's options, notebooks run
    # twice, shuffled and shadowed, checks given odd callables
    "a02_interrupt_at_random_moments",
    "a08_run_options_sweep",
    "a09_notebooks_twice_shuffled_shadowed",
    "a10_checks_odd_callables",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
