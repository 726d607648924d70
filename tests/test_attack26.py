"""attack26's repros (``attacks26/``: the ordering model against what really runs, the notebooks' exercise
checks with wrong and right answers written differently, and the live view in a real browser). Those fixed run
here: each exited 1 before its fix. The others are listed, with what each shows, in the closing note of session 23
(a09's remaining three pairs are the marker's own content read against its write, which the model keeps)."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks26"

FIXED = [
    "a07_numpy_save_load",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
