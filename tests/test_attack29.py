"""attack29's repros (``attacks29/``: the same program under plain torchrun or mp.spawn and under ``barrierlab
run`` or ``bl.run``). Those fixed run here: each exited 1 before its fix. The others are design choices the
reference now states ("What differs from torchrun"): the run's store and timeout, output kept rather than
streamed, no SIGTERM to the surviving ranks, the function sent by value; they are listed in the closing note of
session 25."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks29"

FIXED = [
    "a01_debug_env_set_by_script",
    "a02_debug_env_set_in_notebook",
    "a03_omp_threads_set_by_script",
    "a04_compile_disable_set_by_script",
    "a07_returned_nested_quantized_tensor",
    "a14_reexec_with_orig_argv",
    "a16_fn_touching_dynamo_config_refused",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
