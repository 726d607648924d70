"""attack16's repros (``attacks16/``: a new attacker given the README, the docs and the source, pointed at the wider
torch.distributed API on gloo — DeviceMesh, DTensor, FSDP2, functional collectives, coalescing, DCP — and at the
ordering model on correct programs ordered by something other than a barrier). Each exited 1 before its fix."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks16"

FIXED = [
    "a01_funcol_wait_false_race",
    "a02_device_mesh_shapes_misdiagnosed",
    "a03_ddp_backward_false_race",
    "a04_nb04_check_refuses_funcol_answer",
    "a05_coalesced_call_number_vs_ledger",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
