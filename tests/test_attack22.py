"""attack22's repros (``attacks22/``: a campaign on the ordering model with file traffic as training code does it,
the script runner on scripts as people write them, the diagnosis beyond plain collectives, and the exercise
checks). Those fixed are run here: each exited 1 before its fix. The others are listed, with what each shows, in
the closing note of session 21."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks22"

FIXED = [
    "a03_removal_of_absent_file_false_race",
    "a04_exclusive_create_loser_false_race",
    "a05_torch_serialization_save_missed",
    "a06_append_plus_read_missed",
    # held when the campaign ran, kept as guards: the script runner's exit meanings, the diagnosis beyond plain
    # collectives, path spellings, nb05's right answers, common file idioms
    "a10_script_runner_exit_meaning",
    "a11_diagnosis_beyond_plain_collectives",
    "a12_path_spellings_and_runs",
    "a13_nb05_right_answers_pass",
    "a14_common_file_idioms",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
