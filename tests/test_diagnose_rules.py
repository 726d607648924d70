"""Each diagnosis rule on runs assembled without processes: what it recognises, and what it leaves to others.

The learner's calls are written by the recorder's own writer and read back (``recorded``), so every event is
one the collector could have read from a rank."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest
import torch
from recorded import BACKWARD as TORCH_BACKWARD
from recorded import DDP_SHAPE_CHECK, issued, rank_events, rank_record
from recorded import call as recorded_call

from barrierlab import calls
from barrierlab import diagnose as d
from barrierlab._protocol import Status
from barrierlab.events import Event
from barrierlab.result import RankResult, Run

TIMED_OUT = "[../gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 2000ms for recv operation"
TIMEOUT = f"RuntimeError: {TIMED_OUT}"
CLOSED = "RuntimeError: Connection closed by peer"
BACKWARD = "DDP backward's gradient all_reduce"


def c(name, line, end=1.0, tensors=(), timed_out=False, file="train.py", callers=()):
    """A collective the learner called at ``file:line`` (in ``main``), left at ``end`` (None: never)."""
    site = (file, line, "main", list(callers)) if callers else (file, line, "main")
    return name, line, end, tensors, timed_out, site


def recorded_calls(*specs) -> list:
    """Collectives the learner called (numbered 1, 2, ... in order, the k-th entered at 0.1 k s)."""
    return [
        recorded_call(
            name, 0.1 * k, end, tensors=tensors, error=RuntimeError(TIMED_OUT) if timed_out else None, site=site
        )
        for k, (name, line, end, tensors, timed_out, site) in enumerate(specs, start=1)
    ]


def calls_of(rank, *specs) -> list[Event]:
    """``rank``'s collectives (see :func:`recorded_calls`), as recorded."""
    return rank_events(rank, recorded_calls(*specs))


def learners(k, op, line):
    """The flight recorder's entry of the learner's k-th recorded call (see :func:`recorded_calls`)."""
    return issued(op, 0.1 * k, site=("train.py", line, "main"))


def result(rank, status=Status.FINISHED, events=(), flight=None, message=None, calls=()):
    """A rank's result; with ``flight`` (torch's flight-recorder entries, see ``recorded.Issued``) its events
    are ``calls`` (specs of :func:`c`) and both are written to one events file and read back."""
    flight_record = None
    if flight is not None:
        recorded = rank_record(rank, recorded_calls(*calls), list(flight))
        events, flight_record = recorded.events, recorded.flight
    r = RankResult(rank, status, events=list(events), flight=flight_record)
    if message:
        r.exception = RuntimeError(message)
    return r


def run_of(*ranks) -> Run:
    return Run(world_size=len(ranks), ranks=list(ranks), elapsed=1.0, timeout=2.0, deadline=7.0)


def ddp_steps(steps, sizes=None):
    """torch's flight-recorder entries of DDP's construction (line 5) plus ``steps`` backward passes (line 9)."""
    entries = [issued("all_gather", 0.05, by=DDP_SHAPE_CHECK, site=("train.py", 5, "main"))]
    for i in range(steps):
        entries.append(
            issued(
                "all_reduce",
                0.1 * (i + 1),
                by=TORCH_BACKWARD,
                site=("train.py", 9, "main"),
                sizes=sizes,
                dtypes=sizes and ["Float"],
            )
        )
    return entries


def test_rule_table_is_ordered_and_ends_with_the_same_calls_fallback():
    names = [rule.__name__ for rule in d.RULE_TABLE]
    # ranks that asked one new_group call for different members, or skipped one, broke torch's contract even when
    # the run finished (by chance): that comes before "ok"; so does a forked child's collective that never returned
    # while its rank finished (review92d C3)
    assert names[:4] == [
        "rule_new_group_members_differ",
        "rule_new_group_skipped",
        "rule_collective_in_forked_child",
        "rule_ok",
    ]
    assert names[-1] == "rule_same_calls"
    assert names.index("rule_torch_divergence") < names.index("rule_only_some_ranks")
    assert names.index("rule_paired_by_position") < names.index("rule_mismatched_collectives")


def test_ok_needs_both_records_to_agree():
    same = [c("barrier", 3)]
    agreeing = run_of(
        result(0, calls=same, flight=[learners(1, "barrier", 3)]),
        result(1, calls=same, flight=[learners(1, "barrier", 3)]),
    )
    assert d.rule_ok(d.facts(agreeing)).ok
    disagreeing = run_of(result(0, calls=same, flight=ddp_steps(2)), result(1, calls=same, flight=ddp_steps(1)))
    assert d.rule_ok(d.facts(disagreeing)) is None
    assert not d.diagnose(disagreeing).ok


def test_torch_divergence_names_the_issuer_the_ranks_and_the_backward_line():
    run = run_of(result(0, Status.RAISED, flight=ddp_steps(3), message=TIMEOUT), result(1, flight=ddp_steps(2)))
    diagnosis = d.rule_torch_divergence(d.facts(run))
    assert diagnosis.kind == "torch-collective-diverged"
    assert BACKWARD in diagnosis.headline and "collective #4" in diagnosis.headline
    assert "train.py:9" in diagnosis.headline and "rank 1 never made it" in diagnosis.headline
    assert diagnosis.ranks == [0] and diagnosis.site.line == 9


def test_torch_divergence_blames_a_rank_that_failed_by_itself():
    run = run_of(
        result(0, Status.RAISED, flight=ddp_steps(2), message=TIMEOUT),
        result(1, Status.RAISED, flight=ddp_steps(1), message="ValueError: bad batch"),
    )
    diagnosis = d.rule_torch_divergence(d.facts(run))
    assert diagnosis.kind == "rank-failed" and diagnosis.ranks == [1]
    assert BACKWARD in diagnosis.headline


def test_torch_divergence_leaves_the_learners_own_calls_to_the_other_rules():
    run = run_of(
        result(0, Status.STOPPED, calls=[c("barrier", 3, end=None)], flight=[learners(1, "barrier", 3)]),
        result(1, flight=[]),
    )
    assert d.rule_torch_divergence(d.facts(run)) is None
    assert d.diagnose(run).kind == "still-running" or d.diagnose(run).kind == "only-some-ranks"


def test_broadcast_object_list_against_broadcast_pairs_silently():
    run = run_of(
        result(0, events=calls_of(0, c("broadcast_object_list", 4))),
        result(1, events=calls_of(1, c("broadcast", 6, tensors=(torch.zeros(2),)))),
    )
    diagnosis = d.rule_paired_by_position(d.facts(run))
    assert diagnosis.kind == "silently-paired" and "nothing failed" in diagnosis.headline
    assert d.rule_mismatched_collectives(d.facts(run)) is not None  # the later rule would mislabel it: order matters


def test_barrier_against_all_reduce_never_pairs():
    run = run_of(
        result(0, Status.RAISED, events=calls_of(0, c("barrier", 4, timed_out=True)), message=TIMEOUT),
        result(1, Status.RAISED, events=calls_of(1, c("all_reduce", 6, timed_out=True)), message=TIMEOUT),
    )
    assert d.rule_paired_by_position(d.facts(run)) is None
    diagnosis = d.rule_mismatched_collectives(d.facts(run))
    assert diagnosis.kind == "mismatched-collectives" and "never pair" in diagnosis.advice
    assert "30 minutes on gloo and 10 minutes on NCCL" in diagnosis.advice


def test_rank_that_raised_before_the_collective_is_the_cause():
    run = run_of(
        result(0, Status.RAISED, events=calls_of(0, c("barrier", 4, timed_out=True)), message=TIMEOUT),
        result(1, Status.RAISED, message="ValueError: bad batch"),
    )
    diagnosis = d.rule_rank_failed(d.facts(run))
    assert diagnosis.kind == "rank-failed" and diagnosis.ranks == [1] and "barrier #1" in diagnosis.headline


def test_a_rank_stopped_at_the_deadline_is_still_running_not_missing():
    run = run_of(result(0, Status.STOPPED, events=calls_of(0, c("barrier", 4, end=None))), result(1, Status.STOPPED))
    assert d.rule_still_running(d.facts(run)).ranks == [1]
    finished = run_of(result(0, Status.STOPPED, events=calls_of(0, c("barrier", 4, end=None))), result(1))
    assert d.rule_still_running(d.facts(finished)) is None


def test_an_extra_barrier_shows_as_a_silent_mispairing():
    rank0 = calls_of(0, c("barrier", 3), c("barrier", 4), c("barrier", 4, end=None))
    rank1 = calls_of(1, c("barrier", 4), c("barrier", 4))
    diagnosis = d.rule_silent_mispairing(
        d.facts(run_of(result(0, Status.STOPPED, events=rank0), result(1, events=rank1)))
    )
    assert diagnosis.kind == "silent-mispairing" and "call #1" in diagnosis.headline
    assert "next call of the same kind" not in diagnosis.advice and "position" in diagnosis.advice


def test_a_loop_of_uneven_length():
    rank0 = calls_of(0, c("all_reduce", 7), c("all_reduce", 7), c("all_reduce", 7, end=None))
    rank1 = calls_of(1, c("all_reduce", 7), c("all_reduce", 7))
    diagnosis = d.rule_uneven_loop(d.facts(run_of(result(0, Status.STOPPED, events=rank0), result(1, events=rank1))))
    assert diagnosis.kind == "uneven-loop" and "rank 0: 3, rank 1: 2" in " ".join(diagnosis.evidence)


def test_a_collective_only_some_ranks_reached_names_the_helper_and_its_caller():
    barrier = calls_of(0, c("barrier", 12, end=None, file="helpers.py", callers=[("train.py", 40, "main")]))
    diagnosis = d.rule_only_some_ranks(d.facts(run_of(result(0, Status.STOPPED, events=barrier), result(1))))
    assert diagnosis.kind == "only-some-ranks" and "helpers.py:12" in diagnosis.headline
    assert "called from train.py:40" in diagnosis.headline


def test_a_broadcast_root_that_left_is_explained_by_what_it_needs():
    root = calls_of(0, c("broadcast", 5, tensors=(torch.zeros(2),)))
    diagnosis = d.diagnose(run_of(result(0, events=root), result(1, Status.STOPPED)))
    assert any("root" in line and "every rank" in line for line in diagnosis.evidence)


def test_different_sizes_are_flagged_although_every_rank_finished():
    run = run_of(
        result(0, events=calls_of(0, c("all_reduce", 5, tensors=(torch.zeros(4),)))),
        result(1, events=calls_of(1, c("all_reduce", 5, tensors=(torch.zeros(2),)))),
    )
    diagnosis = d.diagnose(run)
    assert diagnosis.kind == "different-sizes" and "nothing failed" in diagnosis.headline
    assert d.rule_ok(d.facts(run)) is None


def test_different_sizes_in_torch_issued_collectives_are_flagged_from_the_flight_recorder():
    rank0, rank1 = result(0, flight=ddp_steps(1, sizes=[[10]])), result(1, flight=ddp_steps(1, sizes=[[6]]))
    diagnosis = d.diagnose(run_of(rank0, rank1))
    assert diagnosis.kind == "different-sizes" and BACKWARD in str(diagnosis)


def test_stopped_outside_any_collective():
    diagnosis = d.rule_stopped_outside_collectives(
        d.facts(run_of(result(0, Status.STOPPED), result(1, Status.STOPPED)))
    )
    assert diagnosis.kind == "stopped" and diagnosis.ranks == [0, 1]


def test_a_failure_passed_on_by_main_process_first_blames_the_preparing_rank():
    run = run_of(
        result(0, Status.RAISED, message="OSError: disk full"),
        result(1, Status.RAISED, message="RuntimeError: rank 0 failed while preparing"),
    )
    diagnosis = d.rule_failed_by_itself(d.facts(run))
    assert diagnosis.ranks == [0] and "rank 1 failed because of it" in diagnosis.headline


def test_same_calls_headline_only_when_the_flight_recorder_agrees():
    both = [c("barrier", 3)]
    with_flight = run_of(
        result(0, Status.RAISED, calls=both, flight=[learners(1, "barrier", 3)], message=TIMEOUT),
        result(1, Status.RAISED, calls=both, flight=[learners(1, "barrier", 3)], message=TIMEOUT),
    )
    assert "same collective calls" in d.rule_same_calls(d.facts(with_flight)).headline
    without = run_of(
        result(0, Status.RAISED, events=calls_of(0, *both), message=TIMEOUT),
        result(1, Status.RAISED, events=calls_of(1, *both), message=TIMEOUT),
    )
    assert "same collective calls" not in d.rule_same_calls(d.facts(without)).headline


def test_flight_records_are_compared_by_sequence_id_not_by_count():
    # rank 0's buffer kept only its last entries (2,000 in torch): same positions, fewer entries
    rank0 = [issued("barrier", 0.001 * seq, seq=seq) for seq in range(5, 2005)]
    rank1 = [issued("barrier", 0.001 * seq, seq=seq) for seq in range(1, 2005)]
    run = run_of(result(0, flight=rank0), result(1, flight=rank1))
    assert [len(rank.flight.entries) for rank in run] == [2000, 2004]
    assert d.facts(run).split is None


def test_ledger_marks_collectives_torch_issued():
    text = calls.ledger(run_of(result(0, flight=ddp_steps(2)), result(1, flight=ddp_steps(1))))
    assert "all_reduce · DDP backward's gradient all_reduce @ line 9" in text
    assert text.splitlines()[3].split()[-1] == "—"


@pytest.mark.parametrize(
    "phrase",
    [
        "next call of the same kind",
        "does not match different ops",
        "all_reduce would not have helped",
        "synchronises the data it reduces",
    ],
)
def test_no_text_contradicts_the_model_of_ordering(phrase):
    assert phrase not in inspect.getsource(d)


def test_a_hang_in_torchs_teardown_is_reported_as_torchs_and_the_run_stays_ok():
    ranks = [result(r, events=calls_of(r, c("barrier", 10))) for r in range(2)]
    ranks[1].teardown_hung = True
    run = run_of(*ranks)
    diagnosis = d.diagnose(run)
    assert run.ok and diagnosis.ok
    assert any("hung in torch's teardown" in e and "not a deadlock in your code" in e for e in diagnosis.evidence)
    assert "deadline" not in str(diagnosis)
    assert "then hung in torch's teardown" in ranks[1].summary()


def _barrier(start, end, line, timeout, error=None):
    """A barrier entered at ``start`` with ``timeout=`` seconds in force, as the recorder records it."""
    return recorded_call(
        "barrier",
        start,
        end,
        error=error,
        site=("prep.py", line, "main"),
        kwargs={"timeout": timedelta(seconds=timeout)},
    )


def _rank0_arrives_at(start: float):
    """Rank 1 waits in barrier #1 from 0.1 s until its 2 s timeout; rank 0 enters it at ``start``."""
    return run_of(
        result(
            0,
            Status.RAISED,
            events=rank_events(0, [_barrier(start, start + 0.01, 9, 2, RuntimeError(CLOSED))]),
            message=CLOSED,
        ),
        result(
            1,
            Status.RAISED,
            events=rank_events(1, [_barrier(0.1, 2.1, 5, 2, RuntimeError(TIMED_OUT))]),
            message=TIMEOUT,
        ),
    )


def test_a_rank_entering_after_the_others_timeout_ran_out_is_the_late_arrival():
    run = _rank0_arrives_at(4.0)
    diagnosis = d.rule_late_arrival(d.facts(run))
    assert diagnosis.kind == "late-arrival" and diagnosis.ranks == [0]
    assert diagnosis.headline.startswith("rank 0 reached barrier #1 at prep.py:9 3.9 s after rank 1 (at prep.py:5)")
    assert "its 2 s timeout ran out first" in diagnosis.headline
    assert d.diagnose(run).kind == "late-arrival"  # before "did not finish, but every rank made the same calls"


def test_a_rank_entering_within_the_others_timeout_is_not_late():
    assert d.rule_late_arrival(d.facts(_rank0_arrives_at(1.5))) is None


def test_the_calls_own_timeout_decides_not_the_runs():
    # the run's timeout is 2 s (run_of), the barrier's own 30 s: arriving 3.9 s later is in time
    run = run_of(
        result(
            0, Status.RAISED, events=rank_events(0, [_barrier(4.0, 4.01, 9, 30, RuntimeError(CLOSED))]), message=CLOSED
        ),
        result(
            1, Status.RAISED, events=rank_events(1, [_barrier(0.1, 4.01, 5, 30, RuntimeError(CLOSED))]), message=CLOSED
        ),
    )
    assert d.rule_late_arrival(d.facts(run)) is None


def _objects(rank, objects, end=0.5):
    site = ("resume.py", 7, "main")
    kwargs = {"object_list": objects, "src": 0}
    return rank_events(rank, [recorded_call("broadcast_object_list", 0.1, end, site=site, kwargs=kwargs)])


def test_object_lists_of_different_lengths_are_different_sizes_named_at_the_call():
    run = run_of(
        result(0, Status.RAISED, events=_objects(0, ["a", "b", "c"]), message="Connection reset by peer"),
        result(1, Status.KILLED, events=_objects(1, [None], end=None)),
    )
    diagnosis = d.diagnose(run)
    assert diagnosis.kind == "different-sizes"
    assert "lists of objects of different lengths" in diagnosis.headline
    assert "broadcast_object_list #1 at resume.py:7: rank 0 passed 3 objects, rank 1 passed 1 object" in (
        diagnosis.headline
    )


def test_object_lists_of_the_same_length_are_not_a_mismatch():
    run = run_of(result(0, events=_objects(0, [["a", "b", "c"]])), result(1, events=_objects(1, [None])))
    assert d.facts(run).shapes == [] and d.diagnose(run).ok


def test_a_flight_entry_is_linked_to_the_learners_call_at_its_line_when_the_clocks_disagree():
    """A fresh-clone CI on a loaded machine: three back-to-back barriers at lines 42, 43, 44, and the ledger
    named line 44 for every one. The flight recorder stamps entries with the wall clock, converted with the
    wall-clock reading taken once at the rank's start; a rank preempted between its two clock reads shifts
    every entry later than its call by that long (here 3 ms, with calls 1 ms apart). Each entry is linked to
    the call at its own learner line, not to the last call begun by its shifted time."""
    lines = (42, 43, 44)
    record = rank_record(
        0,
        [
            recorded_call("barrier", 1.0 + 0.001 * k, 1.0 + 0.001 * k + 0.0005, site=("train.py", n, "main"))
            for k, n in enumerate(lines)
        ],
        [issued("barrier", 1.003 + 0.001 * k, site=("train.py", n, "main")) for k, n in enumerate(lines)],
    )
    assert [(e.seq, e.call.line) for e in record.flight] == [(1, 42), (2, 43), (3, 44)]
    ledger = calls.ledger(run_of(RankResult(0, Status.FINISHED, events=record.events, flight=record.flight)))
    assert [row.split()[1:4] for row in ledger.splitlines()[1:4]] == [["barrier", "@", "line"]] * 3, ledger
    assert [row.split()[4] for row in ledger.splitlines()[1:4]] == ["42", "43", "44"], ledger
