"""attack17's repros (``attacks17/``: a new attacker pointed at the ordering model and what the recorder feeds it:
files kept open across a synchronising call, functional collectives, DDP's gradient all_reduce). Those fixed are
run here: each exited 1 before its fix. Not fixed (docs/reference.md says what the model does not see): a03 (a read
through ``seek(0)``/``pread`` taken as after the barrier), a09 (functional collectives inside ``torch.compile``),
a13 (the cost of a file opened per step, in docs/performance.md). a11 (DDP's edges before torch's flight recorder's
last 2,000 entries) is fixed by not judging those pairs (session 22: ``Races.undecided``)."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks17"

FIXED = [
    "a01_write_then_kept_open_read",
    "a02_empty_read_taken_as_after",
    "a04_opened_in_thread_written_after",
    "a05_flushed_before_barrier_closed_after",
    "a06_funcol_result_viewed",
    "a07_funcol_gather_dim1",
    "a08_funcol_unwrapped_ops",
    "a10_ddp_on_subgroup",
    "a11_ddp_long_loop",
    "a14_renamed_while_open",
    "a15_nb01_check_refuses_correct",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
