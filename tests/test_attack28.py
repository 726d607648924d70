"""attack28's repros (``attacks28/``: hostile values and exceptions, the run's own files and descriptors,
containment, arguments, ``report`` and ``lint`` on hostile inputs). Those fixed run here: each exited 1 before its
fix. a10 is timed, so it is not run here: tests/test_lint.py counts the nodes its fix walks. The others are listed, with what each shows, in the closing note of session 24."""

from __future__ import annotations

from pathlib import Path

from repros import fixed_attacks

ATTACKS = Path(__file__).resolve().parent.parent / "attacks28"

FIXED = [
    "a02_huge_exception_message_slow_diagnosis",
    "a04_forged_event_lines_in_another_ranks_record",
    "a08_report_hostile_folders",
    "a12_removed_events_file_diagnosed_as_skipped_call",
    "a13_forged_segment_note_unlinks_callers_memory",
    "a15_lint_api_odd_objects",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)
