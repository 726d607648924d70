"""Explain a failed or stopped run in plain words.

Two records are aligned: barrierlab's own (every ``torch.distributed`` call the learner's code made, with
its line, sizes and dtypes) and torch's flight recorder (every collective the group ran, numbered by its
position in the group's sequence, including those torch issued from C++ — DDP's gradient all_reduce and
buffer broadcasts — or from its own Python code — DTensor, DCP, FSDP). The first position where the ranks
disagree, how each rank ended, and torch's own error messages (translated by :func:`explain_error`) make
the diagnosis. The decision is an ordered table of rules (:data:`RULE_TABLE`): the first rule that
recognises the run writes it.

The model of ordering every text here teaches: a rank leaves a blocking collective only when it has what it
needs and the ranks it sends to have posted their receives (a gloo send completes only then). For barrier,
and all_reduce and all_gather of a non-empty tensor, that is every rank, so on gloo everything before the call on any rank happens before
everything after it on every rank. For broadcast (a tree in gloo), scatter, gather and point-to-point calls it
is not: a non-root rank waits only for the ranks it exchanges with, and the root of a broadcast waits only for
its direct children in the tree, so it can leave before a late rank further down arrives; the root of a
gather or scatter waits for every rank. With ``async_op=True`` nothing is ordered until ``wait()`` on gloo.
On a GPU, NCCL collectives return to the host once queued (by default), and their ``wait()`` makes the current
CUDA stream wait, not the host (``Work.wait``'s docstring): only a call that blocks the host (``barrier()``, an
object collective's receive) orders host work there. The k-th collective of a group must be the same operation
on every rank: on gloo, different operations at one position do not pair (each waits until the timeout) unless
gloo runs both as one operation (``ops.underlying``); on
NCCL it is undefined behaviour, "including hangs, crashes, or data corruption" (NCCL's user guide, Collective
Operations: calls must form one complete collective with the same count and datatype on every rank).
"""

from __future__ import annotations

import ast
import math
import os
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from barrierlab import _files, ops, ordering
from barrierlab._protocol import PEER_GONE, Status, tidy
from barrierlab._protocol import signal_name as _signal_name
from barrierlab.calls import (
    GROUP_MAKERS,
    call_numbers,
    collectives,
    flights,
    ordinal,
    positions_in_group,
    site_key,
    subgroup_calls,
    where_text,
)
from barrierlab.chains import Chain, called_from, chain_of, parting, traceback_lines
from barrierlab.events import (
    CALL_KINDS,
    PEER_ARGUMENTS,
    Event,
    Flight,
    FlightEntry,
    defines,
    functions,
    loops,
    ranks_start,
)
from barrierlab.sites import Site, is_learners
from barrierlab.stacks import stuck_at, traceback_frames
from barrierlab.words import LATER_GROUP_FAILS, issuer_word, library_of, rank_list, sentence_start, short_repr

if TYPE_CHECKING:
    from barrierlab.result import Run

EXITED, FINISHED, KILLED, LOST, RAISED, SETUP_FAILED, STOPPED = (
    Status.EXITED,
    Status.FINISHED,
    Status.KILLED,
    Status.LOST,
    Status.RAISED,
    Status.SETUP_FAILED,
    Status.STOPPED,
)

RULES = "Every rank of a group must call every collective, in the same order, the same number of times."
#: torch's default timeout for a collective, which a real job waits before anything fails.
DEFAULT_TIMEOUTS = "torch's default timeout is 30 minutes on gloo and 10 minutes on NCCL"
# (pattern, name, explanation) for torch / gloo messages a learner meets. Explanations must not depend
# on details that vary between runs (which round of the barrier, send or recv, the peer's port).
_ERRORS = (
    # the monitored barrier's message also holds "Timed out waiting …ms": its own explanation first (review47b)
    (
        re.compile(r"Ranks? ([\d, ]+) failed to pass monitoredBarrier"),
        "monitored barrier",
        "rank 0's monitored barrier (a monitored_barrier call, or the check TORCH_DISTRIBUTED_DEBUG=DETAIL makes "
        "before every collective) waited for the other ranks, until the timeout or, when a missing rank's process "
        "had ended, only until its closed connection told it so (at once, whatever time torch's message gives), "
        "and names the ones that never arrived: {0} (a monitored_barrier call names only the first unless "
        "wait_all_ranks=True; DETAIL's check names them all).",
    ),
    # a rank other than 0 sends to rank 0 and waits for its answer, which rank 0 sends after receiving from
    # every rank (ProcessGroupGloo::monitoredBarrier); its error also holds "Timed out waiting" (review51b)
    (
        re.compile(r"Rank (\d+) successfully reached monitoredBarrier"),
        "monitored barrier answer",
        "rank {0} reached the monitored barrier and waited for rank 0's answer, which rank 0 sends only once "
        "every rank has arrived; the answer never came (rank 0 gave up on ranks that never came, and its own "
        "error names them, or rank 0 never reached the monitored barrier itself), and rank {0} gave up waiting "
        "for it; it did not fail by itself.",
    ),
    (
        re.compile(r"Timed out waiting (\d+)ms"),
        "gloo timeout",
        "gloo gave up after {0} ms waiting for a peer (its data, or for a send, its posted receive): the peer did "
        "not reach the matching call within "
        "the timeout in force (the group's, or the call's own timeout=), or reached a call that does not match "
        "this one (another op, or other sizes).",
    ),
    (
        PEER_GONE,
        "peer gone",
        "a peer closed its connection while this rank was waiting on it: the peer's process ended, or the peer "
        "gave up after its own timeout. gloo reports a closed connection at once, without waiting for the timeout; "
        "ranks that were not waiting on that peer at the time can still wait the full timeout.",
    ),
    (
        re.compile(r"Application timeout caused pair closure"),
        "poisoned group",
        "an earlier timeout on this rank closed every connection of its group, so the group is unusable: every "
        "later collective fails at once. Start a new process group (a new run).",
    ),
    (
        re.compile(r"Detected mismatch between collectives"),
        "debug mismatch",
        "TORCH_DISTRIBUTED_DEBUG=DETAIL compared the ranks' calls before running them and found calls that "
        "differ (op, sizes, dtypes or sequence number) at the same position. When the two calls' descriptions "
        "differ in length, the op name it reports for the *other* rank can be wrong: check that rank's own call.",
    ),
    (
        re.compile(r"size doesn't match|EnforceNotMet"),
        "size mismatch",
        "the bytes this rank received do not match the size of its tensor: the ranks passed tensors of different "
        "sizes or dtypes to the same collective, or different calls met at this position of the group's sequence.",
    ),
    (  # attack25 a07: input() on rank 0, which torchrun feeds from the terminal
        re.compile(r"EOF when reading a line"),
        "stdin",
        "the rank read from stdin (input()), and barrierlab gives every rank an empty stdin (/dev/null), where "
        "torchrun passes its own stdin to the ranks: pass the answer as an argument, an environment variable or a "
        "file instead.",
    ),
    (  # round 33's 3DETR item: "failed by itself", the DDP error's meaning left to the learner
        re.compile(r"Expected to have finished reduction in the prior iteration"),
        "ddp unused parameters",
        "DDP found that this rank's previous backward gave no gradient to some parameters (its loss did not use "
        "them): it never started the all_reduce of their bucket, which the other ranks waited in, and raised at "
        "this rank's next forward.",
    ),
    (
        re.compile(r"rank (\d+) failed while preparing"),
        "main process failed",
        "main_process_first passed on rank {0}'s failure: this rank did not fail by itself.",
    ),
    (
        re.compile(r"waiting for clients|Socket Timeout|connectFullMesh"),
        "rendezvous",
        "the group could not be set up: a peer never connected (it exited, or was never started), or could not "
        "reach the store or the others (check MASTER_ADDR/MASTER_PORT and, with several network interfaces, "
        "GLOO_SOCKET_IFNAME).",
    ),
)

#: The parameter indices DDP's unused-parameter error names ("… did not receive grad for rank 1: 7 8 9 10").
_UNUSED_INDICES = re.compile(r"did not receive grad for rank \d+: ([\d ]+)")

#: Errors that are consequences of another rank's problem, not causes.
_SECONDARY = {
    "gloo timeout",
    "peer gone",
    "poisoned group",
    "main process failed",
    "rendezvous",
    "monitored barrier answer",
}


def explain_error(message: str) -> tuple[str, str] | None:
    """(short name, plain explanation) of a torch.distributed / gloo error message, if it is a known one."""
    for pattern, name, text in _ERRORS:
        match = pattern.search(message or "")
        if match:
            return name, text.format(*[g.strip() for g in match.groups()])
    return None


@dataclass
class Diagnosis:
    """What went wrong, in words: a headline (``kind``), the evidence, and what to do."""

    kind: str
    headline: str
    evidence: list[str] = field(default_factory=list)
    advice: str = ""
    ranks: list[int] = field(default_factory=list)  # the ranks the problem is about
    site: Site | None = None  # the learner's line at the heart of it

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    def __str__(self) -> str:
        lines = [self.headline] + ["  " + e for e in self.evidence]
        if self.advice:
            lines.append("What to do: " + self.advice)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        body = "\n".join(f"- {e}" for e in self.evidence)
        advice = f"\n\n**What to do:** {self.advice}" if self.advice else ""
        return f"**{self.headline}**\n\n{body}{advice}"


def _how_it_ended(result, calls: list[Event], flight: Flight | None = None, *, counted: bool = False) -> str:
    """How a rank ended and after how many collective calls; ``counted``: the sentence has already said how many
    (session 25: "made only 6 collectives in the group and raised … after 0 collective calls", its own calls
    counted against torch's DDP all_reduces)."""
    # the calls' own numbers, not how many were kept: a record cut in the middle keeps its first and last calls
    # (attack27 a10: "after 4997 collective calls" for a rank whose last call was #8501)
    # its calls on subgroups too, which a caller's list of the default group's leaves out (review83d C1: "after 0
    # collective calls" of a rank that raised in its barrier on a subgroup of ranks [1, 2]), each call once
    subgroups = [e for e in result.events if e.is_collective and e.group is not None]
    own = list({id(e): e for e in [*calls, *subgroups] if not e.in_child_process}.values())  # a forked child's
    # call is not its rank's (review61b M4); group-making calls are no collective of the default group on torch
    # 2.13 (calls.GROUP_MAKERS) and are counted apart, as the ledger numbers them (review78d D1: "after 3
    # collective calls", two of them new_group)
    makers = [e for e in own if e.name in GROUP_MAKERS]
    made_before = [e.seq for e in makers if isinstance(e.seq, int)]
    own = [e for e in own if e.name not in GROUP_MAKERS]
    # ``seq`` numbers a rank's collectives of every group (new_group's too)
    n = max([len(own)] + [e.seq - sum(m < e.seq for m in made_before) for e in own if isinstance(e.seq, int)])
    on_subgroups: Counter = Counter()
    for e in own:
        if e.group is not None:  # ``pos`` numbers them on their group: a record cut in the middle keeps the last
            members = tuple(sorted(e.group_ranks)) if e.group_ranks else ()
            on_subgroups[members] = max(on_subgroups[members] + 1, e.pos if isinstance(e.pos, int) else 0)
    default = max(n - sum(on_subgroups.values()), 0)
    after = f"after {default} collective call{'s' if default != 1 else ''}"
    parts = [after + (" on the default group" if on_subgroups else "")] + [
        f"{k} on the group of ranks {list(members)}" if members else f"{k} on a subgroup"
        for members, k in on_subgroups.items()
    ]
    if makers:
        named = Counter(e.name for e in makers)
        parts += [f"{k} {name} call{'s' if k != 1 else ''}" for name, k in named.items()]
    after = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    if result.events_lost:  # review56 C1: its calls are unknown, not none
        after = f"(what it called is not known: its events file was {result.events_lost} while it ran)"
    entries = [e for e in flight or () if not e.p2p]
    issued = [e.issuer for e in entries if e.issuer]
    if counted and not result.events_lost:
        after = ""
    elif issued and len(entries) > n:  # torch's own collectives (DDP's) count too: the flight record has them
        who = ", ".join(dict.fromkeys(issuer_word(i) for i in issued))
        after = (
            f"after {len(entries)} collective{'s' if len(entries) != 1 else ''} ({len(entries) - len(issued)} from "
            f"your own torch.distributed calls, {len(issued)} that torch or your libraries issued: {who})"
        )
    tail = f" {after}" if after else ""
    if result.status == FINISHED:
        return f"{_finished_words(result)}{tail}"
    if result.status == RAISED:
        return f"raised {_clip(result.error_message.splitlines()[0], 200)}{tail}"
    if result.status == SETUP_FAILED:
        return f"failed before the {_code_word(result)} started: {_clip(result.error_message.splitlines()[0], 200)}"
    if result.status == EXITED:
        return f"exited (code {result.exit_code}){tail}"
    if result.status == KILLED:
        return f"was killed by {_signal_name(result.signal)}{tail}"
    if result.status == STOPPED:
        stuck = f", stuck {result.stuck}" if result.stuck else ""
        return f"was stopped at the deadline{tail}{stuck}"
    return result.status


def _code_word(result) -> str:
    """What a rank ran: "script" under ``barrierlab run SCRIPT``, else "function" (review90d M2)."""
    return "script" if getattr(result, "script", False) else "function"


def _finished_words(result, done: bool = False) -> str:
    """How a finished rank ended: it returned from the function, or ran the script to its end (review80d M3:
    "returned from the function" of the ranks of a script); ``done``: as a past participle ("had ...")."""
    if getattr(result, "script", False):
        return f"{'run' if done else 'ran'} the script to its end"
    return "returned from the function"


def _error_evidence(run: Run, ranks: list[int], skip: dict[int, Event] | None = None) -> list[str]:
    """Explain each rank's exception, unless it was already explained at the collective it failed in."""
    by_text: dict[str, list[int]] = {}
    then: dict[str, list[int]] = {}
    for rank in ranks:
        result = run[rank]
        if result.status != RAISED:
            continue
        message = result.error_message.splitlines()[0] if result.error_message else ""
        if skip and rank in skip and skip[rank].error:
            # explained at the call it failed in; a later call that raised something else (the rank caught the
            # timeout and called again: "Application timeout caused pair closure") is said too (review46b M5)
            known, first = explain_error(message), explain_error(skip[rank].error)
            if known and (first is None or known[0] != first[0]):  # another kind of failure than the first
                then.setdefault(_error_text(run, message, of=set(ranks)), []).append(rank)
            continue
        if explain_error(message):
            by_text.setdefault(_error_text(run, message, of=set(ranks)), []).append(rank)
    return [f"{rank_list(rs)} raised: {text}" for text, rs in by_text.items()] + [
        f"then, at a later call, {rank_list(rs)} raised: {text}" for text, rs in then.items()
    ]


def failed_by_itself(result) -> bool:
    """A rank that failed by itself (its own exception, exit or signal), not as a consequence of a peer."""
    if result.status in (EXITED, KILLED, SETUP_FAILED):
        return True
    if result.status != RAISED:
        return False
    known = explain_error(result.error_message)
    return known is None or known[0] not in _SECONDARY


def crashed(run: Run, ranks) -> list[int]:
    """Those of ``ranks`` that failed by themselves; when no rank of the run did, those that ended without a
    report (torchrun: a machine that died, its agent and ranks with it, attack24 a04), since then nothing else
    can have stopped them. A rank its agent stopped because a local rank failed ends without a report too: the
    rank that failed is the cause then."""
    own = [r for r in ranks if failed_by_itself(run[r])]
    if own or any(failed_by_itself(result) for result in run.ranks):
        return own
    return [r for r in ranks if run[r].status == LOST]


def _clip(text: str, limit: int = 110) -> str:
    text = tidy(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Split:
    """The first position of the default group's sequence where torch's flight records disagree."""

    position: int
    at: dict[int, FlightEntry]  # the ranks that made a collective there
    absent: list[int]  # the ranks whose record has none there

    @property
    def from_torch(self) -> list[FlightEntry]:
        return [e for e in self.at.values() if e.issuer]


@dataclass
class Facts:
    """What the rules decide from, computed once per run."""

    run: Run
    calls: dict[int, list[Event]]
    first_diff: int | None = None  # first learner call number where the ranks' calls differ
    #: every rank finished, but some rank's record was cut in the middle (too many events to keep): its calls'
    #: positions after the cut are unknown, so calls are not compared position by position (attack11 a07, a20)
    cut: bool = False
    #: a cut run whose calls carry their positions in the group (``Event.pos``): how many collectives each rank
    #: made when every rank made as many and the calls every rank kept agree position by position, else None
    cut_count: int | None = None
    cut_diff: str = ""  # a cut run: the first position every rank kept where their calls differ, in words
    mispaired: int | None = None
    at_k: dict[int, Event] = field(default_factory=dict)
    missing: list[int] = field(default_factory=list)
    flights: dict[int, Flight] = field(default_factory=dict)
    split: _Split | None = None
    shapes: list[str] = field(default_factory=list)  # evidence of different sizes / dtypes at one position
    shape_at: str = ""  # which collective that was, and where
    shape_what: str = "tensors of different sizes or dtypes"  # or "lists of different lengths"
    #: the learner's call number (1-based) of that collective, when it is one of the recorded calls (not only
    #: torch's flight record), and whether the ranks made it from different lines (their whole chains)
    shape_k: int | None = None
    shape_crossed: bool = False
    aborted: dict[int, str] = field(default_factory=dict)  # ranks gloo aborted, and its message
    evidence: list[str] = field(default_factory=list)  # shared opening evidence (mis-pairing)

    @property
    def number(self) -> int | None:
        """The number to print for call #k: ``first_diff``, or the calls' own number (``Event.seq``) where some
        rank's record was cut in the middle, so that the position among the calls kept is not the call's number
        (attack27 a10: "call #4997" for the 8,501st barrier)."""
        if self.first_diff and any(d.cuts_order for d in self.run.events_dropped.values()):
            seqs = {e.seq for e in self.at_k.values()}
            if len(seqs) == 1 and isinstance(seq := next(iter(seqs)), int) and seq > 0:
                return seq
        if self.first_diff and self.at_k:
            # the number the ledger gives the call (calls.call_numbers): a new_group before it takes no place in the
            # group's sequence (review78d D1: "barrier #3" for the ledger's row 1); the collectives' own, where some
            # ranks made a new_group there and others a collective
            k = self.first_diff
            mine = {r: call_numbers(self.calls[r][:k])[-1] for r in self.at_k if len(self.calls.get(r, [])) >= k}
            ops = [r for r in mine if self.at_k[r].name not in GROUP_MAKERS] or list(mine)
            numbers = {mine[r] for r in ops}
            if len(numbers) == 1:
                return numbers.pop()
        return self.first_diff

    @property
    def failed(self) -> list[int]:
        """The ranks that did not finish, of those whose record was read (of the others nothing is known)."""
        return [r.rank for r in self.run.ranks if not r.ok and r.recorded]


def facts(run: Run) -> Facts:
    calls = collectives(run)
    # spans alone dropped from the middle of a record (attack15 a01) leave every call and access: not a cut
    cut_any = any(d.cuts_order for d in run.events_dropped.values())
    cut = cut_any and all(r.ok for r in run.ranks)
    # a run that did not finish, its records cut: calls are compared by their own numbers where they carry them
    # (review56 M1: kept lines are as many on every rank, so a rank one call ahead was compared position by
    # position with calls it made earlier: "could not be explained", or a false mis-pairing at the end)
    by_number = _divergence_by_number(calls) if cut_any and not cut else None
    f = Facts(run, calls, None if cut or by_number else _first_divergence(calls), cut=cut)
    f.mispaired = None if cut or cut_any else _mispaired(calls, f.first_diff)
    if cut:
        f.cut_count, f.cut_diff = _cut_comparison(calls)
    if by_number is not None:
        f.first_diff, f.at_k = by_number
        f.missing = sorted(set(calls) - set(f.at_k))
    elif f.first_diff:
        f.at_k = {r: c[f.first_diff - 1] for r, c in calls.items() if len(c) >= f.first_diff}
        f.missing = sorted(set(calls) - set(f.at_k))
    if f.mispaired:
        f.evidence = _mispairing_evidence(calls, f.mispaired)
    f.flights = flights(run)
    f.split = _flight_split(f.flights)
    f.shapes, f.shape_at, what, f.shape_k = _shape_mismatches(calls, f.flights)
    f.shape_what = what or f.shape_what
    if f.shape_k is not None:
        f.shape_crossed = len({_chain_key(c[f.shape_k - 1]) for c in calls.values()}) > 1
    f.aborted = _gloo_aborts(run)
    return f


#: What gloo writes to a rank's stderr as it aborts the process (``std::terminate`` on an exception in its
#: own thread): the exception's type, then its message after ``what():``.
_GLOO_ABORT = re.compile(r"terminate called after throwing an instance of 'gloo::\w+'\s*\n\s*what\(\):\s*(.+)")


def _gloo_aborts(run: Run) -> dict[int, str]:
    """The ranks killed by a signal whose stderr holds gloo's last words, and those words (tidied): gloo
    aborts a process when data it receives does not fit what it expected (``Received data size doesn't match
    expected size``), so the exception never reaches Python."""
    found = {}
    for result in run.ranks:
        if result.status == KILLED and result.stderr:
            match = _GLOO_ABORT.search(result.stderr)
            if match:
                found[result.rank] = tidy(match.group(1)).strip()
    return found


def _flight_split(found: dict[int, Flight]) -> _Split | None:
    """Compare the ranks' flight records by sequence id (not by count: the buffer keeps the last 2,000)."""
    if len(found) < 2:
        return None
    by_rank = {r: {e.seq: e for e in fl if not e.p2p and e.group == "0" and e.seq} for r, fl in found.items()}
    full = [r for r, fl in found.items() if len(fl) >= 2000]
    low = max((min(by_rank[r], default=1) for r in full), default=1)
    high = max((max(s, default=0) for s in by_rank.values()), default=0)
    for position in range(low, high + 1):
        at = {r: s[position] for r, s in by_rank.items() if position in s}
        absent = sorted(set(by_rank) - set(at))
        # a position no rank's record lists is a gap in torch's numbering, not a split: gloo's
        # monitored_barrier takes two sequence numbers and leaves no flight-recorder entry
        if (absent and at) or len({e.op for e in at.values()}) > 1:
            return _Split(position, at, absent)
    return None


def _counts(sizes, dtypes) -> str:
    """What the ranks of a collective must agree on: each tensor's number of elements and dtype. The backend
    moves flat buffers, so a 2×3 tensor broadcast into a flat 6-element one on another rank arrives whole
    (attack13 a09: that was diagnosed as wrong results)."""
    try:
        return repr(([math.prod(s) for s in sizes or ()], list(dtypes or ())))
    except (TypeError, ValueError, OverflowError):  # a record's sizes that are not numbers: compared as written
        return repr((sizes, dtypes))


def _shape_text(sizes, dtypes) -> str:
    shapes = ", ".join("×".join(map(str, s)) or "scalar" for s in sizes or ())
    return f"{shapes} ({', '.join(dict.fromkeys(d.lower() for d in dtypes or ()))})" if shapes else "no tensors"


def _objects_text(n: int) -> str:
    return f"{n} object{'s' if n != 1 else ''}"


def _sides(at: dict[int, Event]) -> str:
    """'a.py:37' when every rank made the call from one line, else each line with its ranks:
    "rank 0's at a.py:35 and rank 1's at a.py:40"."""
    by_place: dict[str, list[int]] = {}
    for rank, event in sorted(at.items()):
        by_place.setdefault(_place(event), []).append(rank)
    if len(by_place) == 1:
        return next(iter(by_place))
    return " and ".join(f"{rank_list(rs)}'s at {place}" for place, rs in by_place.items())


def _numel(shape: list[int]) -> int:
    return math.prod(shape)


def _blocks(name: str, at: dict[int, Event], members: list[int]) -> dict[tuple[int, int], tuple[int, int]] | None:
    """For an all-to-all every member made at one position: (sender, receiver) -> (elements the sender's block
    for the receiver holds, elements the receiver expects from the sender), for the pairs that differ; None
    when the record cannot tell (sizes or splits not recorded, a size torch itself refuses)."""
    width = len(members)
    if set(at) != set(members) or width < 2:
        return None
    send: dict[int, list[int]] = {}
    expect: dict[int, list[int]] = {}
    for rank, e in at.items():
        sizes = e.sizes
        if ops.BLOCKS[name] == ("lists",):
            if sizes is None or len(sizes) != 2 * width:  # the recorder keeps 8 tensors: 4 ranks at most
                return None
            expect[rank], send[rank] = [_numel(s) for s in sizes[:width]], [_numel(s) for s in sizes[width:]]
            continue
        if sizes is None or len(sizes) != 2 or e.splits is None or not all(sizes):
            return None
        for shape, split, into in ((sizes[0], e.splits[0], expect), (sizes[1], e.splits[1], send)):
            row = _numel(shape[1:])
            if split is None:  # gloo cuts the elements, not the rows, into equal blocks (measured on 2.13)
                if _numel(shape) % width:
                    return None
                into[rank] = [_numel(shape) // width] * width
            elif len(split) == width:
                into[rank] = [n * row for n in split]
            else:
                return None
    differ = {}
    for i, sender in enumerate(members):
        for j, receiver in enumerate(members):
            if send[sender][j] != expect[receiver][i]:
                differ[(sender, receiver)] = (send[sender][j], expect[receiver][i])
    return differ


def _made_at(name: str, k: int, at: dict[int, Event]) -> str:
    """'all_reduce #3 at a.py:37', or, when the ranks made it from different lines, 'all_reduce #3, made from
    different lines: rank 0's at a.py:35 and rank 1's at a.py:40'."""
    sides = _sides(at)
    if len({_place(e) for e in at.values()}) > 1:
        return f"{name} #{k}, made from different lines: {sides}"
    return f"{name} #{k} at {sides}"


def _shape_mismatches(
    calls: dict[int, list[Event]], found: dict[int, Flight]
) -> tuple[list[str], str, str, int | None]:
    """Evidence of the first collective the ranks made together with different sizes or dtypes, or with
    object lists of different lengths where the ops table requires the same (``broadcast_object_list``);
    which call that was, and where; what differed; and its number among the learner's calls (None when only
    torch's flight record shows it)."""
    depth = min((len(c) for c in calls.values()), default=0)
    for i in range(depth):
        at = {r: c[i] for r, c in calls.items()}
        names = {e.name for e in at.values()}
        if len(names) > 1:
            break
        if names <= ops.SAME_LENGTH and all(e.objects is not None for e in at.values()):
            if len({e.objects for e in at.values()}) > 1:
                e0 = next(iter(at.values()))
                return (
                    [
                        f"{e0.name} #{i + 1} got lists of different lengths: "
                        + "; ".join(
                            f"rank {r}: {_objects_text(e.objects)}, at {where_text(e)}" for r, e in sorted(at.items())
                        )
                    ],
                    f"{_made_at(e0.name, i + 1, at)}: "
                    + ", ".join(f"rank {r} passed {_objects_text(e.objects)}" for r, e in sorted(at.items())),
                    "lists of objects of different lengths",
                    i + 1,
                )
        e0 = next(iter(at.values()))
        if e0.name in ops.BLOCKS and names == {e0.name} and len({e.group for e in at.values()}) == 1:
            members = list(e0.group_ranks) if e0.group is not None and e0.group_ranks else sorted(calls)
            differ = _blocks(e0.name, at, members)
            if differ:
                pairs = sorted(differ.items())
                shown = "; ".join(
                    f"rank {s}'s block for rank {r} holds {sent} elements, rank {r} expects {expected} from it"
                    for (s, r), (sent, expected) in pairs[:4]
                ) + (f"; {len(pairs) - 4} more pairs" if len(pairs) > 4 else "")
                given = "; ".join(f"rank {r}: {_shape_text(e.sizes, e.dtypes)}" for r, e in sorted(at.items()))
                return (
                    [f"{e0.name} #{i + 1} at {where_text(e0)}: the blocks do not fit: {shown} ({given})"],
                    _made_at(e0.name, i + 1, at),
                    "all-to-all blocks of sizes the receivers do not expect",
                    i + 1,
                )
        if names <= ops.SAME_SHAPE and all(e.sizes is not None for e in at.values()):
            shapes = {_counts(e.sizes, e.dtypes) for e in at.values()}
            if len(shapes) > 1:
                e0 = next(iter(at.values()))
                if len({_place(e) for e in at.values()}) > 1:  # round 44's SGLang item: rank 1's line went unnamed
                    given = f"{e0.name} #{i + 1} came from different lines and got different tensors: " + "; ".join(
                        f"rank {r}: {_shape_text(e.sizes, e.dtypes)}, at {where_text(e)}" for r, e in sorted(at.items())
                    )
                else:
                    given = f"{e0.name} #{i + 1} at {where_text(e0)} got different tensors: " + "; ".join(
                        f"rank {r}: {_shape_text(e.sizes, e.dtypes)}" for r, e in sorted(at.items())
                    )
                return [given], _made_at(e0.name, i + 1, at), "", i + 1
    split = _flight_split(found)
    by_rank = {r: {e.seq: e for e in fl if not e.p2p and e.group == "0"} for r, fl in found.items()}
    common = sorted(set.intersection(*(set(s) for s in by_rank.values()))) if len(by_rank) > 1 else []
    for position in common:
        if split and position >= split.position:
            break
        at = {r: s[position] for r, s in by_rank.items()}
        entry_ops = {e.op for e in at.values()}
        if len(entry_ops) == 1 and entry_ops <= ops.IN_PLACE and all(e.sizes for e in at.values()):
            if len({_counts(e.sizes, e.dtypes) for e in at.values()}) > 1:
                first = at[min(at)]
                source = first.call or first
                return (
                    [
                        f"collective #{position} of the group ({next(iter(entry_ops))}) got different tensors: "
                        + "; ".join(
                            f"rank {r}: {_shape_text(e.sizes, e.dtypes)}, from {_entry_origin(e)}"
                            for r, e in sorted(at.items())
                        )
                    ],
                    f"{first.issuer or (first.call.name if first.call else first.op)}, collective #{position}, "
                    f"at {_place(source)}",
                    "",
                    None,
                )
    return [], "", "", None


def _entry_where(entry: FlightEntry) -> str:
    return entry.where or (str(Site(entry.file, entry.line, entry.func or "")) if entry.file else "an unknown line")


def _entry_origin(entry: FlightEntry) -> str:
    """'DDP backward's gradient all_reduce, reached from train.py:12: loss.backward()' or 'your broadcast at …'."""
    where = _entry_where(entry)
    if entry.call is not None:
        return f"{entry.call.name} at {entry.call.where or where}"
    if entry.issuer:
        return f"{entry.issuer}, reached from {where}" + called_from(chain_of(entry))
    return f"{entry.op} at {where}"


def _chain_block(call, mark: int | None = None) -> str:
    """The call's chain as traceback lines under an evidence line (for a chain of three or more frames),
    with the frame ``mark`` where the ranks' paths part pointed out."""
    return "".join("\n    " + line for line in traceback_lines(chain_of(call), mark))


def _called_at(call, mark: int | None = None) -> str:
    """'at a.py:12, in save: ..., called from a.py:40, in main: ...' for a call in the rank function or one
    helper; for a longer chain 'at a.py:12, through this chain (outermost first):' and the chain."""
    block = _chain_block(call, mark)
    if block:
        return f"at {_place(call)}, through this chain (outermost first):{block}"
    return f"at {where_text(call)}{called_from(chain_of(call))}"


def _chain_key(call) -> tuple:
    return tuple((s.file, s.line, s.func) for s in chain_of(call).frames)


def _missing_parting(f: Facts, event: Event) -> int | None:
    """Where the chain of ``event`` (a call only some ranks made) parts from the chains of the other ranks'
    last calls; None when one of them made no call at all (then the rank function's line is named)."""
    if any(not f.calls[r] for r in f.missing):
        return None
    return parting([chain_of(event)] + [chain_of(f.calls[r][-1]) for r in f.missing])


def _parting_of(calls: dict[int, Event]) -> int | None:
    """Where the chains of the ranks' calls at one position part (see :func:`barrierlab.chains.parting`)."""
    return parting(chain_of(e) for e in calls.values())


def _raised_at(result) -> str:
    """' at train.py:34, in build: ...' — the learner's line where a rank raised, from its traceback.
    A frame cloudpickle renamed is looked up in the files of the frames around it."""
    chain = _raised_chain(result)
    return f" at {chain.frames[-1]}" if chain.frames else ""


def _own_code_traceback(run: Run, rank: int) -> list[str]:
    """The evidence line holding the learner's whole chain down to where ``rank`` raised (or called sys.exit()),
    as a traceback, outermost first; none for a chain of one or two frames (the headline names those). A
    headline's "reached from a.py:112 through 1 more call" leaves out the frames between: round 44's capi item
    raised in a sort key (line 48) called from the listing it sorts (line 98, the bug), reached from line 112,
    and bl.run's text named no line of 98 while the CLI, which prints the rank's traceback, did."""
    lines = traceback_lines(_raised_chain(run[rank]))
    if not lines:
        return []
    return [
        f"rank {rank} {'raised' if run[rank].status == RAISED else 'exited'} in its own code:"
        + "".join("\n    " + line for line in lines)
    ]


def _raised_chain(result) -> Chain:
    """The learner's frames of a rank's traceback, outermost first, down to the innermost one (the line that
    raised, or called the library that did). A frame cloudpickle renamed is looked up in the files around it."""
    frames = [f for f in traceback_frames(result.traceback or "") if is_learners(f[0])]
    sites = []
    for file, line, func in frames:
        if func.startswith("<") and func != "<module>":
            continue
        if file.startswith("<"):
            file = next((f for f, _, _ in reversed(frames) if not f.startswith("<") and defines(f, func, line)), file)
        sites.append(Site(file, line, func))
    return Chain(tuple(sites))


FOLDER_ADVICE = (
    "Make the folder before any rank uses it: os.makedirs(path, exist_ok=True) on every rank, or one rank makes "
    "it and then every rank reaches a barrier before the first write into it. A sleep or a retry loop only "
    "makes the race rarer."
)
UNORDERED_FILE_ADVICE = (
    "Order the read after the write: the writer finishes the file, then every rank reaches the same barrier, and "
    "only then do the others read it. A sleep or a retry loop only makes the race rarer; run.races() lists every "
    "unordered pair of accesses of the run."
)
REMOVAL_ADVICE = (
    "Order the removal after every rank's use of the file: each rank finishes reading it (and closes it), then "
    "every rank reaches the same barrier, and only then does one rank remove it. A sleep or a retry loop only "
    "makes the race rarer; run.races() lists every unordered pair of accesses of the run."
)
#: A finished run whose races are a removal against other ranks' use of the file (review73c M2: the write->read
#: advice, hold the readers until the writer arrives, told the learner to hold the wrong rank).
RACE_REMOVAL_ADVICE = (
    "Hold the rank that removes the file until every other rank has used it: each rank finishes reading it "
    "(and closes it), then every rank reaches the same barrier (or a blocking all_reduce of a non-empty tensor "
    "on gloo), and only then does the removing rank remove it; a store key each reader sets after closing the "
    "file, which the remover waits for, does too. Holding the readers until the remover arrives does not order "
    "the removal after their reads. A sleep or a retry loop only makes the race rarer."
)
#: A finished run with file races shows this many of them in its evidence.
MAX_RACES_SHOWN = 3
RACE_ADVICE = (
    "Order each use of a file after the change it needs, with a call that holds the reading rank until the "
    "writer has arrived: a barrier every rank reaches after the write, a blocking all_reduce of a non-empty tensor on gloo, a store key "
    "the writer sets after closing the file, or send/recv. A sleep or a retry loop only makes the race rarer."
)


# --- the rules, in order: the first that returns a Diagnosis wins ----------------------------------------

Rule = Callable[[Facts], "Diagnosis | None"]


def _all_recorded(run: Run) -> str:
    """The subject of "... finished": "All 4 ranks", or, for a folder that holds some ranks only (one machine's,
    under torchrun), "Ranks 0 and 1, the ranks recorded here," (attack24 a03: "All 4 ranks finished" was said of a
    folder with two of them, in a job whose other two hung)."""
    recorded = [r.rank for r in run.ranks if r.recorded and not r.events_lost]
    if len(recorded) == len(run.ranks):
        return f"All {run.world_size} ranks"
    listed = rank_list(recorded)
    return f"{sentence_start(listed)}, the only {'rank' if len(recorded) == 1 else 'ranks'} recorded here,"


def _groups_made(run: Run) -> dict[int, list[Event]]:
    """Each rank's ``new_group`` calls of the default group (a locally synchronised one is recorded as its
    members' group, not among these)."""
    return {
        r.rank: [e for e in r.events if e.kind == "collective" and e.name == "new_group" and e.group is None]
        for r in run.ranks
    }


def _group_number_failure_evidence(f: Facts, number: int) -> list[str]:
    """:func:`_failure_evidence` for a run whose ranks' groups stopped matching at new_group #``number``: a rank
    whose group could not be set up (gloo's connect timeout, a store wait) is told why, the mismatch, not the
    generic network advice (review92d M5: "check MASTER_ADDR/MASTER_PORT ... GLOO_SOCKET_IFNAME" of a rank that
    waited under its group's number for peers that had made another group under it)."""

    def setting_up(r: int) -> bool:
        known = explain_error(f.run[r].error_message or "") if f.run[r].status == RAISED else None
        return known is not None and known[0] == "rendezvous"

    stuck = [r for r in f.failed if setting_up(r)]
    if not stuck:
        return _failure_evidence(f)
    evidence = [f"rank {r} {_how_it_ended(f.run[r], f.calls.get(r, []), f.flights.get(r))}" for r in f.failed]
    evidence += _abort_evidence(f) + _error_evidence(f.run, [r for r in f.failed if r not in stuck])
    many = len(stuck) > 1
    evidence.append(
        f"{rank_list(stuck)} raised: the group could not be set up: from new_group #{number} on, the ranks' groups "
        f"did not match (above), so {'each' if many else rank_list(stuck)} waited, under {'its' if many else 'the'} "
        "group's number, for members whose own new_group of that number was another group or never came: they "
        "never connected, and the cause is that mismatch, not the network (MASTER_ADDR/MASTER_PORT, "
        "GLOO_SOCKET_IFNAME)."
    )
    return evidence


def rule_new_group_members_differ(f: Facts) -> Diagnosis | None:
    """The k-th ``new_group`` call (of the default group) asked for different members on different ranks:
    torch requires every rank to make the same groups in the same order, members or not (new_group's
    docstring), so each rank built its own group under the same number and what followed is not defined (attack25
    a06, pytorch/pytorch#130102: each rank made only the subgroup it was in; of 12 runs, 4 finished, the others
    hung in new_group or failed in the subgroup's barrier). Tried before every other rule: a run that finished
    got there by chance."""
    run = f.run
    world = len(run.ranks)
    made = _groups_made(run)
    if len(made) < 2:
        return None
    for k in range(min(len(calls) for calls in made.values())):
        asked = {r: tuple(calls[k].made if calls[k].made is not None else range(world)) for r, calls in made.items()}
        if len(set(asked.values())) < 2:
            continue
        by_members: dict[tuple, list[int]] = {}
        for r, members in asked.items():
            by_members.setdefault(members, []).append(r)
        first = made[min(made)][k]
        sites = {where_text(calls[k]) for calls in made.values()}
        at = f" at {next(iter(sites))}" if len(sites) == 1 else ""
        told = " and ".join(
            f"{rank_list(ranks)} passed {list(members)}"
            for members, ranks in sorted(by_members.items(), key=lambda x: x[1])
        )
        ended = (
            " Every rank's function returned, but what followed is not defined: it finished only by chance, or"
            " because the ranks' own code caught the errors of their calls on these groups."  # review74c M2
            if not f.failed
            else f" What followed is not defined; here {rank_list(f.failed)} did not finish."
        )
        same_members = len({frozenset(members) for members in by_members}) == 1  # only the order differs
        # review65b M1: the lists differ because some ranks skipped a new_group the others made (under `if rank in
        # (0, 1)`), so their next one took its number: say that, not that a call was given different lists
        place = {r: _place(calls[k]) for r, calls in made.items()}
        skipped = sorted(
            r
            for r, calls in made.items()
            if any(len(o) > k + 1 and place[r] == _place(o[k + 1]) != _place(o[k]) for o in made.values())
        )
        makers = sorted(set(made) - set(skipped))
        if skipped and makers and len({place[r] for r in makers}) == 1:
            missed = made[makers[0]][k]
            return Diagnosis(
                "different-group-members",
                f"{rank_list(skipped)} never made the new_group at {_place(missed)} ({list(asked[makers[0]])}) that "
                f"{rank_list(makers)} made, so {rank_list(skipped)}'s next new_group, at {place[skipped[0]]} "
                f"({list(asked[skipped[0]])}), took its number: new_group #{k + 1}. Every rank must make the same "
                "groups, in the same order, members or not (new_group's docstring): torch numbers groups by the "
                f"rank's count of new_group calls, so from here on the ranks' groups do not match.{ended}",
                [
                    f"rank {r}: new_group #{k + 1} at {where_text(calls[k])}: ranks={list(asked[r])}"
                    for r, calls in made.items()
                ]
                + (_group_number_failure_evidence(f, k + 1) if f.failed else []),
                "Make the group on every rank, outside the condition, and use it under the condition: "
                f"`g = dist.new_group({list(asked[makers[0]])})` on every rank.",
                ranks=skipped,
                site=_site(missed),
            )
        headline = (
            f"new_group #{k + 1}{at} was given different ranks lists on different ranks: {told}. Every rank must "
            "make the same groups, in the same order, members or not (new_group's docstring): each call makes one "
            "group, and ranks that pass different lists build different groups under the same number"
            + (
                " (with sort_ranks=False the order of the list is the order of the group's ranks, so the same "
                "members in another order are another group)"
                if same_members
                else ""
            )
            + f".{ended}"
        )
        evidence = [
            f"rank {r}: new_group #{k + 1} at {where_text(calls[k])}: ranks={list(asked[r])}"
            for r, calls in made.items()
        ]
        if f.failed:
            evidence += _group_number_failure_evidence(f, k + 1)
        groups = sorted(by_members, key=lambda members: by_members[members])
        shown = ", ".join(str(list(m)) for m in groups)
        disjoint = sum(len(m) for m in groups) == len(set().union(*groups))
        if same_members:
            advice = (
                "Pass the same list, in the same order, on every rank (or leave sort_ranks at True): "
                f"`dist.new_group({list(groups[0])})` everywhere."
            )
        else:
            enumeration = (
                f"`mine, _ = dist.new_subgroups_by_enumeration([{shown}])`, or " if disjoint else ""
            )  # torch refuses lists that share a rank (attack27 a02)
            advice = (
                f"Make every group on every rank and keep the one the rank is in: {enumeration}`for members in "
                f"([{shown}]): g = dist.new_group(members)` on every rank, keeping g where the rank is a member. Only "
                "with new_group(members, use_local_synchronization=True) may each rank call it for its own group "
                "alone (torch's docstring: non-member ranks don't need to call into API)."
            )
        return Diagnosis("different-group-members", headline, evidence, advice, ranks=sorted(made), site=_site(first))
    return None


def rule_new_group_skipped(f: Facts) -> Diagnosis | None:
    """Some ranks finished without making a ``new_group`` (of the default group) that the others made, the
    groups made before it agreeing (else :func:`rule_new_group_members_differ`). On gloo ``new_group`` takes no
    place in the group's sequence, so the calls after it still pair; compared position by position, the calls
    were said to be a barrier meeting a new_group that would wait, of a run that finished (review64b C1). Told as
    :func:`rule_only_some_ranks` tells a group made by only some ranks."""
    run = f.run
    made = {r: calls for r, calls in _groups_made(run).items() if run[r].recorded}
    counts = {len(calls) for calls in made.values()}
    if len(made) < 2 or len(counts) < 2:
        return None
    fewest = min(counts)
    skipped = sorted(r for r, calls in made.items() if len(calls) == fewest)
    if not all(run[r].ok for r in skipped):
        return None  # a rank that stopped early did not skip the call: other rules say why it stopped
    makers = sorted(r for r, calls in made.items() if len(calls) > fewest)
    first = made[makers[0]][fewest]
    places = {where_text(made[r][fewest]) for r in makers}
    at = f" at {where_text(first)}" if len(places) == 1 else ""
    evidence = [
        f"{rank_list([r])}: {len(calls)} new_group call{'s' if len(calls) != 1 else ''}"
        + (f", the last at {where_text(calls[-1])}" if calls else "")
        for r, calls in sorted(made.items())
    ]
    if f.failed:
        evidence += _failure_evidence(f)
    return _group_made_by_some(
        f, f"{rank_list(makers)} called new_group #{fewest + 1}{at}", skipped, makers, first, evidence
    )


def _count_of(n: int, what: str) -> str:
    """ "1 call", "2 calls"."""
    return f"{n} {what}{'s' if n != 1 else ''}"


def _calls_made(f: Facts, depth: int) -> str:
    """How many collective calls the ranks of a finished run made, by group: "after the same 3 collective calls
    in the same order." when there were no groups; else the default group's new_group calls (which the ledger
    does not list) apart from its other calls, and each subgroup's members' calls on it (review69b C1: ranks 0
    and 1 made one barrier on their subgroup and ranks 2 and 3 none, told as "the same 1 collective call")."""
    made = {r: len(v) for r, v in _groups_made(f.run).items() if r in f.calls}
    subgroups = list(subgroup_calls(f.run).values())
    if not subgroups and not any(made.values()):
        return f"after the same {depth} collective call{'s' if depth != 1 else ''} in the same order."
    parts = []
    most = max(made.values(), default=0)  # (no rank's calls may be readable: their records removed, attack28 a12)
    other = {len([e for e in calls if e.name != "new_group"]) for calls in f.calls.values()}
    groups = f"{most} new_group call{'s' if most != 1 else ''}"
    made_text = f"the same {groups}" if len(set(made.values())) <= 1 else f"up to {groups}"
    if other == {0}:
        parts.append(f"every rank made {made_text} and no other collective call on the default group")
    else:
        n = max(other, default=0)
        parts.append(
            f"every rank made the same {n} collective call{'s' if n != 1 else ''} in the same order on the default "
            + (f"group and {made_text}" if most else "group")
        )
    for members, mine in subgroups:
        ranks = sorted(set(members) | set(mine))
        by_count: dict[int, list[int]] = {}
        for r in ranks:
            by_count.setdefault(len(mine.get(r, [])), []).append(r)
        told = ", ".join(
            f"{rank_list(rs)} made {k} collective call{'s' if k != 1 else ''}{' each' if len(rs) > 1 else ''}"
            for k, rs in sorted(by_count.items(), reverse=True)
        )
        parts.append(f"on the subgroup of ranks {list(members) if members else ranks}, {told}")
    return "; ".join(parts) + "."


def _listed(named: list[str], total: int) -> str:
    """'a', 'a and b', 'a, b and c', or 'a, b, c and 2 more' of ``total`` things, the first ``named``."""
    if len(named) == 1:
        return named[0]
    more = total - len(named)
    return ", ".join(named[:-1]) + (f", {named[-1]} and {more} more" if more else f" and {named[-1]}")


def rule_ok(f: Facts) -> Diagnosis | None:
    """Every rank finished, both records agree across ranks, and no collective got different tensors."""
    if f.failed or f.first_diff or f.split or f.shapes:
        return None
    mixed = _different_reduce_ops(f)  # finished, but with a result no rank asked for
    if mixed is not None:
        return mixed
    run = f.run
    everyone = _all_recorded(run)
    depth = max((len(c) for c in f.calls.values()), default=0)
    made = _calls_made(f, depth)
    headline = f"{everyone} finished{', ' if made.startswith('after') else ': '}{made}"
    if f.cut and f.cut_count is not None:
        headline = (
            f"{everyone} finished, after the same {f.cut_count} collective calls. Their records "
            "were cut in the middle (the first and last events of each rank are kept): the calls every rank kept "
            "agree position by position; file accesses are not checked for races."
        )
    elif f.cut:
        headline = (
            f"{everyone} finished. Their records were cut in the middle (the first and last events "
            "of each rank are kept), so their calls are not compared position by position, nor their file "
            "accesses checked for races."
        )
    evidence = [] if not f.cut else [run.dropped_note()] + ([f.cut_diff] if f.cut_diff else [])
    if len(f.flights) == sum(r.recorded for r in run.ranks) and f.flights:
        entries = [e for e in next(iter(f.flights.values())) if not e.p2p and e.group == "0"]
        issued = [e.issuer for e in entries if e.issuer]
        if issued:
            who = ", ".join(dict.fromkeys(issuer_word(i) for i in issued))
            issued_by = (
                "torch or your libraries issued" if any(library_of(i) for i in issued) else "torch issued itself"
            )
            headline = (
                f"{everyone} finished, after the same {len(entries)} collectives in the same "
                f"order: {len(entries) - len(issued)} from your own torch.distributed calls and "
                f"{len(issued)} that {issued_by} ({who})."
            )
        evidence.append("torch's flight recorder agrees, position by position in the group's sequence")
    else:
        unread = [r.rank for r in run.ranks if r.rank not in f.flights and r.recorded]
        evidence += (
            []
            if not unread
            else [
                f"barrierlab could not read torch's flight record on {rank_list(unread)} (torch keeps one by "
                f"default; the rank ended before it was copied, or the dump failed); the collectives your code "
                f"called are compared"
            ]
        )
    hung = [r.rank for r in run.ranks if r.teardown_hung]
    if hung:
        evidence.append(
            f"{rank_list(hung)} returned, then hung in torch's teardown (destroy_process_group / "
            f"object destruction) and {'was' if len(hung) == 1 else 'were'} ended by the launcher: that "
            f"is torch's, not a deadlock in your code, and the returned values are kept"
        )
    crossed = [] if f.cut else _crossed_data_calls(f.calls, f.flights)
    if crossed:  # review61b M1: rank 0's all_reduce(loss) summed with the others' all_reduce(acc)
        first = f.calls[min(f.calls)]
        # every data call crossed is named here, not the first only (review90d M3: a swap's second call was told
        # as the harmless kind of pairing, main_process_first's)
        listed = _listed([f"{first[k - 1].name} #{k}" for k in crossed[:3]], len(crossed))
        swap = _swapped_pair(f.calls, crossed)
        if swap is not None:
            (i, j), (one, other) = swap
            headline = (
                f"{everyone} finished, after {depth} collective call{'s' if depth != 1 else ''} of the same ops "
                f"in the same order, but {rank_list(one)} and {rank_list(other)} made {first[i - 1].name} #{i} and "
                f"#{j} from the same two lines in opposite orders, and gloo combined them by position: both calls "
                f"combined the wrong tensors on every rank, each mixing one line's values from {rank_list(one)} "
                f"with the other line's from {rank_list(other)}, silently."
            )
        else:
            headline = (
                f"{everyone} finished, after {depth} collective call{'s' if depth != 1 else ''} of the same ops "
                f"in the same order, but {listed} came from different lines on different ranks, and gloo "
                f"combined {'it' if len(crossed) == 1 else 'each'} by position: check that they are the same "
                "values on every rank (two calls made in another order on some ranks combine one call's values "
                "from some ranks with the other call's from the rest, silently, in both calls)."
            )
        evidence = [line for k in crossed[:3] for line in _mispairing_evidence(f.calls, k)] + evidence
    paired = [] if f.cut else _paired_across_lines(f, crossed)
    if paired:  # review86d M1: an extra barrier on rank 0, evened out by one more on the others, said nothing
        first = min(f.calls)
        listed = _listed(
            [f"{f.calls[first][k - 1].name} #{call_numbers(f.calls[first][:k])[-1]}" for k in paired[:3]], len(paired)
        )
        headline += (
            f" {sentence_start(listed)} paired calls made from different lines on different ranks: collectives "
            "pair by their position in the group's sequence, not by their line. That is how main_process_first's "
            "two barriers meet; an extra call on some ranks that one more on the others evened out later pairs "
            "this way too, shifting every call in between by one: check that the calls that met were meant to."
        )
        evidence = [line for k in paired[:3] for line in _mispairing_evidence(f.calls, k)] + evidence
    caught = _caught_errors(f)
    if caught is not None:  # review80d M1: every rank finished, but a collective failed and its error was caught
        # (or review86d C1: a wait gave up on its own timeout, which is no failure of the call)
        headline += " " + caught[0]
        evidence = caught[1] + evidence
    hazards = call_hazards(run)
    if hazards:  # finished, but with a result nothing made right (review48b M1: unwaited async, said only on failure)
        made = "a call" if len(hazards) == 1 else f"{len(hazards)} calls"
        what = "whose ordering" if all("barrier(async_op=True)" in h for h in hazards) else "whose result"
        if all(h.startswith(READ_BEFORE_WAIT) for h in hazards):  # review71b M3: the source shows it, not the record
            headline += (
                f" But in the source, {'a line reads' if made == 'a call' else 'lines read'} the tensor of an "
                "async_op=True collective before its work.wait(): what was read depended on timing."
            )
        elif all(P2P_NEVER_WAITED in h for h in hazards):
            headline += (
                f" But the record shows {'an isend or irecv' if made == 'a call' else 'isends or irecvs'} never "
                "waited for: what was sent or received got there by timing alone (on gloo a message whose isend "
                "handle is dropped before the receiver posts its recv is lost)."
            )
        elif all("not in (new_group" in h for h in hazards):
            them = "it" if made == "a call" else "them"
            headline += (
                f" But the record shows {made} naming a group the calling rank was not in: torch skipped {them}."
            )
        else:
            if any(h.startswith(READ_BEFORE_WAIT) for h in hazards):
                headline += f" But the record and the source show {made} {what} cannot be trusted."
            else:
                headline += f" But the record shows {made} {what} cannot be trusted, whatever the timing."
        evidence = hazards + evidence
    races = ordering.races(run) if not f.cut else []
    undecided = getattr(races, "undecided", 0)
    if undecided:  # attack17 a11: a DDP all_reduce older than the flight record may order them
        evidence.append(
            f"{undecided} pair{'s' if undecided > 1 else ''} of file accesses {'were' if undecided > 1 else 'was'} "
            "not judged: they came before the oldest collective torch's flight record kept (its last 2,000 by "
            "default; raise TORCH_FR_BUFFER_SIZE), and a DDP gradient all_reduce there, which barrierlab sees only "
            "in that record, may order them"
        )
    if races:  # the run succeeded, but by timing: say so (the ordering model, on gloo)
        count = races.count_text() if isinstance(races, ordering.Races) else str(len(races))
        what, advice = _race_words(run, races)
        headline += f" But {count} pair{'s' if len(races) > 1 else ''} of file accesses raced: {what}."
        evidence = _race_lines(races) + evidence
        evidence += reused_store_waits(run)  # a store barrier that held nothing may be why they raced
        if caught is not None and caught[2]:
            return Diagnosis("caught-errors", headline, evidence, f"{caught[2]} {advice}", ranks=caught[3])
        return Diagnosis("ok", headline, evidence, advice, ranks=sorted({races[0].first.rank, races[0].second.rank}))
    if caught is not None and caught[2]:  # (no advice: only waits that gave up on their own timeout, then returned)
        return Diagnosis("caught-errors", headline, evidence, caught[2], ranks=caught[3])
    return Diagnosis("ok", headline, evidence)


def _race_words(run: Run, races) -> tuple[str, str]:
    """What the run's ``races`` (:func:`ordering.races`, none of them a folder made late) say, as a clause after
    "N pairs of file accesses raced: ", and the advice for them."""
    removals = sum(1 for race in races if "remove" in (race.first.how, race.second.how))
    every_rank_removes = _removed_by_every_rank_at_one_line(run, races)
    if every_rank_removes is not None:  # corpus round 42: each rank's clean-up rmtree of one temporary folder
        what = (
            f"every rank removed the same files at {every_rank_removes} (a clean-up each rank runs), and the "
            "ranks' removals were ordered against nothing of each other's, so which rank removed which entry, "
            "and whether the others still found it there, depended on timing (harmless only where every "
            "removal ignores what is already gone)"
        )
        advice = RACE_SHARED_REMOVAL_ADVICE
    elif removals == len(races):  # review73c M2: a removal must come after the reads, not the reads after it
        what = (
            "nothing ordered a rank's removal of a file after the other ranks' use of it, so whether each "
            "rank still found it there depended on timing"
        )
        advice = RACE_REMOVAL_ADVICE
    elif removals:
        what = (
            "nothing ordered a rank's use of a file after another rank's change of it, nor a removal after "
            "the other ranks' use, so what each rank found there depended on timing (the record cannot tell "
            "whether what they read was right: check it)"
        )
        advice = f"{RACE_ADVICE} For a removal it is the other way round: {RACE_REMOVAL_ADVICE}"
    else:
        what = (
            "nothing ordered a rank's use of a file after another rank's change of it, so what each rank "
            "found there depended on timing (the record cannot tell whether what they read was right: check it)"
        )
        advice = RACE_ADVICE
    return what, advice


def _race_lines(races) -> list[str]:
    """The first :data:`MAX_RACES_SHOWN` of ``races``, each as a line of evidence, and how many more."""
    lines = [str(race) for race in races[:MAX_RACES_SHOWN]]
    if len(races) > MAX_RACES_SHOWN:
        lines.append(
            f"and more: run.races() lists the first {len(races)}"
            if getattr(races, "cut", False)
            else f"and {len(races) - MAX_RACES_SHOWN} more: run.races() lists them all"
        )
    return lines


RACE_SHARED_REMOVAL_ADVICE = (
    "Remove what the ranks share on one rank only (`if dist.get_rank() == 0:`), after a barrier every rank reaches "
    "once it is done with it; the other ranks leave it alone."
)


def _removed_by_every_rank_at_one_line(run: Run, races) -> str | None:
    """The place (``file:line``) of a removal where every access of every race was made, by two ranks or more:
    several ranks ran one clean-up (``shutil.rmtree`` of the same folder), each racing the others' (corpus round
    42's correct anemoi-core item). None otherwise."""
    sites = {(a.event.file, a.event.line) for race in races for a in (race.first, race.second)}
    if len(sites) != 1:
        return None
    [site] = sites
    ranks = {a.rank for race in races for a in (race.first, race.second)}
    removers = {
        r.rank
        for r in run.ranks
        if any(e.kind == "file" and e.name == "remove" and (e.file, e.line) == site for e in r.events)
    }
    if len(ranks) < 2 or not removers:  # a rank whose clean-up found everything gone already removed nothing
        return None
    return _place(races[0].first.event)


#: What c10d's ``Work::wait(timeout)`` raises when its own timeout runs out before the work completed: only the
#: waiting stopped, and the collective goes on (notebook 00 §4; review86d C1: told as a collective that failed).
WAIT_GAVE_UP = "Operation timed out!"


def _caught_errors(f: Facts) -> tuple[str, list[str], str, list[int]] | None:
    """On a run whose ranks all finished: the collective calls that failed all the same, their errors caught by
    the learner's code, which went on (review80d M1: a barrier that timed out on every rank, each rank's
    ``except`` swallowing it, was "All 4 ranks finished, after the same 1 collective call in the same order"), and
    the waits of async calls that gave up on their own ``timeout=`` (:data:`WAIT_GAVE_UP`), which are no failure of
    the call: (the headline's sentence, evidence, advice (empty when the only errors were such waits, each followed
    by a wait of the call that returned), the ranks), or None when no call failed and no wait gave up."""
    run = f.run
    failed: dict[tuple, dict[int, tuple[Event, str]]] = {}
    # a wait that gave up: then a later wait of the call returned (resumed), or none came (went_on)
    resumed: dict[tuple, dict[int, tuple[Event, Event]]] = {}
    went_on: dict[tuple, dict[int, Event]] = {}
    for res in run.ranks:
        by_id = {e.id: e for e in res.events if e.is_async}
        gave_up: dict[int, Event] = {}  # async call id -> its first wait that gave up, no later wait seen yet
        for event in res.events:
            # the learner's code got the error: a call's own, or the wait of an async call (an async call never
            # waited for may fail as the ranks end, its error reaching no code: call_hazards says that one)
            if event.kind == "wait" and event.of in by_id and event.of in gave_up and not event.error:
                if event.end is not None and not by_id[event.of].in_child_process:
                    e = by_id[event.of]
                    key = (e.name, _number_in_group(f, res.rank, e), e.group, _place(e))
                    resumed.setdefault(key, {})[res.rank] = (gave_up.pop(event.of), event)
                continue
            if event.kind == "wait" and event.error and event.of in by_id:
                e, error = by_id[event.of], event.error
                if WAIT_GAVE_UP in error:
                    gave_up.setdefault(event.of, event)
                    continue
                gave_up.pop(event.of, None)  # a later wait that failed: the call's failure, said below
            elif event.is_collective and event.error and not event.is_async:
                e, error = event, event.error
            else:
                continue
            if e.in_child_process:
                continue
            failed.setdefault((e.name, _number_in_group(f, res.rank, e), e.group, _place(e)), {})[res.rank] = (
                event,
                error,
            )
        for of, wait in gave_up.items():
            e = by_id[of]
            if not e.in_child_process:
                went_on.setdefault((e.name, _number_in_group(f, res.rank, e), e.group, _place(e)), {})[res.rank] = wait
    if not failed and not resumed and not went_on:
        return None
    ranks = sorted({r for at in (*failed.values(), *went_on.values()) for r in at})
    sentences, evidence, advice = [], [], []
    for key in _left_by_timeout(f, failed):  # a timeout the program uses to learn that a rank has left
        at = failed.pop(key)
        name, k, group, place = key
        rs = sorted(at)
        event = next(iter(at.values()))[0]
        left = [q for q in _members(run, event) if q not in at]
        made = sorted({len(_like(f, q, event)) for q in left})
        lasted = max((e.end - e.start for e, _ in at.values() if e.end is not None), default=None)
        sentences.append(
            f"{sentence_start(rank_list(rs))}'s {name} #{k} of {_group_text(run, event)} timed out because "
            f"{rank_list(left)} had stopped making {name} calls of that group ({'it' if len(left) == 1 else 'they'} "
            f"made {' or '.join(map(str, made))}), and {rank_list(rs)} caught the error and made no further call of "
            "it: the timeout was the program's signal that a rank had left (WeNet's wenet_join works this way). "
            "That relies on timing: a rank merely slower than the timeout there would be taken as gone"
            f"{f', and the wait cost {lasted:.2f} s' if lasted is not None else ''}. An all_reduce of a "
            '"still have data" flag each step, or DDP\'s model.join(), lets ranks with uneven inputs leave together '
            "without waiting out a timeout."
        )
        for error, who in _by_first_line({r: at[r][0] for r in rs}).items():
            evidence.append(
                f"{rank_list(who)}'s {name} #{k} at {place} raised “{error}”, which was caught; "
                f"{rank_list(left)} made {' or '.join(map(str, made))} {name} calls of that group, and "
                f"{rank_list(who)} none after it"
            )

    def call_text(name: str, k: int, group, event: Event) -> str:
        return f"{name}{f' #{k}' if k else ''}{'' if group is None else ' of ' + _group_text(run, event)}"

    def waited(rs: list[int]) -> str:
        return "its" if len(rs) == 1 else "their"

    for (name, k, group, place), at in sorted(resumed.items(), key=lambda item: (item[0][1], item[0][0]))[:3]:
        rs = sorted(at)
        call = call_text(name, k, group, next(iter(at.values()))[0])
        sentences.append(
            f"{sentence_start(rank_list(rs))}'s work.wait(timeout=…) of {call} gave up before it completed, and the "
            f"error was caught: a wait's own timeout stops only the waiting, not the {name}, and {waited(rs)} next "
            "wait of it returned."
        )
        for error, who in _by_first_line({r: at[r][0] for r in rs}).items():
            first, again = at[who[0]]
            lasted = max((at[r][0].end - at[r][0].start for r in who if at[r][0].end is not None), default=None)
            evidence.append(
                f"{rank_list(who)}'s work.wait(timeout=) of {name}{f' #{k}' if k else ''} (made at {place}) at "
                f"{_place(first)} gave up{f' after {lasted:.2f} s' if lasted is not None else ''} with “{error}”; "
                f"{waited(who)} next wait of it, at {_place(again)}, returned"
            )
    for (name, k, group, place), at in sorted(went_on.items(), key=lambda item: (item[0][1], item[0][0]))[:3]:
        rs = sorted(at)
        call = call_text(name, k, group, next(iter(at.values())))
        they = "it" if len(rs) == 1 else "they"
        tensors = (
            "" if name in ("barrier", "monitored_barrier") else ", and its tensors were not known to hold its result"
        )
        sentences.append(
            f"{'But ' + rank_list(rs) if not sentences else sentence_start(rank_list(rs))} gave up waiting for "
            f"{call} ({waited(rs)} work.wait(timeout=…) ran out, and the error was caught) and never waited for it "
            f"again: a wait's own timeout stops only the waiting, not the {name}, so nothing of the {name} "
            f"ordered the code after it{tensors}."
        )
        for error, who in _by_first_line(at).items():
            lasted = max((at[r].end - at[r].start for r in who if at[r].end is not None), default=None)
            evidence.append(
                f"{rank_list(who)}'s work.wait(timeout=) of {name}{f' #{k}' if k else ''} (made at {place}) at "
                f"{_place(at[who[0]])} gave up{f' after {lasted:.2f} s' if lasted is not None else ''} with "
                f"“{error}”, which was caught: {they} never waited for it again"
            )
        advice.append(
            "A work.wait(timeout=…) that gives up only stops waiting: the collective still runs, and orders nothing "
            "until a wait of it returns. Wait for it again (work.wait()) before going on, or let the error end the "
            "rank."
        )
    if failed:
        failed_ranks = sorted({r for at in failed.values() for r in at})
        by_call: dict[tuple, dict[int, tuple[Event, str]]] = {}  # one call at different lines on different ranks
        for (name, k, group, _), at in failed.items():
            by_call.setdefault((name, k, group), {}).update(at)
        calls = [
            f"{name}{f' #{k}' if k else ''}"
            f"{'' if group is None else ' of ' + _group_text(run, next(iter(at.values()))[0])} on {rank_list(sorted(at))}"
            for (name, k, group), at in sorted(by_call.items(), key=lambda item: (item[0][1], item[0][0]))[:3]
        ] + ([f"{len(by_call) - 3} more"] if len(by_call) > 3 else [])
        kinds = {(explain_error(error) or ("",))[0] for at in failed.values() for _, error in at.values()}
        after = (
            " (after a gloo timeout the group is unusable: every later collective of it fails at once)"
            if kinds & {"gloo timeout", "poisoned group"}
            else ""
        )
        barriers = {"barrier", "monitored_barrier"}
        tensors = "" if all(name in barriers for name, *_ in failed) else ", and its tensors cannot be trusted"
        sentences.append(
            f"{'And' if went_on else 'But'} {'a collective call' if len(by_call) == 1 else 'collective calls'} failed "
            f"({'; '.join(calls)}), and the {'rank' if len(failed_ranks) == 1 else 'ranks'} caught the error and "
            f"went on: a failed collective ordered nothing{tensors}{after}."
        )
        for (name, k, _, place), at in sorted(failed.items(), key=lambda item: (item[0][1], item[0][0]))[:4]:
            by_error: dict[str, list[int]] = {}
            for r, (_, error) in sorted(at.items()):
                by_error.setdefault(_clip(error.splitlines()[0], 120), []).append(r)
            for error, rs in by_error.items():
                lasted = max((at[r][0].end - at[r][0].start for r in rs if at[r][0].end is not None), default=None)
                took = f" after {lasted:.2f} s" if lasted is not None else ""
                evidence.append(
                    f"{rank_list(rs)}'s {name}{f' #{k}' if k else ''} at {place} raised “{error}”{took}, which was "
                    f"caught: {'the rank' if len(rs) == 1 else 'they'} finished all the same"
                )
        advice.insert(
            0,
            "Do not let an `except` swallow a collective's error and go on: the code after it runs on no "
            "synchronisation. Find why the call failed (a rank that came after the timeout, a call some ranks did "
            "not make, other sizes), fix that, and let the error end the rank (or re-raise it).",
        )
    return " ".join(sentences), evidence, " ".join(advice), ranks


def _left_by_timeout(f: Facts, failed: dict[tuple, dict[int, tuple[Event, str]]]) -> list[tuple]:
    """The failed calls of :func:`_caught_errors` that a program made to learn, by their timeout, that a rank has
    left (corpus48's WeNet ``wenet_join``: a ``monitored_barrier`` with a short timeout on a group of its own before
    every step; a rank whose data ran out stops calling it, and the others' timeout tells them to stop too): a
    barrier whose caught error was a timeout, the last call of its group on every rank it failed on, while every
    other member of the group had stopped before reaching it (made fewer calls of the group). Not a failure of
    the run, but a protocol that relies on timing."""
    run, found = f.run, []
    for key, at in failed.items():
        name, k, group, _ = key
        if name not in ("barrier", "monitored_barrier") or not k:
            continue
        event = next(iter(at.values()))[0]
        left = [q for q in _members(run, event) if q not in at]
        timed_out = all(
            (explain_error(error) or ("",))[0] in ("gloo timeout", "monitored barrier", "monitored barrier answer")
            for _, error in at.values()
        )
        if (
            timed_out
            and left
            and all(_like(f, r, e)[-1:] == [e] for r, (e, _) in at.items())
            and all(len(_like(f, q, event)) < k for q in left)
        ):
            found.append(key)
    return found


def _number_in_group(f: Facts, rank: int, event: Event) -> int:
    """``event``'s number among ``rank``'s calls of its group (0: not found)."""
    mine = _like(f, rank, event)
    return mine.index(event) + 1 if event in mine else 0


def _by_first_line(waits: dict[int, Event]) -> dict[str, list[int]]:
    """The ranks of ``waits`` by the first line of their error (clipped)."""
    found: dict[str, list[int]] = {}
    for r, wait in sorted(waits.items()):
        found.setdefault(_clip((wait.error or "").splitlines()[0] if wait.error else "", 120), []).append(r)
    return found


def rule_paired_by_position(f: Facts) -> Diagnosis | None:
    """Different Python calls at one position that gloo runs as the same op: they pair silently
    (broadcast_object_list on one rank against broadcast on another)."""
    if not f.first_diff or f.missing or len({e.name for e in f.at_k.values()}) < 2:
        return None
    underlying = {ops.underlying(e.name) for e in f.at_k.values()}
    if len(underlying) != 1:
        return None
    k = f.number
    evidence = list(f.evidence) + _calls_by_op(f, k) + f.shapes + _outcomes(f.run, f.at_k) + _abort_evidence(f)
    return Diagnosis(
        "silently-paired",
        f"Different calls paired{'' if f.failed else ' silently'} at {_call_no(f)}: "
        + _ops_at(f)
        + " — gloo runs both as "
        + next(iter(underlying))
        + ", so they exchanged data that does not "
        "belong together" + (_paired_outcome(f) if f.failed else " and nothing failed."),
        evidence,
        _silent_pairing_advice(next(iter(underlying))),
        ranks=sorted(f.at_k),
        site=_site(next(iter(f.at_k.values()))),
    )


#: gloo's words as it aborts a receiver of more bytes than its buffer holds: "op.preamble.length <= op.nbytes. 12
#: vs 8" (the bytes that came, the bytes of the buffer).
_TOO_MANY_BYTES = re.compile(r"preamble\.length <= op\.nbytes\. (\d+) vs (\d+)")


def _paired_outcome(f: Facts) -> str:
    """How the run went on from calls that paired by position (:func:`rule_paired_by_position`) where some rank did
    not finish, as the record shows it (review91d M2: "paired silently" where gloo aborted the receiving rank)."""
    run, at = f.run, f.at_k
    aborted = [r for r in sorted(f.aborted) if r in at and at[r].end is None]
    parts = []
    for r in aborted:
        sizes = _TOO_MANY_BYTES.search(f.aborted[r])
        parts.append(
            f"gloo aborted rank {r} ({_signal_name(run[r].signal)}) in its {at[r].name}"
            + (
                f", which received {sizes[1]} bytes where it had room for {sizes[2]}"
                if sizes and int(sizes[1]) > int(sizes[2])
                else ""
            )
        )
    failed_in = [r for r in f.failed if r not in aborted and r in at and at[r].error]
    if failed_in:
        parts.append(f"{rank_list(failed_in)} failed in {'its call' if len(failed_in) == 1 else 'their calls'}")
    later = [r for r in f.failed if r not in aborted and r not in failed_in]
    if later:
        parts.append(f"{rank_list(later)} did not finish")
    clean = [r for r, e in sorted(at.items()) if run[r].ok and e.end is not None and not e.error]
    if clean:
        parts.append(f"{rank_list(clean)} returned from {'its call' if len(clean) == 1 else 'theirs'} with no error")
    return ": " + "; ".join(parts) + "."


def _silent_pairing_advice(underlying: str) -> str:
    """What to do about two calls gloo ran as ``underlying``, with how that op's calls meet."""
    how = (
        "a broadcast_object_list makes two broadcasts, a size tensor (8 bytes per object) and then the pickled "
        "bytes, and each meets whatever the other rank called at that position: the root's bytes land in the "
        "other rank's tensor (a plain broadcast's tensor receives the sizes, or a broadcast_object_list's size "
        "tensor receives a plain broadcast's data). gloo aborts the receiving process when the root sends more "
        "bytes than that tensor holds; when it sends no more, that broadcast returns with no error, the tensor's "
        "first bytes overwritten and the rest as it held, and the wrong values go on into what follows (a "
        "broadcast_object_list takes them for its sizes)."
        if underlying == "broadcast"
        else f"gloo runs both calls as {underlying}, so each rank got a result computed from the other's input as "
        "if it had made the same call (when the byte counts differ, gloo aborts a rank that receives more bytes "
        "than its tensor holds; otherwise one rank waits until the timeout, or until the other's process ends, "
        "and the other can return a wrong result with no error)."
    )
    return f"Collectives pair by their position in the group's sequence, not by name: {how} Make every rank make the same call."


def rule_mismatched_collectives(f: Facts) -> Diagnosis | None:
    """Different ops at the same position of the learner's calls."""
    if not f.first_diff or len({e.name for e in f.at_k.values()}) < 2:
        return None
    if f.split and f.split.from_torch:
        return None  # torch's own collectives diverged first: rule_torch_divergence explains it
    if any(e.name in GROUP_MAKERS for e in f.at_k.values()):
        return _group_maker_met_collective(f)
    k, run = f.number, f.run
    evidence = list(f.evidence) + _calls_by_op(f, k)
    evidence += [f"{rank_list([r])} {_how_it_ended(run[r], f.calls[r], f.flights.get(r))}" for r in f.missing]
    evidence += _outcomes(run, f.at_k) + _error_evidence(run, list(f.at_k), f.at_k)
    headline = f"Different collectives at the same position: {_call_no(f)} is {_ops_at(f)}."
    advice = (
        "Collectives pair by their position in the group's sequence, not by name; ops that gloo runs "
        "differently (barrier and all_reduce, for example) never pair, so a rank left in one of them waits for a "
        f"partner that never comes until the timeout ({DEFAULT_TIMEOUTS}; a call with nothing to exchange, such as "
        "an all_reduce of an empty tensor, returns at once on gloo: tests/test_ordering_races.py measures it). Make "
        "every rank call the same collectives in the same order. " + _detail_check_words(f.at_k)
    )
    threaded = {r: e.lane for r, e in sorted(f.at_k.items()) if (e.lane or "").startswith("thread")}
    if threaded:  # attack27 a06: a thread's barrier took a place in the group's sequence the main thread used
        r, lane = next(iter(threaded.items()))
        headline += (
            f" Rank {r}'s call came from its {lane}, while its main thread made collectives on the same group: "
            "the two threads' calls take places in the group's sequence in whatever order they happen, which "
            "differs from rank to rank."
        )
        advice = (
            "Collectives of two threads on one group pair by the order they happen in, on each rank: torch asks "
            "for explicit synchronization when several threads issue collectives (new_group's docstring). Give the "
            "thread's collectives a group of their own (one more dist.new_group() made by every rank before the thread starts, used only "
            "by that thread), or make them in the main thread (join the thread first)."
        )
    return Diagnosis(
        "mismatched-collectives",
        headline,
        evidence,
        advice,
        ranks=sorted(f.at_k),
        site=_site(next(iter(f.at_k.values()))),
    )


def _detail_check_words(at: dict[int, Event]) -> str:
    """What TORCH_DISTRIBUTED_DEBUG=DETAIL would do for mismatched calls ``at``, as far as this run shows it
    (review94d F5: "reports such a mismatch at once" was said of a run that set DETAIL too late to check the
    group): its check applies to groups made after torch has read the variable (torch/distributed/__init__.py calls
    set_debug_level_from_env() at import; distributed_c10d.py's _new_process_group_helper wraps a group in the
    checking ProcessGroupWrapper when get_debug_level() == DETAIL as it makes it; review95d U1: the variable set
    inside a rank before new_group, with no set_debug_level_from_env(), gave no check), and whether it reported
    these calls is in their errors."""
    if any((explain_error(e.error or "") or ("",))[0] == "debug mismatch" for e in at.values()):
        return "TORCH_DISTRIBUTED_DEBUG=DETAIL's check reported this mismatch (the errors above)."
    return (
        "TORCH_DISTRIBUTED_DEBUG=DETAIL reports such a mismatch at once, but only on groups made after torch has "
        "read it, which it does when torch.distributed is imported (or at dist.set_debug_level_from_env()): setting "
        "it inside a running rank does nothing by itself (export it before the job starts, or pass "
        "env={'TORCH_DISTRIBUTED_DEBUG': 'DETAIL'} to barrierlab.run); "
        "in this run no rank's call reported it."
    )


def _group_maker_met_collective(f: Facts) -> Diagnosis:
    """At the first call where the ranks differ, some made a group (``new_group``) and others a collective. torch
    2.13 runs no collective on the default group for new_group (:data:`calls.GROUP_MAKERS`), so the two do not
    pair: the makers wait for the new group's other members to connect, and those members wait in their collective
    for the makers (review78d M1: told as "Different collectives at the same position: call #1 is rank 0's
    new_group and ranks 1-3's barrier", collectives that "pair by position", while the ledger, from torch's flight
    recorder, showed rank 0 with no call at #1)."""
    run = f.run
    numbers = {r: call_numbers(f.calls[r][: f.first_diff])[-1] for r in f.at_k}
    makers = sorted(r for r, e in f.at_k.items() if e.name in GROUP_MAKERS)
    others = sorted(r for r in f.at_k if r not in makers)
    evidence = list(f.evidence)
    for ranks in _by_place(f.at_k, _chain_key):
        e = f.at_k[ranks[0]]
        members = f" (the group of ranks {list(e.made)})" if e.made is not None else ""
        evidence.append(f"{rank_list(ranks)} called {_op_name(e)} #{numbers[ranks[0]]}{members} {_called_at(e)}")
    evidence += [f"{rank_list([r])} {_how_it_ended(run[r], f.calls[r], f.flights.get(r))}" for r in f.missing]
    evidence += _outcomes(run, f.at_k) + _error_evidence(run, list(f.at_k), f.at_k)
    made = [f.at_k[r] for r in makers]
    waited_for = sorted({m for e in made for m in (e.made if e.made is not None else f.at_k) if m in others})
    first = f.at_k[others[0]] if others else made[0]
    theirs = " and ".join(
        f"{rank_list(rs)}'s {_op_name(f.at_k[rs[0]])} #{numbers[rs[0]]} at {_place(f.at_k[rs[0]])}"
        for rs in _by_place(f.at_k, site_key)
    )
    waits = (
        f" Here {rank_list(makers)} waited in {made[0].name} for {rank_list(waited_for)} to join the group, while "
        f"{rank_list(others)} waited in {_op_name(first)} #{numbers[others[0]]} for {rank_list(makers)}."
        if waited_for and others
        else ""
    )
    headline = (
        f"A group made by only some ranks while the others called a collective: {theirs}. {made[0].name} is no "
        "collective of the default group and does not pair with one: torch runs none for it (on gloo the new "
        "group's members connect to each other, waiting up to the new group's timeout, and the other ranks return "
        f"at once), so it takes no place in the group's sequence and run.ledger() does not list it.{waits}"
    )
    members = list(made[0].made) if made[0].made is not None else None
    advice = (
        "Every rank must make every group, in the same order, members or not (new_group's docstring): make the "
        "group on every rank before the condition"
        + (f" (`g = dist.new_group({members})`)" if members is not None else "")
        + " and use it under the condition."
    )
    return Diagnosis("mismatched-collectives", headline, evidence, advice, ranks=sorted(f.at_k), site=_site(made[0]))


def _call_no(f: Facts) -> str:
    """'call #k' (the ranks' k-th collective on the group), with the ledger's row when the ledger, which numbers
    calls by their position in the group's sequence, puts it elsewhere (attack15 a13: a ``monitored_barrier``
    or a ``broadcast_object_list`` before it takes two positions): "call #2 (row 3 of the ledger)"."""
    k = f.number
    rows = sorted(set(positions_in_group(f.run, f.at_k).values()))
    if not rows or rows == [k]:
        return f"call #{k}"
    listed = " and ".join(map(str, rows))
    return f"call #{k} (row{'s' if len(rows) > 1 else ''} {listed} of the ledger)"


def _place(event) -> str:
    """'train.py:12' (or 'cell In[3], line 4'): where a call was made, without its code."""
    return Site(event.file, event.line, event.func or "").place if event.file else "an unknown line"


def _ops_at(f: Facts) -> str:
    """ "rank 0's broadcast_object_list at a.py:4 and rank 1's broadcast at a.py:6", each with the line where
    the ranks' paths part when the call sits in a helper: "rank 0's all_gather at a.py:29 (from a.py:20)"."""
    by_op: dict[str, list[int]] = {}
    for rank, event in sorted(f.at_k.items()):
        by_op.setdefault(event.name, []).append(rank)
    at = _parting_of(f.at_k)
    return " and ".join(
        f"{rank_list(rs)}'s {_op_name(f.at_k[rs[0]])} at {_place(f.at_k[rs[0]])}{_parts_at(f.at_k[rs[0]], at)}"
        for op, rs in by_op.items()
    )


def _op_name(event: Event) -> str:
    """'barrier', or "dcp.save's gather_object" for a collective torch made inside the learner's dcp.save."""
    return f"dcp.{event.within}'s {event.name}" if event.within else event.name


def _parts_at(event, at: int | None) -> str:
    """' (from a.py:20)': for a call in a helper of another file, the line that called it; for a longer chain
    the frame where the ranks' paths part (``at``), else its outermost frame."""
    chain = chain_of(event)
    frames = chain.shown
    if len(frames) < 2 or (len(frames) == 2 and frames[0].file == frames[1].file):
        return ""  # a helper of the same file: its line says enough, as the evidence's "called from" does
    first = len(chain.frames) - len(frames)
    index = at - first if at is not None and first <= at < len(chain.frames) - 1 else 0
    return f" (from {frames[index].place})"


def _calls_by_op(f: Facts, k: int) -> list[str]:
    at = _parting_of(f.at_k)
    by_op: dict[str, list[int]] = {}
    for rank, event in sorted(f.at_k.items()):
        by_op.setdefault(event.name, []).append(rank)
    return [
        f"{rank_list(rs)} called {_op_name(f.at_k[rs[0]])} #{k} {_called_at(f.at_k[rs[0]], at)}"
        for op, rs in by_op.items()
    ]


def rule_checkpoint_on_some_ranks(f: Facts) -> Diagnosis | None:
    """The first call the ranks disagree on is one torch made inside the learner's ``dcp.save``/``dcp.load``
    on some ranks only: the learner called a collective of the whole group as one calls ``torch.save``."""
    if not f.first_diff:
        return None
    inside = {r: e for r, e in f.at_k.items() if e.within}
    if not inside:
        return None
    event = inside[min(inside)]
    api = f"dcp.{event.within}"
    elsewhere = {r: e for r, e in f.at_k.items() if e.within != event.within}
    if not elsewhere and not f.missing:
        return None
    callers = sorted(r for r, e in inside.items() if e.within == event.within)
    k, run = f.number, f.run
    others = []
    by_op: dict[str, list[int]] = {}
    for rank, e in sorted(elsewhere.items()):
        by_op.setdefault(_op_name(e), []).append(rank)
    others += [f"{rank_list(rs)} made {op} #{k} at {_place(elsewhere[rs[0]])} instead" for op, rs in by_op.items()]
    if f.missing:
        others.append(f"{rank_list(f.missing)} never made a {ordinal(k)} collective call")
    headline = (
        f"{api} is a collective every rank must call: {rank_list(callers)} called it at {where_text(event)}"
        f"{called_from(chain_of(event), _parting_of(f.at_k) if not f.missing else None)}; " + " and ".join(others) + "."
    )
    waited = sorted(elsewhere) + f.missing
    evidence = [
        f"inside {api}, torch made {event.name} #{k} (DCP gathers every rank's plan at its coordinator rank, "
        f"then hands each rank its part), so {rank_list(callers)} waited there for {rank_list(waited)}"
    ]
    evidence += [f"{rank_list(rs)} called {op} #{k} {_called_at(elsewhere[rs[0]])}" for op, rs in by_op.items()]
    evidence += [f"{rank_list([r])} {_how_it_ended(run[r], f.calls[r], f.flights.get(r))}" for r in f.missing]
    evidence += _outcomes(run, f.at_k) + _error_evidence(run, sorted(f.at_k), f.at_k)
    return Diagnosis(
        "checkpoint-on-some-ranks",
        headline,
        evidence,
        f"torch.distributed.checkpoint's save and load are collectives of the whole group: every rank writes "
        f"(or reads) its own shards, and the coordinator rank gathers every rank's plan (and, for a save, writes the "
        f"metadata) "
        f"— unlike torch.save, which one rank calls alone. Call {api} on every rank, not under `if rank == 0:`; "
        f"{DEFAULT_TIMEOUTS}, so a job waits that long before anything fails.",
        ranks=callers,
        site=_site(event),
    )


def rule_torch_divergence(f: Facts) -> Diagnosis | None:
    """The first disagreement in torch's flight records involves a collective torch issued itself (DDP's
    gradient all_reduce or buffer broadcast, DTensor, DCP, FSDP): the learner's record cannot see it."""
    split = f.split
    if split is None or not split.from_torch:
        return None
    run, position = f.run, split.position
    origin = {r: _entry_origin(e) for r, e in split.at.items()}
    groups: dict[str, list[int]] = {}
    for rank, text in sorted(origin.items()):
        groups.setdefault(text, []).append(rank)
    evidence = [
        f"{rank_list(rs)} made collective #{position} of the group: {split.at[rs[0]].op}, {text}"
        for text, rs in groups.items()
    ]
    for rank in split.absent:
        last = max((e.seq for e in f.flights[rank] if not e.p2p and e.group == "0"), default=0)
        evidence.append(
            f"{rank_list([rank])} made only {last} collective{'s' if last != 1 else ''} in the group "
            f"and {_how_it_ended(run[rank], f.calls[rank], counted=True)}"
        )
    unread = [rank for rank in f.calls if rank not in f.flights]
    if unread:
        evidence.append(
            f"torch's flight record could not be read from {rank_list(unread)} (stopped before it could be copied)"
        )
    evidence += _error_evidence(run, sorted(split.at))
    torch_entry = split.from_torch[0]
    made = sorted(split.at)
    site = Site(torch_entry.file, torch_entry.line, torch_entry.func or "") if torch_entry.file else None
    who = torch_entry.issuer
    causes = crashed(run, split.absent)
    if causes:
        return _rank_failed(
            run,
            causes,
            f"so {rank_list(made)} waited for "
            f"{'them' if len(causes) > 1 else 'it'} in {who} (collective #{position}), "
            f"reached from {_entry_where(torch_entry)}",
            evidence,
            site,
        )
    if len(split.at) > 1 and len({e.op for e in split.at.values()}) > 1:
        parts = "; ".join(f"{rank_list(rs)} made {split.at[rs[0]].op} ({text})" for text, rs in groups.items())
        headline = f"Different collectives at position #{position} of the group's sequence: {parts}."
    elif split.absent and (branch := _library_call_under_a_branch(torch_entry)) is not None:
        return _library_sync_on_some_ranks(f, torch_entry, branch, evidence)
    else:
        headline = (
            f"{who} (collective #{position} of the group) was made by {rank_list(made)}, reached from "
            f"{_entry_where(torch_entry)}{called_from(chain_of(torch_entry))}; "
            f"{rank_list(split.absent)} never made it."
        )
    evidence += _no_sync_evidence(split)
    return Diagnosis("torch-collective-diverged", headline, evidence, _torch_advice(who, split), ranks=made, site=site)


def _no_sync_evidence(split: _Split) -> list[str]:
    """Lint's account, as evidence, when the ranks that made no gradient all_reduce ran the same backward inside
    ``no_sync()`` (attack24 a08: the record shows no call of theirs there, only the source does)."""
    for entry in split.at.values():
        found = _branch_on_stack(entry.call or entry)
        if found is not None and "no_sync" in found[0].why:
            return [f"barrierlab.lint, on {found[1].place}: {found[0].why}"]
    return []


def _letters(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: Kinds of lint finding that say only some ranks reach a call (not how often they make it).
_REACHED_BY_SOME = ("branch", "early-exit", "hidden-collective")


def _library_call_under_a_branch(entry: FlightEntry):
    """The first call into the library that made ``entry`` (an installed package's collective) which
    :mod:`barrierlab.lint` finds under a rank-dependent branch (or after a rank-dependent exit) in the learner's
    files of the entry's chain, or None. A library that defers its collectives (Lightning reduces what
    ``self.log(..., sync_dist=True)`` logged at the end of the epoch) makes them after the learner's branch has
    returned, so the branch is on no stack: only the source shows it."""
    from barrierlab.lint import lint_file

    library = library_of(entry.issuer or "")
    if library is None:
        return None
    key = _letters(library)
    for file in dict.fromkeys(site.file for site in chain_of(entry).frames):
        if file.startswith("<"):
            continue
        try:
            findings = lint_file(file)
        except Exception:  # noqa: BLE001 - a file lint cannot read (a cell's, gone) says nothing here
            continue
        for finding in findings:
            framework = _letters(finding.framework or "")
            # a loop of rank-dependent length makes ranks call it a different number of times: where that shows
            # in the group's sequence is not where the library's collective parted, so it is not named here
            if finding.kind in _REACHED_BY_SOME and framework and (framework in key or key in framework):
                return finding
    return None


def _how_ranks_differ(finding) -> str:
    """What a lint finding says makes only some ranks reach the learner's call, in a clause."""
    if finding.kind == "early-exit":
        return f"ranks where `{finding.condition}` is true leave before it"
    return f"`{finding.condition}` decides which ranks make it"


def _library_sync_on_some_ranks(f: Facts, entry: FlightEntry, finding, evidence: list[str]) -> Diagnosis:
    """A library's collective that only some ranks made, traced to the learner's call into that library that
    lint finds only some ranks reach (``finding``: under a rank-dependent branch, or after a rank-dependent
    exit)."""
    split = f.split
    made = sorted(split.at)
    library = library_of(entry.issuer or "")
    call = Site(finding.path, finding.line)
    on_stack = any((site.file, site.line) == (call.file, call.line) for site in chain_of(entry).frames)
    later = (
        ""
        if on_stack
        else f"; {library} made its collective later, after that code had returned, so no stack shows the cause"
    )
    headline = (
        f"Only {rank_list(made)} made {entry.issuer} (collective #{split.position} of the group), reached from "
        f"{_entry_where(entry)}{called_from(chain_of(entry))}; {rank_list(split.absent)} never made it. The "
        f"rank-dependent call is in your code at {call}: {_how_ranks_differ(finding)}{later}."
    )
    evidence = list(evidence) + [f"barrierlab.lint, on {call.place}: {finding.why}"]
    return Diagnosis(
        "only-some-ranks",
        headline,
        evidence,
        f"{sentence_start(finding.fix)}. A library call that synchronises across ranks (here "
        f"{library}'s) must be made by every rank the same number of times, even when only one rank's value "
        f"matters; keep only the rank-specific work (printing, saving) under a condition. {RULES}",
        ranks=made,
        site=call,
    )


def _pairing_rule(mismatched: bool) -> str:
    """The rule a divergence in torch's flight records breaks; with ``mismatched`` (different operations at one
    position) what that does on each backend."""
    if not mismatched:
        return "Every rank must make the same collectives in the same order, counting those torch makes for you. "
    return (
        "Every rank must make the same collectives in the same order, counting those torch makes for you: the "
        "k-th collective of the group must be the same operation on every rank. On gloo, different operations at "
        "one position do not pair, unless gloo runs both as one operation (a broadcast_object_list's broadcasts "
        "against a broadcast, a reduce_scatter_tensor, which gloo runs as an all_reduce, against an all_reduce): "
        "each waits until the timeout, or sees its connection closed by a peer that gave up "
        "first. "
    )


def _branch_on_stack(call) -> tuple[object, Site] | None:
    """A lint finding (rank-dependent branch, early exit, helper reaching a collective under a branch) at a
    frame of ``call``'s chain in the learner's files, with that frame: why only some ranks made the call."""
    from barrierlab.lint import lint_file

    frames = chain_of(call).frames
    at = {(site.file, site.line): site for site in frames}
    for file in dict.fromkeys(site.file for site in frames):
        if file.startswith("<") or not is_learners(file):
            continue
        try:
            findings = lint_file(file)
        except Exception:  # noqa: BLE001 - a file lint cannot read (a cell's, gone) says nothing here
            continue
        for finding in findings:
            if finding.kind in _REACHED_BY_SOME and (finding.path, finding.line) in at:
                return finding, at[(finding.path, finding.line)]
    return None


def _branch_advice(split: _Split) -> tuple[str, bool]:
    """Where to start when lint finds, on the stack of a call made at the split by only some ranks, the
    rank-dependent line that decides who makes it: that call and line, the fix, and whether the call was the
    learner's own (then torch's collectives are not the cause). ("", False) when lint finds none."""
    for _, entry in sorted(split.at.items(), key=lambda item: (item[1].issuer is not None, item[0])):
        call = entry.call or entry
        found = _branch_on_stack(call)
        if found is None:
            continue
        finding, line = found
        ranks = [r for r, e in split.at.items() if e.op == entry.op and _entry_where(e) == _entry_where(entry)]
        if entry.issuer:
            what = f"{entry.issuer}, reached from {line}"
        elif (line.file, line.line) == (call.file, call.line):
            what = f"{entry.op} at {line}"
        else:
            what = f"{entry.op} at {_entry_where(entry)}: it is reached from {line}"
        fix = sentence_start(finding.fix)
        return (
            f"Start at {rank_list(sorted(ranks))}'s {what}, where {_how_ranks_differ(finding)}. {fix}. ",
            not entry.issuer,
        )
    return "", False


def _torch_advice(who: str, split: _Split | None = None) -> str:
    """What to do when torch's own collectives diverged (``who`` made the first one that differs)."""
    mismatched = split is not None and len({e.op for e in split.at.values()}) > 1
    lead, learners = _branch_advice(split) if split is not None else ("", False)
    base = lead + _pairing_rule(mismatched)
    if learners:
        return base.rstrip()
    if who.startswith("DDP") or who.startswith("Join"):
        return base + (
            "DDP broadcasts the module's buffers (if it has any) at the start of its first forward after it "
            "was built, whatever the mode, and of every forward that follows a synchronised training forward — "
            "e.g. the first evaluation forward after a training step — "
            "and all_reduces every gradient bucket in the backward() of every forward made outside no_sync(): "
            "every rank must "
            "run the same number of "
            "forward and backward passes through the DDP-wrapped model. Run rank-0-only work "
            "(evaluation, logging) on model.module, give every rank the same number of batches "
            "(DistributedSampler, drop_last) or wrap the loop in torch.distributed.algorithms.Join "
            "for uneven inputs."
        )
    if who.startswith("DCP"):
        return base + "dcp.save and dcp.load are collectives: call them on every rank, not on rank 0 only."
    if who.startswith("FSDP") or who.startswith("DTensor") or "functional" in who:
        return base + (
            "Sharded modules and DTensors communicate in every forward, backward and redistribution: "
            "run the same operations on every rank."
        )
    return base + RULES


def rule_refused_in_call(f: Facts) -> Diagnosis | None:
    """Every rank entered call #k, but some raised inside it before communicating (torch refused its
    arguments: its flight record has no entry at that position), while the others were in it. The
    records of calls agree, so only the flight record and the exception tell the ranks apart."""
    split = f.split
    if f.first_diff or split is None or split.from_torch or not split.absent or not split.at:
        return None
    refused = {}
    for rank in split.absent:
        result, calls = f.run[rank], f.calls.get(rank) or []
        if not (result.status == RAISED and failed_by_itself(result) and calls and calls[-1].error):
            return None
        if calls[-1].error.splitlines()[0] != (result.error_message or "").splitlines()[0]:
            return None  # it raised after that call, not inside it
        refused[rank] = calls[-1]
    event = next(iter(refused.values()))
    if any(
        e.name != event.name or len(f.calls.get(r) or []) != len(f.calls[split.absent[0]]) for r, e in refused.items()
    ):
        return None
    k = len(f.calls[split.absent[0]])
    # review80d M2: the others that left call #k without an error did not wait in it (a gather's non-root ranks
    # only send to the root, and left at once while the root waited): said apart
    left = sorted(
        r
        for r in split.at
        if len(f.calls.get(r) or []) >= k and (c := f.calls[r][k - 1]).end is not None and not c.error
    )
    others = sorted(r for r in split.at if r not in left)
    message = _clip(f.run[split.absent[0]].error_message.splitlines()[0], 200).rstrip(".")
    if not others:
        then = (
            f"{rank_list(left)} left {event.name} #{k} all the same, needing nothing from {rank_list(sorted(refused))}"
        )
    elif _peers_failed_when_connections_closed(f, {r: f.calls[r][-1] for r in others if f.calls.get(r)}):
        then = f"so {rank_list(others)} {'were' if len(others) > 1 else 'was'} in {event.name} #{k} and failed there as connections closed"
    else:
        then = f"so {rank_list(others)} waited in {event.name} #{k}"
    if left and others:
        then += f" ({rank_list(left)} left it, needing nothing from {rank_list(sorted(refused))})"
    return _rank_failed(
        f.run,
        sorted(refused),
        f"inside its {event.name} #{k}, before sending anything: {message}; {then}",
        _failure_evidence(f),
        _site(event),
    )


def rule_rank_failed(f: Facts) -> Diagnosis | None:
    """Some ranks never reached call #k because they failed by themselves (raised, exited, were killed)."""
    if not f.first_diff or f.mispaired:
        return None
    failed = crashed(f.run, f.missing)
    event = f.at_k[min(f.at_k)]
    if not failed:
        return _broken_before_the_call(f, event)
    it = "them" if len(failed) > 1 else "it"
    evidence = _arrival_evidence(f)
    if _peers_failed_when_connections_closed(f):  # they did not wait: gloo reports a closed connection at once
        if len(f.at_k) == 1:
            then = (
                f"so the other was in {event.name} #{f.number} and failed there when the connections to "
                f"{rank_list(failed)} closed"
            )
        else:
            # review83d M1: "the others ... failed there when the connections to rank 1 closed", of a rank 3 that
            # waited on ranks 0 and 2 and failed only when one of them ended; which peer's connection a rank met,
            # gloo's error does not say, and when each rank failed varies from run to run
            its = "their" if len(failed) > 1 else "its"
            then = (
                f"so {rank_list(sorted(f.at_k))}, in {event.name} #{f.number}, failed there on closed connections: "
                f"at once if waiting on {rank_list(failed)}, as {its} connections closed, else when the one they were "
                "waiting on failed and ended in turn"
            )
            evidence.append(_closed_connection_order(f, failed))
    else:
        left = [r for r in sorted(f.at_k) if f.run[r].ok]  # a rooted call some had what they needed from
        waited = [r for r in sorted(f.at_k) if not f.run[r].ok]
        if left and waited:  # review46b M4: ranks that finished were said to have waited
            then = (
                f"so {rank_list(waited)} waited for {it} in {event.name} #{f.number} ({rank_list(left)} had "
                "what they needed from it and left)"
            )
        else:
            then = f"so the others waited for {it} in {event.name} #{f.number}"
    if f.shape_k is not None and f.shape_k < f.first_diff and set(failed) <= set(_aborted_in_shape_call(f)):
        # round 44's SGLang item: "rank 1 failed by itself (killed by SIGABRT)", of a rank gloo aborted in an
        # earlier call whose tensors differed between the ranks (rank 0 made it from writing_check, rank 1 from
        # forward, having skipped writing_check's all_reduce): the ranks' calls differed, which is the bug
        sized = rule_different_sizes(f)
        if sized is not None:
            sized.headline = sized.headline.rstrip(".") + f", {then}."
            sized.evidence += [line for line in evidence if line not in sized.evidence]
            return sized
    return _rank_failed(f.run, failed, then, evidence, _site(event))


def _closed_connection_order(f: Facts, causes: list[int]) -> str:
    """When each rank of call #k failed on a closed connection, and when the other ranks' functions had ended (a
    process closes its connections as it ends, after its function): the ranks that failed before any other rank
    but ``causes`` had ended failed on a connection of theirs; of a later one the record cannot tell whose."""
    run = f.run
    when = {r: e.end for r, e in f.at_k.items() if e.end is not None}
    order = sorted(when, key=lambda r: when[r])
    ended = {r.rank: r.ended for r in run.ranks if r.rank not in causes and r.ended is not None and r.rank in f.at_k}
    first = [r for r in order if not any(x != r and t < when[r] for x, t in ended.items())]
    later = [r for r in order if r not in first]
    text = "when each failed: " + ", ".join(f"rank {r} at {_t(run, when[r])}" for r in order)
    gone = [r for r in causes if run[r].ended is not None]
    if gone:
        text += "; " + ", ".join(f"rank {r} had ended at {_t(run, run[r].ended)}" for r in gone)
    if ended:
        text += "; " + ", ".join(
            f"rank {r} ended at {_t(run, t)}" for r, t in sorted(ended.items(), key=lambda x: x[1])
        )
    if first:
        text += (
            f". {sentence_start(rank_list(first))} failed before any of the others had ended, so on a connection of "
            f"{rank_list(causes)}"
        )
        if later:
            text += (
                f"; {rank_list(later)} failed after some of them had (the connection of {rank_list(causes)}, or of "
                "one that had ended: gloo's error does not say whose)"
            )
    return text


def _broken_before_the_call(f: Facts, event: Event) -> Diagnosis | None:
    """The ranks that never reached call #k failed in their call before it when a connection closed, and another
    rank failed by itself: its end broke their call (round 39, OpenPipe ART #919: rank 0 raised ValueError at a
    broadcast while rank 2 was still connecting a group with it in new_group #3; told as "a group made by only
    some ranks: rank 2 never did" new_group #4, which it never had the chance to make)."""
    causes = [r for r in f.failed if failed_by_itself(f.run[r])]
    if not causes:
        return None
    broken = {}
    for r in f.missing:  # the call it raised in: a group-making call, or a subgroup's, after its last counted one
        last = next((e for e in reversed(f.run[r].events) if e.kind in CALL_KINDS and e.error), None)
        known = explain_error(last.error) if last is not None else None
        if f.run[r].status != RAISED or known is None or known[0] != "peer gone":
            return None
        broken[r] = last
    its = "its" if len(causes) == 1 else "their"
    then = (
        f"and {rank_list(sorted(broken))} failed in "
        + ", ".join(f"{_op_name(e)} at {_place(e)}" for e in broken.values())
        + f" when {its} connection closed, before reaching {_op_name(event)} #{f.number}, which the others made"
    )
    evidence = [f"rank {r} failed in {_op_name(e)} at {_place(e)}: {_clip(e.error)}" for r, e in broken.items()]
    return _rank_failed(f.run, causes, then, evidence + _arrival_evidence(f), _site(event))


def _peers_failed_when_connections_closed(f: Facts, at: dict[int, Event] | None = None) -> bool:
    """Every rank that reached call #k (or the given call of each rank) failed in it with a closed
    connection ("peer gone")."""
    at = f.at_k if at is None else at
    for rank, event in at.items():
        result = f.run[rank]
        text = event.error or (result.error_message if result.status == RAISED else "")
        known = explain_error(text) if text else None
        if known is None or known[0] != "peer gone":
            return False
    return bool(at)


def _arrival_evidence(f: Facts) -> list[str]:
    k, run = f.number, f.run
    arrived = sorted(f.at_k)
    event = f.at_k[arrived[0]]
    evidence = list(f.evidence)
    for ranks in _by_place(f.at_k, _chain_key):
        # each group's own op: ranks at one position may have made different ones (review65b M3's evidence said
        # "ranks 1 and 3 called barrier #4 at ...: dist.all_reduce(t)")
        evidence.append(f"{rank_list(ranks)} called {_op_name(f.at_k[ranks[0]])} #{k} {_called_at(f.at_k[ranks[0]])}")
    made = {r: _calls_of_every_group(run, r) for r in f.missing}
    missing_how = {r: _how_it_ended(run[r], made[r] or f.calls[r], f.flights.get(r)) for r in f.missing}
    for how in sorted(set(missing_how.values())):
        same = [r for r in f.missing if missing_how[r] == how]
        they = "they" if len(same) > 1 else "it"
        # a rank's last call of any group (review78d C5: "their last was new_group #2", the last of the default
        # group's list, for ranks whose last call was a barrier on their subgroup, made after it)
        last = {r: made[r][-1] for r in same if made[r]}
        elsewhere = any(e.group is not None or e.name in GROUP_MAKERS for r in same for e in made[r])
        if last and len({_chain_key(e) for e in last.values()}) == 1 and len(last) == len(same):
            e = last[same[0]]
            if e.group is not None:
                n = sum(1 for x in made[same[0]] if x.group == e.group)
                on = _subgroup_words(e)
            elif f.number != f.first_diff and isinstance(e.seq, int) and e.name not in GROUP_MAKERS:
                n, on = e.seq, ""
            else:
                n, on = call_numbers(f.calls[same[0]])[-1], ""
            how += f"; {'their' if len(same) > 1 else 'its'} last was {_op_name(e)} #{n}{on} {_called_at(e)}"
        default = " on the default group" if elsewhere else ""
        evidence.append(f"{rank_list(same)} never made a {ordinal(k)} collective call{default}: {they} {how}")
    left = [r for r, e in f.at_k.items() if e.end is not None and not e.error]
    if left and event.name not in ops.EVERY_RANK_ON_GLOO:
        evidence.append(
            f"{rank_list(left)} left {event.name} #{k} although {rank_list(f.missing)} never called "
            f"it: a rank leaves a {event.name} once it has what it needs and the ranks it sends to "
            "are ready, which for a broadcast, scatter, gather or point-to-point call is not every "
            "rank (only a gather's or scatter's root waits for all)"
        )
    evidence += _outcomes(run, f.at_k) + _error_evidence(run, arrived, f.at_k)
    return evidence


def _calls_of_every_group(run: Run, rank: int) -> list[Event]:
    """A rank's collective calls on every group, ``new_group`` included, in the order it made them (a forked
    child's left out: they are not the rank's)."""
    return sorted(
        (e for e in run[rank].events if e.is_collective and not e.in_child_process),
        key=lambda e: (e.seq if isinstance(e.seq, int) else 0, e.start),
    )


def _subgroup_words(event: Event) -> str:
    """' of the subgroup of ranks [0, 1]' for a call on a subgroup, as the ledger names its table."""
    members = sorted(event.group_ranks) if event.group_ranks else None
    return f" of the subgroup of ranks {members}" if members else " of a subgroup"


def _by_place(at: dict[int, Event], key) -> list[list[int]]:
    """The ranks of ``at`` (rank -> its call) grouped by ``key`` of their call (where they made it), in rank order."""
    places: dict[tuple, list[int]] = {}
    for rank in sorted(at):
        places.setdefault(key(at[rank]), []).append(rank)
    return list(places.values())


def rule_still_running(f: Facts) -> Diagnosis | None:
    """The ranks that never reached call #k were still running when the deadline stopped them: the record shows
    where, not whether they would have got there (review89d M2: "still busy, not missing" of a rank in an endless
    loop)."""
    if not f.first_diff or f.mispaired or not f.missing:
        return None
    if not all(f.run[r].status == STOPPED for r in f.missing):
        return None
    event = f.at_k[min(f.at_k)]
    one = len(f.missing) == 1
    them, it, was = ("it", "it", "was") if one else ("them", "they", "were")
    stuck = [f.run[r].stuck for r in f.missing]
    if one and stuck[0] is not None and stuck[0].site is not None:
        where = f" ({stuck[0]})"
    elif all(s is not None and s.site is not None and not s.call for s in stuck):
        where = " (outside any torch.distributed call: run.stuck)"
    else:
        where = " (run.stuck)"
    return Diagnosis(
        "still-running",
        f"{rank_list(f.missing)} had not reached {_call_no(f)} ({event.name}) yet when the deadline stopped "
        f"{them}: the record shows where {it} {was}{where}, not whether {it} would have got there with more time "
        "(slow work, or code that never ends: a loop whose exit never comes, a wait for something no rank does).",
        _arrival_evidence(f),
        f"Look at where {'the rank was' if one else 'the ranks were'} (run.stuck): if the code there never ends, fix "
        "it; if it is work expected to take this long, give the run a longer `deadline` (and `timeout`: "
        f"{DEFAULT_TIMEOUTS}).",
        ranks=f.missing,
        site=_site(event),
    )


def rule_silent_mispairing(f: Facts) -> Diagnosis | None:
    """Ranks passed a call made from different lines together: an extra call shifted the pairing."""
    if not f.mispaired or not f.first_diff:
        return None  # calls from different lines that pair and never diverge are how main_process_first works
    k = f.first_diff
    arrived = sorted(f.at_k)
    op = f.at_k[arrived[0]].name
    evidence = _arrival_evidence(f)
    pairs = {r: c[f.mispaired - 1] for r, c in f.calls.items()}
    lines: dict[tuple, list[int]] = {}
    for rank, event in sorted(pairs.items()):
        lines.setdefault(_chain_key(event), []).append(rank)
    headline = (
        f"A collective was silently paired with a different call: the failure shows at {op} #{k}, "
        f"but it started at call #{f.mispaired}, where "
        + " paired with ".join(
            f"{rank_list(rs)}'s {pairs[rs[0]].name} at {_place(pairs[rs[0]])}"
            f"{_parts_at(pairs[rs[0]], _parting_of(pairs))}"
            for rs in lines.values()
        )
        + "."
    )
    return Diagnosis(
        "silent-mispairing",
        headline,
        evidence,
        "Collectives pair by their position in the group's sequence: after an extra call on some ranks, each "
        "later call on those ranks pairs with the other ranks' next call. Calls of the same op pass silently "
        "(the extra barrier released the others' barrier from another line), and the job fails later somewhere "
        "innocent — or never. " + RULES + " Remove the extra call or make every rank make it.",
        ranks=arrived,
        site=_site(f.calls[arrived[0]][f.mispaired - 1]),
    )


def rule_uneven_loop(f: Facts) -> Diagnosis | None:
    """The call only some ranks made repeats a line every rank called before: a loop of uneven length."""
    if not f.first_diff or not f.missing:
        return None
    arrived = sorted(f.at_k)
    if not _uneven_loop(f.calls, arrived, f.missing, f.first_diff):
        return None
    event = f.at_k[arrived[0]]
    if event.name in _GROUP_MAKERS:  # a rank that failed making a group (a member ended early), not a short loop
        return None  # (attack22 a11's mesh case in this session's fourth CI: "a loop ran ... new_group calls")
    inside = {r: entry for r in f.missing if (entry := _torch_call_after_own(f, r)) is not None}
    if inside:  # round 29's fairseq item: rank 0 was in DDP's gradient all_reduce, not past the loop's end
        r, entry = next(iter(inside.items()))
        return Diagnosis(
            "torch-collective-diverged",
            f"{rank_list(arrived)} made {event.name} #{f.number} at {_place(event)} while "
            f"{rank_list(sorted(inside))} {'was' if len(inside) == 1 else 'were'} in {_entry_origin(entry)} "
            f"(a collective torch issued itself, seen in {'its' if len(inside) == 1 else 'their'} flight record), "
            f"which {rank_list(arrived)} never made: the ranks are one collective apart from there.",
            _arrival_evidence(f),
            _torch_advice(entry.issuer or ""),
            ranks=sorted(set(arrived) | set(inside)),
            site=_site(event),
        )
    counts = {r: sum(1 for e in f.calls[r] if site_key(e) == site_key(event)) for r in f.calls}
    evidence = _arrival_evidence(f)
    evidence.append(
        f"calls of {event.name} at line {event.line}: " + ", ".join(f"rank {r}: {n}" for r, n in sorted(counts.items()))
    )
    skip = _skip_in_loop(f.run, event)
    if skip is not None:  # review72c M3: the loop ran 3 times on every rank; one rank's `continue` skipped a call
        # (review89d C1: or its `except ...: continue`)
        finding = skip.finding
        evidence.append(f"barrierlab.lint, on {Site(finding.path, finding.line).place}: {finding.why}")
        return Diagnosis(
            "uneven-loop",
            f"{sentence_start(rank_list(arrived))} made more {event.name} calls at {_place(event)} inside the loop "
            f"than {rank_list(f.missing)}: {skip.how('it')} (barrierlab.lint), so "
            f"{'that rank' if len(f.missing) == 1 else 'those ranks'} "
            f"made fewer {event.name} calls there even if the loop ran as often on every rank.",
            evidence,
            skip.advice(event.name),
            ranks=arrived,
            site=_site(event),
        )
    return Diagnosis(
        "uneven-loop",
        f"A loop ran a different number of times on different ranks: {rank_list(arrived)} made more "
        f"{event.name} calls at {_place(event)} than {rank_list(f.missing)} (the loop ran fewer times there, or "
        f"{'that rank' if len(f.missing) == 1 else 'those ranks'} left it early: a break, a return, an exception).",
        evidence,
        LOOP_ADVICE,
        ranks=arrived,
        site=_site(event),
    )


@dataclass(frozen=True)
class _Skip:
    """How a call inside a loop is skipped in some iterations on some ranks while the loop goes on (barrierlab.lint's
    finding on the call's line): ``how(it)`` says it of the call named ``it``; ``advice`` for the call ``name``."""

    finding: object
    line: int
    kind: str  # "continue", "try" (an ``except`` that goes on) or "with" (``with suppress(...)``)

    def how(self, it: str) -> str:
        cond = self.finding.condition
        if self.kind == "continue":
            return f"the `continue` at line {self.line} skips {it} on ranks where `{cond}` is true"
        if self.kind == "try":
            return (
                f"the `{cond}` handler at line {self.finding.condition_line or '?'} of the `try` at line {self.line} "
                f"around {it} goes on after an error, skipping it on a rank whose own work in the `try` raised "
                "first"
            )
        return (
            f"`with {cond}:` at line {self.line} around {it} swallows an error and goes on, skipping it on a rank "
            "whose own work in the block raised first"
        )

    def advice(self, name: str) -> str:
        cond = self.finding.condition
        neutral = (
            "" if "barrier" in name else " (a rank with nothing to contribute still calls it, with a neutral value)"
        )
        if self.kind == "continue":
            return (
                f"Let every rank make {name} in every iteration: make the collective before the `continue`, or put "
                f"only the rank's own work under `{cond}` and let every rank run the collective{neutral}. {RULES}"
            )
        where = "`try`" if self.kind == "try" else f"`with {cond}:`"
        return (
            f"Let every rank make {name} in every iteration: keep only the rank's own work in the {where} and make "
            f"{name} after it on every rank{neutral.replace('with nothing to contribute', 'whose work failed')}, or "
            "record the failure in a flag, all_reduce the flag (ReduceOp.MAX) and let every rank skip the iteration "
            f"together. {RULES}"
        )


def _skip_in_loop(run: Run, event: Event) -> _Skip | None:
    """Lint's finding on ``event``'s line of a way to skip it while the loop around it goes on, in code the run
    executed (:func:`_in_executed_code`): an early exit by ``continue``, or a ``try`` (or ``with suppress(...)``)
    inside the innermost loop around the call whose handler goes on after a rank's own error (review89d C1: an
    ``except ValueError: continue`` was told as "a loop ran a different number of times", the loop having run
    3 times on every rank). None without one."""
    if not event.line:
        return None
    found = [x for x in _learner_lint(event.file) if x.line == event.line and x.kind in ("early-exit", "except-path")]
    around = [(first, last) for first, last in loops(event.file) if first <= event.line <= last]
    inner = max(around) if around else None
    for x in _in_executed_code(run, found):
        if x.kind == "early-exit":
            match = re.search(r"\(`continue` at line (\d+)\)", x.why)
            if match:
                return _Skip(x, int(match[1]), "continue")
            continue
        match = re.search(r"sits in the `try` at line (\d+), whose", x.why) or re.search(
            r"sits in `with .*?:` at line (\d+), after", x.why
        )
        # the `try` inside the innermost loop around the call: its handler goes on within the loop (a `try`
        # around the loop is a rank leaving the loop early through an exception)
        if match and inner is not None and inner[0] < int(match[1]) <= inner[1]:
            return _Skip(x, int(match[1]), "try" if "`try`" in match[0] else "with")
    return None


#: review65b M2: an early return inside a loop was sent to padding data and DistributedSampler alone.
LOOP_ADVICE = (
    "Give every rank the same number of iterations: where the loop's length comes from each rank's data, pad it "
    "(as DistributedSampler does by default) or drop the rest (drop_last=True), or agree on the count first with an "
    "all_reduce(MIN) (for DDP, torch.distributed.algorithms.Join handles uneven inputs); where a rank leaves the "
    "loop on a test of its own (a break or return), decide that together (all_reduce a flag) so every rank leaves "
    "at the same iteration. barrierlab.lint points at such a loop or exit in the source."
)


def rule_loop_ran_longer(f: Facts) -> Diagnosis | None:
    """Every rank made a call #k, but some repeated the call they had just made (the same line) while the others
    had gone on to the next line: a loop that ran more times on the first (review65b M3: `for _ in range(3 + rank
    % 2)`, told only as "different collectives at the same position")."""
    if not f.first_diff or f.missing or f.first_diff < 2 or f.mispaired:
        return None
    k = f.first_diff
    before = {r: f.calls[r][k - 2] for r in f.at_k}
    if len({site_key(e) for e in before.values()}) != 1:
        return None
    looped = site_key(next(iter(before.values())))
    again = sorted(r for r, e in f.at_k.items() if site_key(e) == looped)
    on = sorted(r for r in f.at_k if r not in again)
    if not again or not on or len({site_key(f.at_k[r]) for r in on}) != 1:
        return None
    event, next_call = f.at_k[again[0]], f.at_k[on[0]]
    if not _after_the_loop(event, next_call):
        return None  # notebook 03's hidden collective: rank 0 went into a helper's barrier inside the loop
    counts = {r: sum(1 for e in f.calls[r][:k] if site_key(e) == looped) for r in f.at_k}
    evidence = _arrival_evidence(f) + [
        f"calls of {event.name} at line {event.line} up to call #{k}: "
        + ", ".join(f"rank {r}: {n}" for r, n in sorted(counts.items()))
    ]
    skip = _skip_in_loop(f.run, event)
    if skip is not None:  # review72c M3: a `continue` skipped the call on some ranks; the loop ran as often
        finding = skip.finding
        evidence.append(f"barrierlab.lint, on {Site(finding.path, finding.line).place}: {finding.why}")
        return Diagnosis(
            "uneven-loop",
            f"{sentence_start(rank_list(again))} made {event.name} at {_place(event)} again (call #{f.number}, its "
            f"{ordinal(counts[again[0]])}), while {rank_list(on)}, after {counts[on[0]]}, had gone on to "
            f"{next_call.name} at {_place(next_call)}: {skip.how(f'the {event.name} inside the loop')} "
            "(barrierlab.lint), so those ranks made fewer "
            "of them even if the loop ran as often on every rank; from there their calls pair with the wrong "
            "partners.",
            evidence,
            skip.advice(event.name),
            ranks=again,
            site=_site(event),
        )
    return Diagnosis(
        "uneven-loop",
        f"A loop ran a different number of times on different ranks: {rank_list(again)} made {event.name} at "
        f"{_place(event)} again (call #{f.number}, its {ordinal(counts[again[0]])}), while {rank_list(on)}, after "
        f"{counts[on[0]]}, had gone on to {next_call.name} at {_place(next_call)}: from there their calls pair "
        "with the wrong partners.",
        evidence,
        LOOP_ADVICE,
        ranks=again,
        site=_site(event),
    )


def _after_the_loop(looped: Event, after: Event) -> bool:
    """Whether ``after`` is a call of the same function as ``looped``, after the end of the innermost ``for`` or
    ``while`` around ``looped``: the ranks that made it had left the loop. The source is a name a rank's record
    gave, so it is read only as :func:`barrierlab._files.source` allows (a notebook cell in memory, or a regular
    ``*.py`` file of bounded size, within the time budget; never through ``linecache``, which opened a FIFO and
    blocked the kernel and ``report`` for ever, and kept a 36 MB text file's 6 million lines: attack30 a07-a09).
    False when the source cannot say."""
    if not (looped.file and looped.line and after.line) or (looped.file, looped.func) != (after.file, after.func):
        return False
    around = [(first, last) for first, last in loops(looped.file) if first <= looped.line <= last]
    if not around:
        return False
    inner = max(around)
    return after.line > inner[1]


def _torch_call_after_own(f: Facts, rank: int) -> FlightEntry | None:
    """The collective torch issued itself (DDP's gradient all_reduce) that ``rank``'s flight record shows after its
    own last call, in the default group: where the rank was when its own calls stopped."""
    own = f.calls.get(rank) or []
    flight = f.flights.get(rank) or []
    last = own[-1].start if own else -math.inf
    later = [e for e in flight if e.issuer and not e.p2p and e.group == "0" and e.start is not None and e.start > last]
    return later[0] if later else None


def rule_only_some_ranks(f: Facts) -> Diagnosis | None:
    """A collective some ranks called and the others never reached."""
    if not f.first_diff or not f.missing:
        return None
    unmatched = rule_unmatched_p2p(f)
    if unmatched is not None and set(f.missing) <= set(unmatched.ranks):
        # the ranks that never reached it wait in a send or receive with no partner (a send to the wrong rank):
        # that is the cause, not a rank-dependent branch around the collective (attack19 a07)
        return unmatched
    arrived = sorted(f.at_k)
    event = f.at_k[arrived[0]]
    places = _by_place(f.at_k, site_key)  # where each arrived rank made it (attack23 a04: rank 0's line for all)
    if len(places) == 1:
        made = (
            f"{rank_list(arrived)} called {_op_name(event)} #{f.number} at {where_text(event)}"
            f"{called_from(chain_of(event), _missing_parting(f, event))}"
        )
    else:
        made = f"{_op_name(event)} #{f.number} was called by " + ", and by ".join(
            f"{rank_list(rs)} at {where_text(f.at_k[rs[0]])}" for rs in places
        )
    # review94d F3: the ranks that never reached it were left waiting in a subgroup call whose members called
    # different ops (a barrier against an all_reduce on new_group([2, 3])): that mismatch held them, not a branch
    # around the default group's call, which their code reaches after it
    they = "it was" if len(f.missing) == 1 else "they were"
    held = _subgroup_mismatch(
        f,
        f.missing,
        (
            [f"{made}, which {rank_list(f.missing)} never reached: {they} left waiting in the subgroup's calls above"]
            + _outcomes(f.run, f.at_k),
            f"{sentence_start(rank_list(arrived))} waited in {_op_name(event)} #{f.number} of the default group "
            f"only for {rank_list(f.missing)}, held in this subgroup call: fix the mismatch first.",
        ),
    )
    if held is not None:
        return held
    if event.name in _GROUP_MAKERS:  # review58b: a finished run told only "a collective reached by only some ranks"
        return _group_made_by_some(f, made, f.missing, arrived, event, _arrival_evidence(f))
    return Diagnosis(
        "only-some-ranks",
        f"A collective reached by only some ranks: {made}; {rank_list(f.missing)} never did.",
        _arrival_evidence(f),
        RULES + " Look for a rank-dependent `if`, an early `return`/`continue`, or a helper called on some "
        "ranks only that contains a collective; move the collective where every rank reaches it "
        "(barrierlab.lint finds these statically).",
        ranks=arrived,
        site=_site(event),
    )


def _group_made_by_some(
    f: Facts, made: str, missing: list[int], makers: list[int], event: Event, evidence: list[str]
) -> Diagnosis:
    """A group-making call some ranks made and ``missing`` never did (:func:`rule_only_some_ranks`,
    :func:`rule_new_group_skipped`)."""
    finished = all(r.status == FINISHED for r in f.run.ranks)
    return Diagnosis(
        "only-some-ranks",
        f"{'Every rank finished, but a' if finished else 'A'} group was made by only some ranks: {made}; "
        f"{rank_list(missing)} never did.",
        evidence,
        "torch wants every rank of the world to make every group, members or not, in the same order "
        "(new_group's docstring). On gloo the ranks that skip the call do not wait (its members wait only for each "
        "other), but a rank that skips one numbers "
        "the groups it makes later differently, so a later group every rank makes fails: " + LATER_GROUP_FAILS + ". "
        "Make the group on every rank, outside the condition, and use it under the condition.",
        ranks=makers,
        site=_site(event),
    )


def _seconds_words(seconds: float) -> str:
    """1800 -> "1800 s, 30 minutes"; 2 -> "2 s"."""
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{seconds:g} s, {minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} s"


def _subgroup_calls(f: Facts) -> dict[str, tuple[tuple[int, ...], dict[int, list[Event]]]]:
    """Each subgroup whose members were recorded, with each member's calls on it (:func:`calls.subgroup_calls`)."""
    return {name: group for name, group in subgroup_calls(f.run).items() if group[0]}


def rule_subgroup_mismatched(f: Facts) -> Diagnosis | None:
    """Different ops at the same position of a subgroup's sequence (attack15 a06: rank 2's barrier and rank 3's
    all_reduce on ``new_group([2, 3])`` were "the same collective calls": the default group's rules see no
    subgroup call)."""
    if not f.failed or f.first_diff or f.split:
        return None
    return _subgroup_mismatch(f)


def _subgroup_mismatch(
    f: Facts, held: list[int] | None = None, later: tuple[list[str], str] | None = None
) -> Diagnosis | None:
    """The first position of a subgroup's sequence whose members called different ops, told as
    :func:`rule_subgroup_mismatched` tells it; with ``held``, only one whose calls those ranks were left waiting in,
    ``later`` then adding what followed: evidence lines and an advice sentence (review94d F3)."""
    for members, calls in _subgroup_calls(f).values():
        present = [m for m in members if m in calls]
        for k in range(1, min((len(calls[m]) for m in present), default=0) + 1):
            at = {m: calls[m][k - 1] for m in present}
            if len({e.name for e in at.values()}) < 2:
                continue
            if held is not None and not all(m in at and _left_waiting_in(f, m) is at[m] for m in held):
                continue
            by_op: dict[str, list[int]] = {}
            for m, e in sorted(at.items()):
                by_op.setdefault(e.name, []).append(m)
            ops = " and ".join(
                f"{rank_list(rs)}'s {_op_name(at[rs[0]])} at {_place(at[rs[0]])}" for rs in by_op.values()
            )
            evidence = [
                f"{rank_list(rs)} called {_op_name(at[rs[0]])} #{k} of the subgroup {_called_at(at[rs[0]])}"
                for rs in by_op.values()
            ]
            evidence += _outcomes(f.run, at) + _error_evidence(f.run, [m for m in at if m in f.failed])
            own, stopped, lines = _subgroup_deadline(f, at)
            evidence += lines + (later[0] if later else [])
            return Diagnosis(
                "mismatched-collectives",
                f"Different collectives at the same position of a subgroup: call #{k} on the group of ranks "
                f"{list(members)} is {ops}."
                + (
                    f" {sentence_start(rank_list(stopped))} waited in {'it' if len(stopped) == 1 else 'them'} "
                    "until the run's deadline stopped them."
                    if stopped
                    else ""
                ),
                evidence,
                "Collectives pair by their position in their group's sequence, not by name; ops that gloo runs "
                "differently (barrier and all_reduce, for example) never pair, so a member left in one of them "
                f"waits for a partner that never comes until {own}: new_group's timeout= if it was given, else "
                f"torch's default, not the run's or init_process_group's ({DEFAULT_TIMEOUTS}). Make every member "
                "of the group call the same collectives on it in the same order." + (f" {later[1]}" if later else ""),
                ranks=sorted(at),
                site=_site(next(iter(at.values()))),
            )
    return None


def _subgroup_deadline(f: Facts, at: dict[int, Event]) -> tuple[str, list[int], list[str]]:
    """For the members' calls ``at`` on a subgroup: the subgroup's own timeout in words, the members the run's
    deadline stopped in them, and the evidence line saying so (review73c M5: "until the group's timeout" next to
    timeout=2, and the deadline unsaid; review90d M1: the same for a subgroup call some members skipped)."""
    timeouts = {e.timeout for e in at.values() if isinstance(e.timeout, (int, float))}
    own = (
        f"the subgroup's own timeout ({_seconds_words(next(iter(timeouts)))} here, as the record shows it)"
        if len(timeouts) == 1
        else "the subgroup's own timeout"
    )
    stopped = [m for m in sorted(at) if f.run[m].status == STOPPED and at[m].end is None]
    lines = (
        [
            f"{rank_list(stopped)} {'was' if len(stopped) == 1 else 'were'} stopped by the run's deadline "
            f"({f.run.deadline:g} s) in it, before {own} ran out: the run's timeout ({f.run.timeout:g} s) is the "
            "default group's, not the subgroup's"
        ]
        if stopped
        else []
    )
    return own, stopped, lines


def _subgroup_shortfalls(f: Facts) -> list[tuple[tuple[int, ...], dict[int, list[Event]], int, list[int], list[int]]]:
    """Each subgroup position some members called and the others never reached, a member that called it having
    failed: (members, each member's calls on the group, position k, the members that made call #k, those that
    did not), in the order of :func:`_subgroup_calls`."""
    found = []
    for members, calls in _subgroup_calls(f).values():
        counts = {m: len(calls.get(m, ())) for m in members if 0 <= m < f.run.world_size}
        if len(set(counts.values())) < 2:
            continue
        k = min(counts.values()) + 1  # the first position of the subgroup's sequence a member never reached
        made = [m for m in counts if counts[m] >= k]
        missing = [m for m in counts if counts[m] < k]
        if not any(m in f.failed for m in made):
            continue
        if all(m in f.failed and failed_by_itself(f.run[m]) for m in missing):
            continue  # they failed by themselves before it (round 39, ART #919: a ValueError): not a condition
        found.append((members, calls, k, made, missing))
    return found


def _left_waiting_in(f: Facts, rank: int) -> Event | None:
    """The collective call, of any group, a rank that did not finish was left waiting in: its last, if that
    never returned or failed after waiting for its peers."""
    if rank not in f.failed:
        return None
    made = [e for e in _calls_of_every_group(f.run, rank) if e.name not in GROUP_MAKERS]
    last = made[-1] if made else None
    if last is not None and (last.end is None or (last.error and _waited(last))):
        return last
    return None


def _shortfall_root(f: Facts, found: list) -> tuple[int, list[tuple[int, dict[int, Event]]]]:
    """Follow the first shortfall of ``found`` to the one its chain of waits started from (review83d C1/M4: rank 0
    waited in a barrier of ranks [0, 1] for rank 1, which waited in a barrier of ranks [1, 2] that rank 2 never
    called; told as rank 1 never calling the first, rank 2's missing call unsaid): the index of that root, and
    each link before it (the index of the shortfall whose missing members waited elsewhere, and the call each
    of them was left waiting in), in the chain's order."""
    links: list[tuple[int, dict[int, Event]]] = []
    i = 0
    while True:
        members, _, _, _, missing = found[i]
        waiting = {m: _left_waiting_in(f, m) for m in missing}
        following = None
        for j, (_, calls, k, made, _) in enumerate(found):
            if j == i or j in (x for x, _ in links):
                continue
            if all(
                e is not None and m in made and e.group is not None and len(calls[m]) >= k and calls[m][k - 1] is e
                for m, e in waiting.items()
            ):
                following = j
                break
        if following is None:
            return i, links
        links.append((i, waiting))
        i = following


def rule_subgroup_only_some(f: Facts) -> Diagnosis | None:
    """A collective on a subgroup that some of its members called and the others never reached (the default
    group's calls agree: subgroups are numbered apart, so the default group's rules cannot see it)."""
    if not f.failed or f.first_diff or f.split:
        return None
    found = _subgroup_shortfalls(f)
    if not found:
        return None
    members, calls, k, made, missing = found[0]
    refused = [m for m in made if _refused(f.run[m], calls[m][k - 1])]
    if refused and all(m in f.failed and _peer_gone(f.run[m]) for m in missing):
        # review70b M2: a member's own call raised (torch refused src=0, not a member of the group) and the
        # missing member failed when its process ended, before reaching the call (still connecting in
        # new_group, or waiting on it elsewhere): the ValueError is the cause, not a condition
        event = calls[refused[0]][k - 1]
        message = _clip(f.run[refused[0]].error_message.splitlines()[0], 200).rstrip(".")
        ended = "; ".join(f"rank {m}: {_clip(f.run[m].error_message.splitlines()[0])}" for m in missing)
        return _rank_failed(
            f.run,
            refused,
            f"inside its {_op_name(event)} #{k} on the group of ranks {list(members)}, before sending anything: "
            f"{message}; {rank_list(missing)}, a member too, failed before reaching that call, on a closed "
            f"connection ({ended})",
            _failure_evidence(f),
            _site(event),
        )
    root, links = _shortfall_root(f, found)
    members, calls, k, made, missing = found[root]
    event = calls[made[0]][k - 1]
    of = f" of ranks {list(members)}" if links else ""  # two subgroups are told of: which one
    evidence = [f"{rank_list(made)} called {_op_name(event)} #{k} of the subgroup{of} {_called_at(event)}"]
    for m in missing:
        last = calls.get(m, [])[-1:] or [None]
        ended = _how_it_ended(f.run[m], f.calls[m], f.flights.get(m))
        made_before = f"; its last call on this subgroup was #{k - 1}" if last[0] is not None else ""
        evidence.append(f"rank {m} (a member) never made a {ordinal(k)} call on it: it {ended}{made_before}")
    evidence += _error_evidence(f.run, [m for m in made if m in f.failed])
    _, stopped, lines = _subgroup_deadline(f, {m: calls[m][k - 1] for m in made})
    evidence += lines  # review90d M1: how the members left waiting ended, and why the run's timeout did not end it
    chain = []  # the ranks that waited, in turn, for the ones left waiting in it, nearest first
    for i, waiting in reversed(links):
        members_i, calls_i, k_i, made_i, missing_i = found[i]
        call = calls_i[made_i[0]][k_i - 1]
        theirs = next(iter(waiting.values()))
        number = _like(f, missing_i[0], theirs).index(theirs) + 1
        they = "it was" if len(missing_i) == 1 else "they were"
        chain.append(
            f"{sentence_start(rank_list(made_i))} waited in turn for {rank_list(missing_i)} in {_op_name(call)} "
            f"#{k_i} on the group of ranks {list(members_i)} at {_place(call)}, which {rank_list(missing_i)} never "
            f"reached: {they} waiting in {_op_name(theirs)} #{number} on the group of ranks "
            f"{_members(f.run, theirs)}."
        )
        evidence.append(
            f"{rank_list(made_i)} called {_op_name(call)} #{k_i} of the subgroup of ranks {list(members_i)} "
            f"{_called_at(call)} and waited in it for {rank_list(missing_i)}, which never made a {ordinal(k_i)} "
            f"call on that group: "
            + "; ".join(
                f"rank {m} {_how_it_ended(f.run[m], f.calls[m], f.flights.get(m))}, while in "
                f"{_op_name(e)} #{number} on the group of ranks {_members(f.run, e)}"
                for m, e in waiting.items()
            )
        )
        evidence += _error_evidence(f.run, [m for m in made_i if m in f.failed])
    return Diagnosis(
        "only-some-ranks",
        f"A collective of a subgroup reached by only some of its members: {rank_list(made)} called "
        f"{_op_name(event)} #{k} on the group of ranks {list(members)} at {where_text(event)}"
        f"{called_from(chain_of(event))}; {rank_list(missing)}, in that group too, never did."
        + (
            f" {sentence_start(rank_list(stopped))} waited in it until the run's deadline stopped "
            f"{'it' if len(stopped) == 1 else 'them'}: the run's timeout is the default group's, not this "
            "subgroup's."
            if stopped
            else ""
        )
        + "".join(" " + sentence for sentence in chain),
        evidence,
        "Every member of a process group must call each of its collectives, in the same order. A condition "
        "around a subgroup's collective (`if tp_rank == 0:`) must select the whole subgroup or none of it; "
        "to involve only some ranks, use a group of exactly those ranks (barrierlab.lint checks the "
        "members of groups it can see)."
        + (
            " A member left waiting in a subgroup's collective waits for the timeout= given to new_group, else "
            f"torch's default, not the run's or init_process_group's ({DEFAULT_TIMEOUTS})."
            if stopped
            else ""
        )
        + (
            f" The call to add is {rank_list(missing)}'s: "
            f"{rank_list(sorted({r for i, _ in links for r in found[i][3]}))} only waited, in another group, for "
            f"{rank_list(made)}, held up by it."
            if chain
            else ""
        ),
        ranks=made,
        site=_site(event),
    )


def _peer_gone(result) -> bool:
    """Whether a rank raised on a closed connection (a peer's process ended), not by itself."""
    known = explain_error(result.error_message or "") if result.status == RAISED else None
    return known is not None and known[0] == "peer gone"


def _refused(result, event: Event) -> bool:
    """Whether ``result``'s rank failed by itself inside ``event``, with an error of its own (torch refusing the
    call's arguments, review70b M2: ``ValueError: Global rank 0 is not part of group``), not one of waiting."""
    if not (result.status == RAISED and failed_by_itself(result) and event.error):
        return False
    return event.error.splitlines()[0] == (result.error_message or "").splitlines()[0] and not _waited(event)


def _dtypes_only(calls: dict[int, list[Event]]) -> bool:
    """Whether the first call whose tensors differ between ranks differs in dtypes only (the shapes agree)."""
    depth = min((len(c) for c in calls.values()), default=0)
    for k in range(depth):
        at = [c[k] for c in calls.values()]
        if len({e.name for e in at}) != 1:
            return False
        sizes = {repr(e.sizes) for e in at}
        dtypes = {repr(e.dtypes) for e in at}
        if len(sizes) > 1:
            return False
        if len(dtypes) > 1:
            return True
    return False


def _aborted_in_shape_call(f: Facts) -> list[int]:
    """The ranks gloo aborted on a size mismatch in the call whose tensors differed between the ranks (their last
    recorded call)."""
    if f.shape_k is None:
        return []
    return [r for r in f.failed if _size_abort(f, r) and len(f.calls.get(r, [])) == f.shape_k]


def _returned_after_shape_mismatch(f: Facts) -> str:
    """What the ranks that finished returned, said when they returned the same value (review95d F1: "unreduced or
    partly reduced" of ranks 1-3 of a 4-rank all_reduce that each returned [3.0, 4.0], rank 0's last two elements,
    neither their own data nor a partial sum). Only the run's values are said: what gloo copies where differs with
    the sizes."""
    if len(f.calls) < 2 or any(len(c) != 1 for c in f.calls.values()):
        return ""  # the value a rank returned is the mismatched call's result only when it made no other
    done = [r for r in f.run.ranks if r.ok and r.rank in f.calls]
    values = {short_repr(r.value) for r in done}
    if not done or len(values) != 1 or done[0].value is None:
        return ""
    return (
        f" Here {rank_list([r.rank for r in done])} returned {values.pop()} with no error (this collective was "
        f"{'its' if len(done) == 1 else 'their'} only one)."
    )


def rule_different_sizes(f: Facts) -> Diagnosis | None:
    """The same collective got tensors of different sizes or dtypes on different ranks, or object lists of
    different lengths where every rank must pass the same length."""
    if not f.shapes:
        return None
    evidence = list(f.shapes) + [
        f"rank {r} {_how_it_ended(f.run[r], f.calls.get(r, []), f.flights.get(r))}" for r in f.failed
    ]
    evidence += _abort_evidence(f) + _error_evidence(f.run, f.failed)
    silent = not f.failed
    aborted = _aborted_in_shape_call(f)
    returned = [r.rank for r in f.run.ranks if r.ok and r.rank in f.calls]
    if f.failed and returned:  # review65b note: rank 0 finished with [2, 2, 2, 2] where the sum was 4 each
        evidence.append(
            f"{rank_list(returned)} finished anyway: {'its' if len(returned) == 1 else 'their'} result of that "
            "collective, and what was computed from it, cannot be trusted: the ranks did not agree on what they "
            "exchanged"
        )
    caught = _caught_in_shape_call(f)
    if caught:
        evidence += caught[1]
    if f.shape_what.startswith("all-to-all"):
        advice = (
            "An all-to-all sends rank j the j-th block of each rank's input and expects the i-th block of its "
            "output from rank i; without split sizes, all_to_all_single cuts each rank's tensors into equal "
            "blocks, so every rank must hold the same number of elements. When the ranks hold different numbers, exchange the counts "
            "first (an all_to_all_single of the per-rank counts) and pass them as input_split_sizes and "
            "output_split_sizes, or pad every rank to the same size."
        )
    elif f.shape_what.startswith("lists"):
        advice = (
            "broadcast_object_list sends one size per object first, so every rank must pass a list of the "
            "source's length (only the source's objects are sent; the others' entries are overwritten). When "
            "the receivers cannot know the length, send the list as one object — [shards] on the source, "
            "[None] elsewhere — or broadcast the length first."
        )
    else:
        same = (  # review63b M2: int64 against float64, the same shape
            "Here the shapes agree and the dtypes differ: make every rank pass the same dtype "
            "(torch.tensor(x, dtype=torch.float64) rather than a dtype taken from each rank's Python value)."
            if _dtypes_only(f.calls)
            else "Make every rank pass the same shape (pad the tensor, or all_gather the sizes first)."
        )
        advice = (
            "A collective pairs the ranks' calls by position and assumes they agree on sizes and dtypes. On gloo "
            "a mismatch can hang until the timeout, abort, or return wrong data on some ranks with no error."
            + _returned_after_shape_mismatch(f)
            + ("" if f.shape_crossed else f" {same}")
        )
    if f.shape_crossed:
        advice = (
            f"Here the ranks made {'it' if silent else 'the call'} from different lines: the calls that paired are "
            "different calls of the program, so some rank skipped a collective before it (or made one more), on a "
            "condition that differed between the ranks, and each later call paired with another rank's different "
            "one. Make every rank make the same collectives in the same order: enter the collective on every rank, "
            "a rank with nothing to contribute passing a value that leaves the result right. " + advice
        )
    return Diagnosis(
        "different-sizes",
        f"Ranks passed {f.shape_what} to the same collective ({f.shape_at})"
        + (f": gloo aborted {rank_list(aborted)} in it" if aborted else "")
        + (": nothing failed, but the results are wrong." if silent else ".")
        + (f" {caught[0]}" if caught else ""),
        evidence,
        advice,
        ranks=sorted(f.calls),
        site=None,
    )


#: The exceptions a handler must name to catch a collective's error (torch raises RuntimeError or its subclass
#: DistBackendError on gloo); a bare ``except:`` catches it too.
_CATCHES_A_COLLECTIVE_ERROR = {"Exception", "BaseException", "RuntimeError", "DistBackendError", "DistError"}


def _except_around(event: Event) -> tuple[int, str] | None:
    """The innermost try/except of the learner's code around ``event`` whose handler catches a collective's error:
    (how many frames out it is, 0 in the function that made the call; where its handler is), or None."""
    frames = [(event.file, event.line)] + [(path, line) for path, line, _ in event.callers]
    for depth, (path, line) in enumerate(frames):
        spans = _function_spans(path) if path and line and is_learners(path) else None
        if not spans:
            continue
        around = [node for first, last, _, node in spans if first <= line <= last]
        scope = max(around, key=lambda node: node.lineno) if around else None
        if scope is None:
            continue
        tries = [
            node
            for node in ast.walk(scope)
            if isinstance(node, ast.Try)
            and any(stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) for stmt in node.body)
            and _innermost_scope(scope, node)
        ]
        for node in sorted(tries, key=lambda node: node.lineno, reverse=True):
            for handler in node.handlers:
                names = [] if handler.type is None else list(getattr(handler.type, "elts", [handler.type]))
                if handler.type is None or any(
                    (n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "")) in _CATCHES_A_COLLECTIVE_ERROR
                    for n in names
                ):
                    return depth, Site(path, handler.lineno, "").place
    return None


def _innermost_scope(scope: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` lies in ``scope`` itself, not in a function defined inside it."""
    inner = [
        n
        for n in ast.walk(scope)
        if n is not scope and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    ]
    return not any(n.lineno <= node.lineno <= (n.end_lineno or n.lineno) for n in inner)


def _caught_in_shape_call(f: Facts) -> tuple[str, list[str]] | None:
    """When a rank's call with the mismatched tensors failed and the rank went on (its code caught the error), a
    sentence for the headline, and evidence: who caught it, where, what came next, and which ranks' call returned
    without an error (review91d M3: rank 1's all_reduce timed out inside the function's own try/except, its barrier
    then failed on the group the timeout had closed; rank 0's all_reduce had returned in 3 ms, without error)."""
    k = f.shape_k
    if k is None:
        return None
    run = f.run
    at = {r: c[k - 1] for r, c in f.calls.items() if len(c) >= k}
    went_on = {r: e for r, e in at.items() if e.error and (len(f.calls[r]) > k or run[r].ok)}
    if not went_on:
        return None
    sentences, evidence = [], []
    for r, e in sorted(went_on.items()):
        found = _except_around(e)
        if found is None:
            who = "the rank's own code"
        elif found[0] == 0:
            who = f"the function's own try/except (its except at {found[1]})"
        else:
            who = f"a try/except of the learner's code further out (its except at {found[1]})"
        after = f.calls[r][k] if len(f.calls[r]) > k else None
        then = (
            f"it went on to {after.name} #{call_numbers(f.calls[r][: k + 1])[-1]} at {_place(after)}"
            if after is not None
            else f"it {_finished_words(run[r])}"
        )
        sentences.append(f"Rank {r}'s error in it was swallowed by {who}, and {then}.")
        evidence.append(
            f"rank {r}'s {e.name} #{call_numbers(f.calls[r][:k])[-1]} at {_place(e)} raised "
            f"“{_clip(e.error.splitlines()[-1], 120)}”, which {who} caught: {then}"
        )
    clean = [r for r, e in sorted(at.items()) if e.end is not None and not e.error]
    if clean:
        calls = "call" if len(clean) == 1 else "calls"
        sentences.append(
            f"{sentence_start(rank_list(clean))}'s {calls} returned without error, with data that cannot be "
            "trusted: the ranks did not agree on what they exchanged."
        )
        evidence += [
            f"rank {r}'s {at[r].name} #{call_numbers(f.calls[r][:k])[-1]} returned without error after "
            f"{at[r].end - at[r].start:.3f} s"
            for r in clean
        ]
    return " ".join(sentences), evidence


def _root_mismatch(calls: dict[int, list[Event]]) -> tuple[int, dict[int, Event]] | None:
    """The first position where every rank made the same rooted collective (broadcast, reduce, gather, scatter
    and their object variants) on the same group but the ranks had different roots (:func:`ops.root_of`: as
    named, or the op's default when a rank named none): (its number, the calls)."""
    depth = min((len(c) for c in calls.values()), default=0)
    for i in range(depth):
        at = {r: c[i] for r, c in calls.items()}
        if len({e.name for e in at.values()}) > 1:
            return None
        if next(iter(at.values())).name not in ops.ROOTED or len({e.group for e in at.values()}) > 1:
            continue
        roots = {r: ops.root_of(e) for r, e in at.items()}
        if None not in roots.values() and len(set(roots.values())) > 1:
            return i + 1, at
    return None


def _root_words(event: Event) -> str:
    """How a rooted call named its root: 'src=1', 'group_dst=0', or 'no dst (so rank 0)'."""
    for key in PEER_ARGUMENTS:
        if key in event.peer:
            return f"{key}={event.peer[key]}"
    op = ops.BY_NAME[event.name]
    return f"no {op.root} (so rank {op.default_root})"


def _different_reduce_ops(f: Facts) -> Diagnosis | None:
    """Every rank finished after the same calls, but at one reducing collective the ranks passed different
    ``op=`` (one SUM, one MAX): gloo pairs them and each rank reduces its share of the tensor with its own op, so
    every rank gets the same mix, which is what no rank asked for, and nothing fails (review46b M1: a 4-element
    all_reduce of SUM and MAX summed one half and took the maximum of the other). Asked by :func:`rule_ok`."""
    if f.cut:  # pair what every rank kept by its number in the group's sequence (attack27 a09: SUM against MAX
        # at call #101 of 8,000, in the kept head, was told "the calls every rank kept agree")
        kept = {r: {e.pos: e for e in c if e.pos is not None and e.group is None} for r, c in f.calls.items()}
        common = sorted(set.intersection(*(set(by_pos) for by_pos in kept.values()))) if kept else []
        pairs = [(pos, {r: kept[r][pos] for r in kept}) for pos in common]
    else:
        depth = min((len(c) for c in f.calls.values()), default=0)
        pairs = [(k + 1, {r: c[k] for r, c in f.calls.items()}) for k in range(depth)]
    for number, at in pairs:
        first = next(iter(at.values()))
        op = ops.BY_NAME.get(first.name)
        if op is None or not op.reduces or any(e.name != first.name for e in at.values()):
            continue
        by_op: dict[str, list[int]] = {}
        for rank, event in sorted(at.items()):
            by_op.setdefault(event.reduce_op or "SUM", []).append(rank)
        if len(by_op) < 2:
            continue
        sides = "; ".join(f"{rank_list(ranks)} passed op={op}" for op, ranks in by_op.items())
        advice = (
            "Pass the same op= on every rank: decide it from a value every rank shares, not from one rank's own "
            "data or role."
        )
        if len({_chain_key(e) for e in at.values()}) > 1:  # review61b M2: calls of other lines, in another order
            advice = (
                f"The ranks' {first.name} #{number} came from different lines, so the ops differ because the ranks "
                "made different calls at this position (another order of the same calls, or other calls): make "
                "the same calls, in the same order, with the same op= on every rank."
            )
        return Diagnosis(
            "different-reduce-ops",
            f"Ranks passed different reduce ops to {first.name} #{number} ({sides}): every rank finished, but gloo "
            "does not check that the ops agree, and what comes back depends on the tensor's size and each rank's "
            "part in the algorithm: one rank's op, neither (4 ranks, 1 element, SUM and MAX: a value that is "
            "neither sum nor max), or a mix, element by element. It cannot be relied on.",
            [f"rank {r} at {where_text(e)}" for r, e in sorted(at.items())],
            advice,
            ranks=sorted(at),
            site=_site(first),
        )
    return None


def rule_different_roots(f: Facts) -> Diagnosis | None:
    """Every rank made the same rooted collective, but the ranks named different roots: each group of ranks waits
    for a root of its own: some calls may return with their own root's data, depending on the world size (review45b:
    on gloo, roots 0 and 3 on 6 ranks, ranks 2 and 5 did), while the others wait until the timeout."""
    found = _root_mismatch(f.calls)
    if found is None:
        return None
    number, at = found
    by_root: dict[str, list[int]] = {}
    for rank, event in sorted(at.items()):
        by_root.setdefault(_root_words(event), []).append(rank)
    e0 = at[min(at)]
    key = ops.BY_NAME[e0.name].root
    sides = "; ".join(f"{rank_list(ranks)} passed {words}" for words, ranks in by_root.items())
    evidence = [f"{e0.name} #{number}: " + "; ".join(f"rank {r} at {where_text(e)}" for r, e in sorted(at.items()))]
    evidence += [f"rank {r} {_how_it_ended(f.run[r], f.calls.get(r, []), f.flights.get(r))}" for r in f.failed]
    return Diagnosis(
        "different-roots",
        f"Ranks named different roots for the same collective: {e0.name} #{number} ({sides}).",
        evidence + _abort_evidence(f) + _error_evidence(f.run, f.failed),
        f"A {e0.name} has one root for its whole group: every rank of the group passes the same {key} (a global "
        f"rank). To {'send from' if key == 'src' else 'collect on'} one rank per node, give each node its own group "
        f"(dist.new_subgroups()) and {e0.name} within it {'from' if key == 'src' else 'to'} that node's first rank.",
        ranks=sorted(at),
        site=_site(e0),
    )


def _abort_evidence(f: Facts) -> list[str]:
    return [
        f"gloo aborted rank {r} ({_signal_name(f.run[r].signal)}) with “{_clip(message, 200)}” (in its stderr)"
        for r, message in sorted(f.aborted.items())
    ]


def _timeout_of(run: Run, event: Event) -> float | None:
    """Seconds ``event`` could wait for its peers: as recorded (its own ``timeout=``, else its group's), else
    what gloo's error says it waited, else the run's timeout."""
    if event.timeout is not None:
        return event.timeout
    match = re.search(r"Timed out waiting (\d+)ms", event.error or "")
    if match:
        return int(match.group(1)) / 1000
    timeout = getattr(run, "timeout", None)
    return timeout if isinstance(timeout, (int, float)) and timeout == timeout and timeout > 0 else None


def _late_arrival(f: Facts) -> tuple[int, dict[int, Event], list[int], list[int], float] | None:
    """The first call every rank made (the same op) that some ranks entered only after the others' timeout had
    run out there: (its number, the calls, the late ranks, the ranks that gave up, the timeout that ran out)."""
    depth = min((len(c) for c in f.calls.values()), default=0)
    limit = min(depth, f.first_diff - 1) if f.first_diff else depth
    for i in range(limit):
        at = {r: c[i] for r, c in f.calls.items()}
        if len({e.name for e in at.values()}) > 1:
            return None
        expiry = {}
        for rank, event in at.items():
            timeout = _timeout_of(f.run, event)
            if timeout is not None and (event.error or event.end is None):
                expiry[rank] = (event.start + timeout, timeout)
        if not expiry:
            continue
        first, timeout = min(expiry.values())
        late = sorted(r for r, e in at.items() if e.start > first)
        gave_up = sorted(r for r in expiry if r not in late)
        if late and gave_up:
            return i + 1, at, late, gave_up, timeout
    return None


def rule_late_arrival(f: Facts) -> Diagnosis | None:
    """Every rank reached the collective, but some only after the others' timeout had run out there: a rank
    busy (preparing data, loading a checkpoint) for longer than the timeout the others wait with."""
    if not f.failed:
        return None
    found = _late_arrival(f)
    if found is None:
        return None
    k, at, late, gave_up, timeout = found
    event = at[late[0]]
    since = min(at[r].start for r in gave_up)
    gap = max(at[r].start for r in late) - since
    them, their = ("they", "their") if len(gave_up) > 1 else ("it", "its")
    waiting = {r: at[r] for r in gave_up}
    headline = (
        f"{rank_list(late)} reached {event.name} #{k} at {_sides({r: at[r] for r in late})} {gap:.1f} s after "
        f"{rank_list(gave_up)} (at {_sides(waiting)}); {their} {timeout:g} s timeout ran out first, so {them} "
        f"gave up before {rank_list(late)} arrived."
    )
    evidence = []
    for rank in late:
        calls = f.calls[rank]
        before = calls[k - 2].end if k > 1 else f.run[rank].started
        if before is not None and before == before:
            what = f"its {calls[k - 2].name} #{k - 1}" if k > 1 else f"the {_code_word(f.run[rank])} started"
            evidence.append(
                f"{rank_list([rank])} ran its own code for {at[rank].start - before:.1f} s since {what}, before "
                f"{event.name} #{k} {_called_at(at[rank])}"
            )
            quiet = _longest_quiet(f.run, rank, before, at[rank].start)
            if quiet:
                evidence.append(quiet)
    first = waiting[gave_up[0]]
    evidence.append(
        f"{rank_list(gave_up)} waited with a timeout of {timeout:g} s in {event.name} #{k} {_called_at(first)}"
    )
    evidence += _outcomes(f.run, at)
    return Diagnosis("late-arrival", headline, evidence, _LATE_ADVICE, ranks=late, site=_site(event))


#: A stretch with nothing recorded shorter than this is not told as where a late rank spent its time.
QUIET_SHOWN = 1.0


def _longest_quiet(run: Run, rank: int, since: float | None, until: float) -> str | None:
    """Where a late rank spent its time (round 43's CIFAR-10 item: "rank 0 ran its own code for 22.3 s", the 20 s
    it spent in the throttled download unnamed): the longest stretch between two of its recorded events (calls,
    file accesses) from ``since`` to ``until`` (its late call), and the lines on each side of it; None when no
    stretch of :data:`QUIET_SHOWN` seconds or more lies between two events of the learner's lines."""
    events = sorted(
        (e for e in run[rank].events if e.start is not None and e.file and (since is None or e.start >= since)),
        key=lambda e: e.start,
    )
    events = [e for e in events if e.start < until]
    best = None
    for a, b in zip(events, events[1:]):
        left = a.end if a.end is not None and a.end >= a.start else a.start
        gap = b.start - left
        if best is None or gap > best[0]:
            best = (gap, a, left, b)
    if best is None or best[0] < QUIET_SHOWN:
        return None
    gap, a, left, b = best
    same = (a.file, a.func) == (b.file, b.func)
    return (
        f"rank {rank}'s longest stretch with nothing recorded before it arrived: {gap:.1f} s, from {a.name} at "
        f"{where_text(a)} ({_t(run, left)}) to {b.name} at {where_text(b)} ({_t(run, b.start)})"
        + (f", both in {a.func}" if same and a.func else "")
        + " (the record holds collectives and file accesses, not what ran between them: a computation, a sleep, "
        "a download)"
    )


#: What to do about a rank that reached a collective after the others' timeout had run out there.
_LATE_ADVICE = (
    "A rank waits in a collective at most the timeout in force — its group's (init_process_group(timeout=...)) "
    "or, on gloo, the call's own (barrier(timeout=...); NCCL's barrier ignores it and waits the group's: "
    "`ProcessGroupNCCL::barrier` in pytorch's torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp passes its "
    "all_reduce only asyncOp) — then "
    "gloo raises, and the group cannot be used again (notebook 04 §1 shows it). Raise the timeout above the time the slow rank needs "
    "before it arrives (timeout= on init_process_group, or on gloo on the call the others wait in), or move the "
    "long preparation before the group starts waiting (before init_process_group, or into a separate step that "
    f"caches its result); {DEFAULT_TIMEOUTS}."
)
_TIMED_OUT_MS = re.compile(r"Timed out waiting (\d+)ms")


def rule_late_torch_arrival(f: Facts) -> Diagnosis | None:
    """:func:`rule_late_arrival` for a collective torch issued (round 23, measured unseen: rank 0's 7 s download
    before ``DDP(model)``, whose construction-time collective the other rank entered with the group's 4 s
    timeout; no call of the learner's, so the headline was blind). The calls come from torch's flight record,
    which says when each was issued; the timeout from gloo's message on the ranks that gave up."""
    if not f.failed or f.first_diff:
        return None
    from barrierlab.calls import collective_calls  # noqa: PLC0415 - reads torch's flight record

    merged = collective_calls(f.run)
    if not merged or len(merged) < f.run.world_size:
        return None
    for i in range(min(len(c) for c in merged.values())):
        at = {r: c[i] for r, c in merged.items()}
        if len({c.op for c in at.values()}) > 1 or any(c.start is None for c in at.values()):
            return None
        if all(c.kind == "yours" for c in at.values()):
            continue  # the learner's own calls: rule_late_arrival's
        expiry = {}
        for rank, call in at.items():
            timed_out = _TIMED_OUT_MS.search(f.run[rank].error_message or "")
            if timed_out and rank in f.failed and i == len(merged[rank]) - 1:
                expiry[rank] = (call.start + int(timed_out.group(1)) / 1000, int(timed_out.group(1)) / 1000)
        if not expiry:
            continue
        first, timeout = min(expiry.values())
        late = sorted(r for r, c in at.items() if c.start > first)
        gave_up = sorted(r for r in expiry if r not in late)
        if not (late and gave_up):
            continue
        call = at[late[0]]
        gap = max(at[r].start for r in late) - min(at[r].start for r in gave_up)
        them, their = ("they", "their") if len(gave_up) > 1 else ("it", "its")
        headline = (
            f"{rank_list(late)} reached {call.label} #{i + 1}, reached from {call.where}, {gap:.1f} s after "
            f"{rank_list(gave_up)}; {their} {timeout:g} s timeout ran out first, so {them} gave up before "
            f"{rank_list(late)} arrived."
        )
        evidence = []
        for r in late:
            if f.run[r].started is None:
                continue
            evidence.append(
                f"{rank_list([r])} ran its own code for {at[r].start - f.run[r].started:.1f} s since the "
                f"{_code_word(f.run[r])} started, before torch issued {call.label} #{i + 1}"
            )
            quiet = _longest_quiet(f.run, r, f.run[r].started, at[r].start)
            if quiet:
                evidence.append(quiet)
        evidence.append(
            f"{rank_list(gave_up)} waited with a timeout of {timeout:g} s in {call.label} #{i + 1} (gloo: "
            f'"Timed out waiting {round(timeout * 1000)}ms")'
        )
        return Diagnosis(
            "late-arrival", headline, evidence + _failure_evidence(f), _LATE_ADVICE, ranks=late, site=call.site
        )
    return None


def rule_p2p_late_arrival(f: Facts) -> Diagnosis | None:
    """A send and the recv it pairs with, on two ranks, where one rank reached its call only after the other's
    timeout had run out there (round 21: a pipeline stage still compiling while the next stage's recv, on a
    subgroup made without timeout=, gave up)."""
    blocked = _blocked_in_p2p(f)
    for rank, call in sorted(blocked.items()):
        peer = _p2p_peer(call)
        other = blocked.get(peer) if peer is not None else None
        if other is None or not _p2p_match(call, rank, other, peer) or call.start > other.start:
            continue
        timeout = call.timeout
        gap = other.start - call.start
        if not timeout or gap < 0.9 * timeout:
            continue
        to = "to" if other.name == "send" else "from"
        headline = (
            f"rank {peer} reached {other.name} {to} rank {rank} at {where_text(other)} {gap:.1f} s after rank "
            f"{rank} began its {call.name} at {where_text(call)}; rank {rank}'s {timeout:g} s timeout ran out "
            f"first, so it gave up before rank {peer} arrived."
        )
        evidence = [
            f"rank {rank} waited with a timeout of {timeout:g} s in {call.name} {_called_at(call)}",
            f"rank {peer} entered its {other.name} {gap:.1f} s later {_called_at(other)}",
        ] + _outcomes(f.run, {rank: call, peer: other})
        return Diagnosis(
            "late-arrival",
            headline,
            evidence,
            "A send or recv waits for its peer at most its group's timeout: the timeout= given when that group "
            "was made — init_process_group's for the default group, new_group's for a subgroup, which does not "
            "inherit init_process_group's (without one it gets torch's default) — then gloo raises. Give the "
            "group a timeout above the time the late rank needs before it arrives (timeout= on new_group for a "
            f"subgroup), or move the long work before the other rank starts waiting; {DEFAULT_TIMEOUTS}.",
            ranks=[peer],
            site=_site(other),
        )
    return None


def _blocked_in_p2p(f: Facts) -> dict[int, Event]:
    """The ranks that did not finish whose last call was a blocking ``send``/``recv`` that never returned
    normally (still inside it, or left with an error of waiting: a timeout, a peer gone), with that call. A call
    torch refused before sending anything (round 18: gloo's "input tensor has to be contiguous") waited for no one."""
    found = {}
    for rank in f.failed:
        calls = [e for e in f.run[rank].events if e.kind in CALL_KINDS]
        last = calls[-1] if calls else None
        if last is not None and last.kind == "p2p" and last.name in ("send", "recv"):
            if last.end is None or (last.error and _waited(last)):
                found[rank] = last
    return found


#: The kinds of error (:func:`explain_error`) a call raises after waiting for its peers.
_WAITING_ERRORS = frozenset(
    {"gloo timeout", "peer gone", "poisoned group", "monitored barrier", "monitored barrier answer"}
)
#: A call that failed with an error of no known kind this fast refused its arguments rather than waited.
_REFUSED_WITHIN = 0.1


def _waited(event: Event) -> bool:
    """Whether a call that failed had been waiting for its peers: its error is one of waiting, or of no known
    kind after it had been in the call a while."""
    explained = explain_error(event.error or "")
    if explained is not None:
        return explained[0] in _WAITING_ERRORS
    return event.end is None or event.end - event.start >= _REFUSED_WITHIN


def _p2p_peer(event: Event) -> int | None:
    peer = event.peer.get("dst", event.peer.get("src"))
    return peer if isinstance(peer, int) else None


#: Seconds by which a rank's wait in one group may seem to end before the other rank gave up in another and
#: still count as lasting until then: each rank writes the end of a call after torch returned it.
_SAME_MOMENT = 0.05


def _members(run: Run, event: Event) -> list[int]:
    """The global ranks of the group ``event`` was made on (the default group: every rank)."""
    return list(event.group_ranks) if event.group is not None and event.group_ranks else list(range(run.world_size))


def _group_calls(f: Facts, rank: int, group: str | None, makers: bool = False) -> list[Event]:
    """A rank's collective calls on one process group (None: the default group), in order, numbered as the ledger
    numbers them (:func:`calls.call_numbers`): the calls making groups (``makers``) apart from the others
    (review94d F2: a ``new_group`` counted before it made "barrier #2 of the default group" of the ledger's #1)."""
    return sorted(
        (e for e in f.run[rank].events if e.is_collective and e.group == group and (e.name in GROUP_MAKERS) == makers),
        key=lambda e: e.start,
    )


def _like(f: Facts, rank: int, event: Event) -> list[Event]:
    """A rank's calls on ``event``'s group of ``event``'s sort (making groups, or not), in order."""
    return _group_calls(f, rank, event.group, event.name in GROUP_MAKERS)


def _cross_group_wait(f: Facts) -> tuple[int, Event, int, Event] | None:
    """Two ranks that waited for each other in collectives of two different process groups: rank r blocked in
    call E (it failed, or never ended) of group A, which needs rank q, while q was blocked in call F of group B,
    which needs r, and neither had entered the other's call at that position — (r, E, q, F). Collectives pair
    only within their own group, so neither call can complete."""
    run = f.run
    for r in f.failed:
        if failed_by_itself(run[r]):
            continue
        for e in (c for c in run[r].events if c.is_collective and (c.error or c.end is None)):
            if e.name not in ops.EVERY_RANK_ON_GLOO:
                continue
            e_end = e.end if e.end is not None else float("inf")
            mine = _like(f, r, e)
            position = mine.index(e) + 1
            for q in _members(run, e):
                if q == r or failed_by_itself(run[q]):
                    continue
                for g in (c for c in run[q].events if c.is_collective and c.group != e.group):
                    if g.name not in ops.EVERY_RANK_ON_GLOO or r not in _members(run, g):
                        continue
                    # a g that ended with an error never completed: q was still waiting in it (stopped at the
                    # deadline, r may have been killed first and q's call then failed on its closed connection)
                    if not (g.start < e_end and (g.end is None or g.error or g.end >= e_end - _SAME_MOMENT)):
                        continue  # q was not still waiting in g when r gave up
                    theirs = _like(f, q, g)
                    entered_a = sum(1 for c in _like(f, q, e) if c.start < g.start)
                    entered_b = sum(1 for c in _like(f, r, g) if c.start < e.start)
                    if entered_a < position and entered_b < theirs.index(g) + 1:
                        return r, e, q, g
    return None


def _group_text(run: Run, event: Event, short: bool = False, named: bool = False) -> str:
    """'the default group' or 'another group, of ranks [0, 1]' ('the other group' when ``short``); ``named``: with
    torch's name of the group, for two groups of the same ranks (review46b: described alike)."""
    if event.group is None:
        return "the default group"
    if short:
        return "the other group"
    name = f" (torch's group {event.group!r})" if named else ""
    return f"another group{name}, of ranks {_members(run, event)}"


def _ran_out(call: Event) -> bool:
    """Whether ``call`` (which ended) lasted about its own timeout: its timeout ended it, not a peer."""
    return call.end is not None and call.timeout is not None and call.end - call.start >= 0.9 * call.timeout


def _gave_up(call: Event) -> str:
    """How a rank left a collective it waited in: its timeout ran out (it lasted about that long), or it failed
    or returned sooner (a peer's process ended, a connection closed), as the record shows it."""
    lasted = call.end - call.start
    if _ran_out(call):
        return f"gave up when its {call.timeout:g} s timeout ran out"
    if call.error:
        known = explain_error(call.error)
        why = known[0] if known else _clip(call.error)
        before = f", before its {call.timeout:g} s timeout" if call.timeout is not None else ""
        return f"failed after {lasted:.1f} s{before} ({why})"
    return f"left it after {lasted:.1f} s"


#: How close to the run's deadline (seconds, on the run's clock) a call's failure counts as the stop's doing.
AT_THE_DEADLINE = 0.25


def _failed_at_the_deadline(run: Run, call: Event) -> bool:
    """Whether ``call`` failed (not by its own timeout) when the run's deadline stopped the ranks: ranks are
    killed one after another, and one whose peer died first can see the closed connection and record the failure
    before its own kill lands."""
    if not run.hit_deadline or not call.error or call.end is None:
        return False
    timed_out = call.timeout is not None and call.end - call.start >= 0.9 * call.timeout
    return not timed_out and call.end >= run.deadline - AT_THE_DEADLINE


def rule_waits_in_different_groups(f: Facts) -> Diagnosis | None:
    """Ranks each waiting in a collective of a different process group for the other: a barrier of one group
    never pairs with a barrier of another, so each waits until the timeout (a library's own group, e.g.
    Lightning's around prepare_data, against a barrier of the default group in the hook it runs)."""
    found = _cross_group_wait(f)
    if found is None:
        return None
    r, e, q, g = found
    run = f.run
    k_e = _like(f, r, e).index(e) + 1
    k_g = _like(f, q, g).index(g) + 1
    named = e.group is not None and g.group is not None and _members(run, e) == _members(run, g)
    ended = sorted((x for x in ((r, e), (q, g)) if x[1].end is not None), key=lambda x: x[1].end)
    if not ended:
        until = (
            "until the deadline stopped them"
            if run[r].status == STOPPED and run[q].status == STOPPED
            else f"until their calls ended (rank {r} {_ended_inside(run[r])}, rank {q} {_ended_inside(run[q])})"
        )
    elif len(ended) == 1:  # review80d C3: one side's own timeout ended its wait; only the other one outlasted it
        (first, call), still = ended[0], (q if ended[0][0] == r else r)
        if _failed_at_the_deadline(run, call) and run[still].status == STOPPED:
            # the other rank's process was killed at the deadline and this one's call failed on the closed
            # connection before its own kill landed (a race of the stop, seen under load): the deadline ended both
            until = (
                f"until the deadline stopped them (rank {first}'s call failed {call.end:.1f} s into the run, as rank "
                f"{still} was stopped)"
            )
        else:
            until = f"until rank {first} {_gave_up(call)} (rank {still} was still waiting in its call: {_ended_inside(run[still])})"
    elif all(_ran_out(call) for _, call in ended):
        # review92d M3: both waits ended on their own timeouts; "until rank 1 gave up" (the first of the two)
        # said rank 0's wait ended because rank 1's did
        limits = {call.timeout for _, call in ended}
        until = (
            f"until each gave up when its own {limits.pop():g} s timeout ran out"
            if len(limits) == 1
            else "until each gave up when its own timeout ran out ("
            + ", ".join(f"rank {x}'s {call.timeout:g} s" for x, call in ended)
            + ")"
        )
    else:
        first, call = ended[0]
        until = f"until rank {first} {_gave_up(call)}"
    headline = (
        f"Ranks waited for each other in different process groups: rank {r} in {e.name} #{k_e} of "
        f"{_group_text(run, e, named=named)} at {_place(e)}{_parts_at(e, None)}, rank {q} in {g.name} #{k_g} of "
        f"{_group_text(run, g, named=named)} at {_place(g)}{_parts_at(g, None)}. A collective pairs only with calls of its own "
        f"group — a barrier in one group never pairs with a barrier in another — so each waited for the other "
        f"{until}."
    )
    evidence = [
        f"rank {r} called {e.name} #{k_e} of {_group_text(run, e)} {_called_at(e)}",
        f"rank {q} called {g.name} #{k_g} of {_group_text(run, g)} {_called_at(g)}",
        f"so neither call could complete: rank {q} "
        f"{'never made' if len(_like(f, q, e)) < k_e else 'made only later'} its {ordinal(k_e)} "
        f"call of {_group_text(run, e, short=True)}, and rank {r} had not entered its {ordinal(k_g)} call of "
        f"{_group_text(run, g, short=True)}",
    ]
    for x, call in ((r, e), (q, g)):
        evidence.append(
            f"rank {x} " + (f"never left it ({_ended_inside(run[x])})" if call.end is None else _gave_up(call))
        )
    evidence += [f"rank {x} {_how_it_ended(run[x], f.calls[x], f.flights.get(x))}" for x in f.failed]
    evidence += _error_evidence(run, f.failed)
    return Diagnosis(
        "different-groups",
        headline,
        evidence,
        "Collectives pair by position within their own process group: every member of a group must reach the "
        "same calls of that group in the same order, and a rank must not block in one group's collective while "
        "another member waits for it in a collective of another group. When a library runs your code on some "
        "ranks only while the others wait for it in a group of its own (Lightning runs prepare_data on one rank "
        "per node inside such a barrier), a collective in that code has no partner: remove it, or move it where "
        f"every rank calls it; {DEFAULT_TIMEOUTS}.",
        ranks=sorted({r, q}),
        site=_site(e),
    )


def _group_wait_cycle(f: Facts) -> list[tuple[int, Event, int]] | None:
    """Three or more ranks each blocked in a collective of a process group for a member that never reached that
    call, because it was blocked in a collective of another group, round to the first (a ring of pairwise
    groups, each rank meeting the next before the previous: attack12 r12): [(rank, its call, the rank it waits
    for), ...] in the cycle's order, or None. Two ranks are :func:`_cross_group_wait`'s."""
    run = f.run
    blocked: dict[int, Event] = {}
    for r in f.failed:
        if failed_by_itself(run[r]):
            continue
        calls = [c for c in run[r].events if c.is_collective and (c.error or c.end is None)]
        if calls and calls[-1].name in ops.EVERY_RANK_ON_GLOO:
            blocked[r] = calls[-1]
    waits: dict[int, int] = {}
    for r, e in blocked.items():
        position = _like(f, r, e).index(e) + 1
        short = [q for q in _members(run, e) if q != r and q in blocked and len(_like(f, q, e)) < position]
        if short:
            waits[r] = short[0]
    for start in sorted(waits):
        chain, r = [], start
        while r in waits and r not in chain:
            chain.append(r)
            r = waits[r]
        if r == start and len(chain) >= 3:
            return [(x, blocked[x], waits[x]) for x in chain]
    return None


def rule_group_wait_cycle(f: Facts) -> Diagnosis | None:
    """A cycle of waits across process groups, of three ranks or more: none of the calls can complete."""
    cycle = _group_wait_cycle(f)
    if cycle is None:
        return None
    run = f.run

    def of(e: Event) -> str:
        return "the default group" if e.group is None else f"the group of ranks {_members(run, e)}"

    steps = [
        f"rank {r} waits in {e.name} #{_like(f, r, e).index(e) + 1} of {of(e)} at {_place(e)} for rank {q}"
        for r, e, q in cycle
    ]
    evidence = [f"rank {r} called {e.name} of {of(e)} {_called_at(e)}" for r, e, _ in cycle]
    evidence += [f"rank {x} {_how_it_ended(run[x], f.calls[x], f.flights.get(x))}" for x in f.failed]
    evidence += _error_evidence(run, f.failed)
    return Diagnosis(
        "group-wait-cycle",
        f"A cycle of waits across process groups: {'; '.join(steps)}. Each rank is blocked in its own call and "
        "never reaches the one the rank before it waits in, so none completes.",
        evidence,
        "Collectives pair only within their own group, and a rank blocked in one group's call cannot reach another "
        "group's: order the groups' calls the same way on every rank (all ranks meet in group (0, 1) first, then "
        f"in (1, 2), ...), or use one collective on a group holding all of them; {DEFAULT_TIMEOUTS}.",
        ranks=[r for r, _, _ in cycle],
        site=_site(cycle[0][1]),
    )


def rule_p2p_cycle(f: Facts) -> Diagnosis | None:
    """Ranks each blocked in a send or recv to the next, round to the first: halo exchanges that all send
    first (NVIDIA/nccl #479), or all receive first."""
    blocked = _blocked_in_p2p(f)
    for start in sorted(blocked):
        cycle, rank = [], start
        while rank in blocked and rank not in cycle:
            cycle.append(rank)
            rank = _p2p_peer(blocked[rank])
        if rank != start or len(cycle) < 2:
            continue
        if any(_size_abort(f, r) for r in cycle):  # gloo aborted it: it was not waiting (round 21's pipeline)
            continue
        if any(_p2p_match(blocked[a], a, blocked[b], b) for a, b in zip(cycle, cycle[1:] + cycle[:1])):
            continue  # a send and the recv it pairs with: they wait for each other's arrival, not in a cycle
        if any(_posted_elsewhere(f, blocked[a], a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1])):
            continue  # review94d F1: a rank's peers do not match (unmatched-p2p), however the waits are ordered
        names = {blocked[r].name for r in cycle}
        first = blocked[cycle[0]]
        to_from = "to" if first.name == "send" else "from"
        other = _cycle_peer_words(f.run.world_size, cycle, {r: _p2p_peer(blocked[r]) for r in cycle}, to_from)
        if len(names) == 1 and len({where_text(blocked[r]) for r in cycle}) == 1 and other:
            waits = [f"{rank_list(cycle)} each wait in {first.name} {to_from} {other} {_called_at(first)}"]
        else:
            waits = [
                f"rank {r} waits in {blocked[r].name} {'to' if blocked[r].name == 'send' else 'from'} rank "
                f"{_p2p_peer(blocked[r])} at {where_text(blocked[r])}"
                for r in cycle
            ]
        why = (
            "a blocking send on gloo returns only once its peer has posted the matching recv"
            if names == {"send"}
            else "a blocking recv returns only when its message has arrived"
            if names == {"recv"}
            else "each call waits for its peer's matching call"
        )
        # review95d F5: a rank waiting in its k-th recv from a peer that had made only k - 1 sends to it, every one
        # of them received (rank 1's second recv, run again by checkpoint recomputation in backward): reordering
        # supplies no send the peer never makes
        sent, received = ordering.point_to_point_calls({x.rank: x.events for x in f.run.ranks}, failed=True)
        extra = []
        for r in cycle:
            e, p = blocked[r], _p2p_peer(blocked[r])
            mine, theirs = (received, sent) if e.name in ("recv", "irecv") else (sent, received)
            key = (p, r) if e.name in ("recv", "irecv") else (r, p)
            made = [x for k, calls in mine.items() if k[:2] == key for x in calls]
            partners = [x for k, calls in theirs.items() if k[:2] == key for x in calls]
            if len(made) >= 2 and e in made and made.index(e) == len(partners) and len(partners) == len(made) - 1:
                verb, noun = ("recv", "send") if e.name in ("recv", "irecv") else ("send", "recv")
                extra.append(
                    f"rank {r}'s {e.name} is its {ordinal(len(made))} {verb} {'from' if verb == 'recv' else 'to'} "
                    f"rank {p}, which had made {_count_of(len(partners), noun)} {'to' if noun == 'send' else 'from'} "
                    f"rank {r}, {'each' if len(partners) > 1 else 'it'} received by an earlier {verb} of rank {r} "
                    f"(at {', '.join(_place(x) for x in made[:-1])})"
                )
        others = _outside_the_cycle(f, cycle)
        also = ""
        if others:  # review70b M6: ranks 2 and 3 sent to ranks -1 and -2 and failed in the store, unmentioned
            also = f" Also, outside the cycle, {'; '.join(others)}."
        return Diagnosis(
            "p2p-cycle",
            f"A cycle of point-to-point waits: {'; '.join(waits)}. {sentence_start(why)}, so each rank "
            f"waits for one that is itself waiting and none can go on.{also}",
            _outcomes(f.run, {r: blocked[r] for r in cycle})
            + [f"rank {r} {_how_it_ended(f.run[r], f.calls.get(r) or [])}" for r in f.failed if r not in cycle],
            (
                f"{sentence_start('; '.join(extra))}. Reordering helps only if the peer makes that call later in "
                "its code; if it does not, that call is one too many: find why it runs once more than on the "
                "peer (for example, code inside a function wrapped in torch.utils.checkpoint runs again when "
                "backward recomputes it), and make it run as often as its partner. Otherwise break the cycle: "
                "let even ranks send first and odd ranks receive first, or start every transfer with isend/irecv "
                "(or dist.batch_isend_irecv) and then wait on all of them."
                if extra
                else "Break the cycle: let even ranks send first and odd ranks receive first, or start every "
                "transfer with isend/irecv (or dist.batch_isend_irecv) and then wait on all of them."
            )
            + (" The ranks outside the cycle failed otherwise: fix them too." if others else ""),
            ranks=cycle,
            site=_site(blocked[cycle[0]]),
        )
    return None


def _posted_elsewhere(f: Facts, call: Event, rank: int, peer: int) -> bool:
    """Whether ``peer``, which ``rank`` waits on in ``call`` (a send to it, or a recv from it), has already posted a
    call of the other side that has no partner, and to or from other ranks only: a recv of ``rank`` from ``peer``
    when ``peer``'s unmatched sends all go elsewhere, a send to it when ``peer``'s unmatched receives all come from
    elsewhere. Then ``peer`` was not waiting to make the matching call later: its peers do not match
    ``rank``'s (review94d F1: ``isend(dst=(r + 1) % n)`` then ``recv(src=(r + 1) % n)`` on 3 ranks was told as a
    cycle of waits, and the advice to order the calls fixed nothing). As the record shows it: a rank that would
    have turned to ``rank`` after the call it waits in is not told apart from one that never would."""
    sent, received = ordering.point_to_point_calls({r.rank: r.events for r in f.run.ranks}, failed=True)
    sending = call.name == "recv"  # what ``peer`` must do for ``call``: send to ``rank``, or receive from it
    own, other = (sent, received) if sending else (received, sent)
    unmatched = [
        pair
        for pair, calls in own.items()
        if (pair[0] if sending else pair[1]) == peer and len(calls) > len(other.get(pair, []))
    ]
    return bool(unmatched) and all((pair[1] if sending else pair[0]) != rank for pair in unmatched)


def _cycle_peer_words(world_size: int, cycle: list[int], peers: dict[int, int | None], to_from: str) -> str | None:
    """Which rank each rank of a p2p cycle waits on, as the record shows it (review73c M1: "from the next rank"
    was said of recv(src=(r - 1) % n), which waits on the previous rank): "the other" for two ranks, "the next
    rank (rank + 1; rank 3 to rank 0)" or "the previous rank (rank - 1; rank 0 from rank 3)" when every rank's
    peer is one step round the world that way, else None (the caller names each rank's peer)."""
    if len(cycle) == 2:
        return "the other"
    steps = {(p - r) % world_size if isinstance(p, int) else None for r, p in peers.items()}
    if steps == {1}:
        last = max(cycle)
        return f"the next rank (rank + 1; rank {last} {to_from} rank {peers[last]})"
    if steps == {world_size - 1}:
        first = min(cycle)
        return f"the previous rank (rank - 1; rank {first} {to_from} rank {peers[first]})"
    return None


def _outside_the_cycle(f: Facts, cycle: list[int]) -> list[str]:
    """How each failed rank outside a p2p cycle failed: in which call, to or from which rank (one that does not
    exist named so), with what error."""
    lines = []
    for r in f.failed:
        if r in cycle:
            continue
        result = f.run[r]
        last = next((e for e in reversed(result.events) if e.kind in CALL_KINDS), None)
        if last is None or not (last.error or last.end is None):
            lines.append(f"rank {r} {_how_it_ended(result, f.calls.get(r) or [])}")
            continue
        peer = _p2p_peer(last) if last.kind == "p2p" else None
        to = ""
        if peer is not None:
            to = f" {'to' if 'send' in last.name else 'from'} rank {peer}"
            if not 0 <= peer < f.run.world_size:
                to += f" (no such rank: the ranks are 0 to {f.run.world_size - 1})"
        error = _clip((result.error_message or str(result.status)).splitlines()[0])
        lines.append(f"rank {r} failed in {last.name}{to} at {_place(last)}: {error}")
    return lines


def _lost_isend(f: Facts) -> tuple[int, Event, int, Event] | None:
    """(receiving rank, its receive that failed or never returned, sending rank, the isend that pairs with it),
    when that isend, the k-th send of the sender to that rank as the k-th receive from it is, returned and was
    never waited for: on gloo its message may be lost (:func:`rule_isend_never_waited`)."""
    for r in f.failed:
        events = f.run[r].events
        waits = {e.of: e for e in events if e.kind == "wait" and e.of is not None}
        for e in events:
            if e.kind != "p2p" or e.name not in ("recv", "irecv") or type(e.peer.get("src")) is not int:
                continue
            wait = waits.get(e.id) if e.name == "irecv" else e
            if wait is not None and wait.end is not None and not wait.error:
                continue  # it got its message
            if e.name == "irecv" and wait is None:
                continue  # never waited for: not where the rank stopped
            a = e.peer["src"]
            if a == r or a not in {q.rank for q in f.run.ranks}:
                continue
            mine = [x for x in events if x.kind == "p2p" and x.name in ("recv", "irecv") and x.peer.get("src") == a]
            k = mine.index(e)
            sends = [
                x
                for x in f.run[a].events
                if x.kind == "p2p" and x.name in ("send", "isend") and x.peer.get("dst") == r and x.group == e.group
            ]
            if k >= len(sends) or sends[k].name != "isend" or sends[k].end is None or sends[k].error:
                continue
            if not any(x.kind == "wait" and x.of == sends[k].id for x in f.run[a].events):
                return r, e, a, sends[k]  # (an isend is no async_op=True call: its Work.wait() is its "wait")
    return None


def rule_isend_never_waited(f: Facts) -> Diagnosis | None:
    """A rank's receive got no message, and the isend that pairs with it was never waited for (review72c M2:
    rank 0's `dist.isend(t, dst=1)`, its handle dropped; rank 1's recv timed out and the barrier after it was
    told as "a collective reached by only some ranks"). gloo sends an isend's message once the receiver has
    posted its receive, from the buffer its Work owns (ProcessGroupGloo.hpp: SendWork holds the UnboundBuffer;
    gloo's tcp pair keeps only a weak pointer to a pending send's buffer): a handle dropped at once frees it, and
    the message is lost. Measured (2 ranks, gloo, torch 2.13): dropped, receiver not yet in recv: rank 1 "Timed
    out waiting 2000ms for recv operation"; the same with rank 1 already in its recv, or the handle kept in a
    variable (not waited): delivered."""
    found = _lost_isend(f)
    if found is None:
        return None
    r, recv, a, send = found
    how = "it never returned" if recv.end is None else "it failed"
    others = [q for q in f.failed if q != r]
    follow = (
        f" {sentence_start(rank_list(others))}'s failure{'s' if len(others) > 1 else ''} followed from it."
        if others
        else ""
    )
    headline = (
        f"rank {r}'s {recv.name} from rank {a} at {where_text(recv)} got no message ({how}), and the isend that "
        f"pairs with it, rank {a}'s at {where_text(send)}, was never waited for: on gloo an isend's Work handle "
        "owns the buffer its message is sent from, and the message goes out only once the receiver has posted "
        "its receive, so a handle dropped before that (`dist.isend(...)` as a statement, its result not kept) "
        f"frees the buffer and the message is lost.{follow}"
    )
    evidence = [
        f"rank {a}'s isend to rank {r} was made {_called_at(send)}; the record shows no work.wait() of it",
        f"rank {r}'s {recv.name} from rank {a} was made {_called_at(recv)}",
    ] + _failure_evidence(f)
    return Diagnosis(
        "isend-never-waited",
        headline,
        evidence,
        "Keep the handle and wait on it: `work = dist.isend(t, dst=...)`, then `work.wait()` before the tensor is "
        "changed or the rank goes on to code that depends on the receiver (or use the blocking dist.send); "
        "keep every handle of several isends (dist.batch_isend_irecv returns them in a list) and wait() on each.",
        ranks=sorted({r, a}),
        site=_site(send),
    )


def _dropped_irecv(f: Facts) -> tuple[int, Event, Event] | None:
    """(rank, an irecv of its never waited for, the first later call of the rank that failed or never returned):
    the first such irecv of a rank that did not finish (:func:`rule_irecv_never_waited`)."""
    for r in f.failed:
        events = f.run[r].events
        waited = {e.of for e in events if e.kind == "wait" and e.of is not None}
        for e in events:
            if e.kind != "p2p" or e.name != "irecv" or e.error or e.id in waited or e.in_child_process:
                continue
            later = next(
                (
                    x
                    for x in events
                    if x.kind in ("collective", "p2p")
                    and x.start > e.start
                    and (x.error or x.end is None)
                    and not x.in_child_process
                ),
                None,
            )
            if later is not None:
                return r, e, later
    return None


def _irecv_left_unfilled(f: Facts) -> tuple[int, Event, int, Event] | None:
    """(receiving rank, an irecv of its never waited for, sending rank, the send that pairs with it), when the
    receiving rank finished and that send, the k-th send of the sender to it as the irecv is its k-th receive from
    the sender, failed or never returned: the message was not delivered before the receiver ended, so the irecv's
    tensor was never filled by it (review91d M1: rank 1 returned its irecv's buffer, [0.0, 0.0, 0.0, 0.0], and rank
    0's send failed with "Connection closed by peer" once rank 1's process had ended; the headline was "rank 0 did
    not finish", the advice to read rank 0's traceback)."""
    for result in f.run.ranks:
        if not result.ok:
            continue
        r, events = result.rank, result.events
        waited = {e.of for e in events if e.kind == "wait" and e.of is not None}
        receives = [e for e in events if e.kind == "p2p" and e.name in ("recv", "irecv") and not e.in_child_process]
        for e in receives:
            a = e.peer.get("src")
            if e.name != "irecv" or e.error or e.id in waited or type(a) is not int or a == r:
                continue
            if a not in {q.rank for q in f.run.ranks} or a not in f.failed:
                continue
            k = [x for x in receives if x.peer.get("src") == a and x.group == e.group].index(e)
            sends = [
                x
                for x in f.run[a].events
                if x.kind == "p2p" and x.name in ("send", "isend") and x.peer.get("dst") == r and x.group == e.group
            ]
            if k < len(sends) and (sends[k].error or sends[k].end is None):
                return r, e, a, sends[k]
    return None


#: The advice for an irecv never waited for, whichever rank the run shows failing.
KEEP_IRECV_HANDLE = (
    "Keep the handle and wait on it: `work = dist.irecv(t, src=...)`, then `work.wait()` before the first read of "
    "the tensor (or use the blocking dist.recv); keep every handle of several irecvs (dist.batch_isend_irecv "
    "returns them in a list) and wait() on each."
)


def _irecv_unfilled_diagnosis(f: Facts, found: tuple[int, Event, int, Event]) -> Diagnosis:
    """rule_irecv_never_waited, where the receiving rank finished and the send of its message failed or never
    returned (:func:`_irecv_left_unfilled`): the bug is the receiver's, its failing peer the victim."""
    r, recv, a, send = found
    result = f.run[r]
    how = "never returned" if send.end is None else "failed"
    after = ""
    if result.ended is not None and (send.end is None or result.ended <= send.end):
        after = f", after rank {r} had {_finished_words(result, done=True)}"
    others = [q for q in f.failed if q != a]
    also = f" ({rank_list(others)} did not finish either)" if others else ""
    headline = (
        f"rank {r}'s irecv from rank {a} at {where_text(recv)} was never waited for, and rank {r} "
        f"{_finished_words(result)} before its message arrived: rank {a}'s {send.name} that pairs with it, at "
        f"{where_text(send)}, {how}{after}. So what rank {r} read of the irecv's tensor did not hold the message "
        f"(an irecv's tensor is known to hold it only once its work.wait() has returned), and rank {a}'s failure "
        f"followed from it: its {send.name} is not the bug{also}."
    )
    returned = f": it returned {short_repr(result.value, 80)}" if result.value is not None else ""
    evidence = [
        f"rank {r}'s irecv from rank {a} was made {_called_at(recv)}; the record shows no work.wait() of it",
        f"rank {r} {_finished_words(result)}"
        + (f" at {_t(f.run, result.ended)}" if result.ended is not None else "")
        + returned,
        f"rank {a}'s {send.name} to rank {r} was made {_called_at(send)}"
        + (f" at {_t(f.run, send.start)}" if send.start is not None else "")
        + f" and {how}"
        + (f": {_clip(send.error.splitlines()[-1], 120)}" if send.error else ""),
    ] + _failure_evidence(f)
    return Diagnosis(
        "irecv-never-waited",
        headline,
        evidence,
        f"{KEEP_IRECV_HANDLE} Rank {a}'s traceback shows only where its {send.name} found rank {r} gone.",
        ranks=sorted({r, a}),
        site=_site(recv),
    )


def rule_irecv_never_waited(f: Facts) -> Diagnosis | None:
    """A rank failed in a call made after an irecv of its that the record shows never waited for (review78d C4:
    rank 1's `dist.irecv(t, src=0)` as a statement, then a barrier that timed out on ranks 1 and 3, told as "every
    rank made the same collective calls … the peer did not reach the matching call", with "Read each failing
    rank's traceback" for advice). An irecv's Work owns the buffer its message is received into
    (ProcessGroupGloo.hpp: RecvWork holds the UnboundBuffer), so a handle dropped at once frees it while the
    receive is posted. Measured (4 ranks, gloo, torch 2.13, timeout 2-3 s): rank 0 `send`s to rank 1, rank 1's
    irecv handle is dropped, every rank then calls barrier: ranks 1 and 3 "Timed out waiting …ms for recv
    operation" in 9 runs of 11 (the other 2 finished: a race with the message), and in 9 runs of 9 when rank 0
    sent 0.3 s after the drop; an all_reduce instead of the barrier: all four ranks timed out; the handle kept in
    a variable, waited after the barrier or never: every rank finished (7 runs), rank 1 with the message."""
    if f.first_diff or f.split:
        return None  # calls that differ explain a failure by themselves: other rules say so
    found = _dropped_irecv(f)
    if found is None:
        unfilled = _irecv_left_unfilled(f)
        return None if unfilled is None else _irecv_unfilled_diagnosis(f, unfilled)
    r, recv, later = found
    src = recv.peer.get("src")
    source = f" from rank {src}" if isinstance(src, int) else ""
    how = "never returned from" if later.end is None else "failed in"
    calls = f.calls.get(r, [])
    which = f"{later.name} #{calls.index(later) + 1}" if later in calls else later.name
    others = [q for q in f.failed if q != r]
    also = f" ({rank_list(others)} did not finish either)" if others else ""
    headline = (
        f"rank {r}'s irecv{source} at {where_text(recv)} was never waited for, and the rank then {how} {which} "
        f"at {where_text(later)}{also}, although every rank made the same collective calls. An irecv's Work "
        "handle owns the buffer its message is received into; a handle dropped at once (`dist.irecv(...)` as a "
        "statement, its result not kept) frees that buffer at once, and on gloo the rank's later calls can then "
        "wait until their timeout (measured: every time the message was sent after the handle was dropped)."
    )
    # the timeout's usual causes (a peer missing from the call, or in another) are not this run's (review78d C4)
    timed_out = re.compile(r"^(.+) raised: gloo gave up after (\d+) ms waiting for a peer\b.*$")
    evidence = [
        f"rank {r}'s irecv{source} was made {_called_at(recv)}; the record shows no work.wait() of it",
        f"rank {r} then made {which} {_called_at(later)} and {how} it",
    ] + [
        timed_out.sub(
            r"\1 raised: gloo gave up after \2 ms waiting for a peer, although no call was missing or different: "
            f"what the record shows before the timeout is rank {r}'s irecv never waited for",
            line,
        )
        for line in _failure_evidence(f)
    ]
    return Diagnosis(
        "irecv-never-waited",
        headline,
        evidence,
        f"{KEEP_IRECV_HANDLE} Measured on gloo: the same program with the handle kept in a variable finished on "
        "every rank.",
        ranks=[r],
        site=_site(recv),
    )


def rule_unmatched_p2p(f: Facts) -> Diagnosis | None:
    """Ranks did not finish and their point-to-point calls do not pair: the k-th send from rank A to rank B
    pairs with the k-th receive on B from A, and some send or receive has no partner (ring code whose
    receive peer is computed like its send peer: every rank receives from the rank it sends to). Only for
    calls are paired as the ordering model pairs them (:func:`ordering.point_to_point_calls`)."""
    if not f.failed:
        return None
    sent, received = ordering.point_to_point_calls({r.rank: r.events for r in f.run.ranks}, failed=True)

    def talks(rank: int) -> str:
        to = sorted({b for (a, b, *_) in sent if a == rank})
        source = sorted({a for (a, b, *_) in received if b == rank})
        parts = ([f"sends to {rank_list(to)}"] if to else []) + (
            [f"receives from {rank_list(source)}"] if source else []
        )
        return f", which {' and '.join(parts)}" if parts else ", which makes no point-to-point call"

    # review95d F2: the counts are per (sender, receiver, group, tag); tag 0 is said too where the same two ranks
    # used another tag ("made only 1 send to rank 1" of a rank that had made 2, the second with tag 1)
    tags_of: dict[tuple, set] = {}
    for a, b, g, tag in set(sent) | set(received):
        tags_of.setdefault((a, b, g), set()).add(tag)
    unmatched = []  # (rank, its unmatched call, its words, whether its peer made fewer such calls rather than none)
    directions = []  # (sender, receiver) of each unmatched call
    for pair in sorted(set(sent) | set(received)):
        sends, recvs = sent.get(pair, []), received.get(pair, [])
        a, b, g, tag = pair
        tagged = f" with tag {tag}" if tag or len(tags_of[(a, b, g)]) > 1 else ""
        # review94d F4: when the peer made some of the matching calls (rank 0 sent twice, rank 1 received once),
        # the peers are right and the counts differ; "has no receive from rank 0 on rank 1, which receives from
        # rank 0" read as a contradiction, and the advice to check how peers are computed found nothing to fix
        if len(sends) > len(recvs):
            e = sends[len(recvs)]
            words = (
                f"{ordinal(len(recvs) + 1)} {e.name} to rank {b}{tagged} (at {where_text(e)}) has no receive: rank {b} "
                f"made only {_count_of(len(recvs), 'receive')} from rank {a}{tagged}"
                if recvs
                else f"{e.name} to rank {b}{tagged} (at {where_text(e)}) has no receive from rank {a}{tagged} on rank "
                f"{b}{talks(b)}"
            )
            unmatched.append((a, e, words, bool(recvs)))
            directions.append((a, b))
        elif len(recvs) > len(sends):
            e = recvs[len(sends)]
            words = (
                f"{ordinal(len(sends) + 1)} {e.name} from rank {a}{tagged} (at {where_text(e)}) has no send: rank {a} "
                f"made only {_count_of(len(sends), 'send')} to rank {b}{tagged}"
                if sends
                else f"{e.name} from rank {a}{tagged} (at {where_text(e)}) has no send to rank {b}{tagged} from rank "
                f"{a}{talks(a)}"
            )
            unmatched.append((b, e, words, bool(sends)))
            directions.append((a, b))
    if not unmatched:
        return None
    # review95d F3: a send and a receive between the same two ranks left unmatched with different tags: the peers
    # and the counts are right, the tags differ (gloo pairs a send with a receive on peer and tag)
    left_sends = {
        (a, b, g): tag for (a, b, g, tag) in sent if len(sent[(a, b, g, tag)]) > len(received.get((a, b, g, tag), []))
    }
    left_recvs = {
        (a, b, g): tag
        for (a, b, g, tag) in received
        if len(received[(a, b, g, tag)]) > len(sent.get((a, b, g, tag), []))
    }
    tag_pairs = sorted(
        (a, b, left_sends[(a, b, g)], left_recvs[(a, b, g)])
        for (a, b, g) in set(left_sends) & set(left_recvs)
        if left_sends[(a, b, g)] != left_recvs[(a, b, g)]
    )
    shown = unmatched[:2]
    lines = [f"rank {rank}'s {what}" for rank, _, what, _ in shown]
    more = f" ({len(unmatched) - len(shown)} more)" if len(unmatched) > len(shown) else ""
    waiting = {
        r: next((e for e in reversed(f.run[r].events) if e.kind in CALL_KINDS or e.name == "Work.wait"), None)
        for r in f.failed
    }
    first = shown[0][1]
    evidence = (
        [f"rank {shown[0][0]}'s {first.name} was made {_called_at(first)}"]
        + [f"rank {r} was waiting in {e.name} at {where_text(e)}" for r, e in sorted(waiting.items()) if e is not None]
        + _failure_evidence(f)
    )
    advice = []
    if tag_pairs:
        advice.append(
            "; ".join(
                f"rank {a} sends to rank {b} with tag {ts} and rank {b} receives from rank {a} with tag {tr}"
                for a, b, ts, tr in tag_pairs
            )
            + ": gloo pairs a send only with a receive of the same peer and the same tag, so pass the same tag on "
            "both sides (or none on either)."
        )
    tag_told = {(a, b) for a, b, *_ in tag_pairs}
    untold = [u for u, pair in zip(unmatched, directions) if pair not in tag_told]
    if any(not fewer for *_, fewer in untold):
        advice.append(
            "Check how each rank computes its peers: the rank it receives from must be the rank that sends to it "
            "(in a ring, send to (rank + 1) % world and receive from (rank - 1) % world)."
        )
    if any(fewer for *_, fewer in untold):
        advice.append(
            f"{'Where' if advice else 'The'} peers match but one side made more calls than the other: make the "
            "sender and the receiver make the same number of calls, looking for a loop that ends sooner on one "
            "rank (a `break`, a `return`, a condition on its own data), or let the ranks agree on when to stop "
            "(for example, all_reduce a flag that says whether any rank is done)."
        )
    # review95d F6: a rank that made no point-to-point call did not stop for want of a partner ("rank 2 did not
    # finish: a point-to-point call had no partner" of a rank that exited by itself, the unmatched recv being rank
    # 0's, which caught its timeout and finished)
    talking = {a for (a, *_) in sent} | {b for (_, b, *_) in received}
    stuck = [r for r in f.failed if r in talking]
    apart = [r for r in f.failed if r not in talking]
    partner = (
        f"{'a' if len(unmatched) == 1 else 'some'} point-to-point call{'' if len(unmatched) == 1 else 's'} had no "
        f"partner — {'; '.join(lines)}{more}"
    )
    ended_apart = "; ".join(f"rank {r} {_how_it_ended(f.run[r], f.calls.get(r) or [])}" for r in apart)
    caught = [
        f"rank {rank} caught the error of that {e.name} (“{_clip(e.error, 100)}”) and finished"
        for rank, e, *_ in shown
        if rank not in f.failed and f.run[rank].ok and e.error
    ]
    if stuck:
        opening = f"{rank_list(stuck)} did not finish: {partner}."
        if apart:
            opening += f" Separately, {ended_apart}, making no point-to-point call."
    else:
        opening = (
            f"{sentence_start(ended_apart)}, making no point-to-point call; separately, {partner}"
            + (f" ({'; '.join(caught)})" if caught else "")
            + "."
        )
    return Diagnosis(
        "unmatched-p2p",
        f"{opening} A send pairs only with a receive its peer posts from it (gloo: the send waits for it), so the "
        "unmatched ones wait until the timeout, or fail at once when the peer they wait on has ended.",
        evidence,
        " ".join(advice),
        ranks=sorted({rank for rank, *_ in unmatched}),
        site=_site(shown[0][1]),
    )


def rule_store_wait_cycle(f: Facts) -> Diagnosis | None:
    """A rank stopped (or timed out) in a store ``wait``/``get`` for keys no rank had set, while the other ranks
    wait in a collective it never reached: whatever would have set the key comes after that collective, so
    neither side can go on (attack11 a04: rank 0 waits for a key rank 1 sets only after a barrier)."""
    run = f.run
    waiting: dict[int, Event] = {}
    for r in f.failed:
        stores = [e for e in run[r].events if e.kind == "store"]
        last = stores[-1] if stores else None
        if last is not None and last.name in ordering.KEY_WAITS and last.keys and (last.end is None or last.error):
            waiting[r] = last
    if not waiting:
        return None
    set_keys = {
        k
        for res in run.ranks
        for e in res.events
        if e.kind == "store" and e.name in ordering.KEY_WRITERS
        for k in e.keys or ()
    }
    # the keys of each wait that no rank set (review64b M1: rank 0 waited for done-0..done-3, rank 2 never set
    # done-2; a wait some of whose keys were set was not taken, and the run was "no collective is to blame")
    unset = {r: [k for k in e.keys if k not in set_keys] for r, e in waiting.items()}
    waiting = {r: e for r, e in waiting.items() if unset[r]}
    if not waiting:
        return None
    made = {r: len(c) for r, c in f.calls.items()}
    held = {}
    for res in run.ranks:
        if res.rank in waiting:
            continue
        calls = f.calls.get(res.rank, [])
        last = calls[-1] if calls else None
        if last is not None and (last.end is None or last.error) and all(made[r] < len(calls) for r in waiting):
            held[res.rank] = last
    rank, wait = min(waiting.items())

    def keys_of(e: Event) -> str:
        named = unset.get(e.rank, e.keys)
        return ", ".join(repr(k) for k in named[:3]) + (" …" if len(named) > 3 else "")

    def for_keys(e: Event, verb: str = "set") -> str:
        """``for 'a', 'b', which no rank set`` or ``for 4 keys, of which no rank set 'c'``."""
        if len(unset.get(e.rank, e.keys)) == len(e.keys):
            return f"for {keys_of(e)}, which no rank {verb}"
        return f"for {len(e.keys)} keys, of which no rank {verb} {keys_of(e)}"

    them = rank_list(sorted(waiting))
    # review78d C2: how the waits ended, said of every waiting rank ("ranks 0–3 was stopped … when the waits
    # timed out" was said of four ranks the deadline stopped in their waits)
    stopped = {run[r].status == STOPPED for r in waiting}
    if stopped == {True}:
        how = ("were" if len(waiting) > 1 else "was") + " stopped at the deadline in"
        ended = "were stopped"
    elif stopped == {False}:
        how, ended = "timed out in", "timed out"
    else:
        how, ended = "timed out or were stopped at the deadline in", "ended"
    after: list[tuple[str, int]] = []
    if held:
        k = len(f.calls[min(held)])
        call = held[min(held)]
        # review80d C1: a cycle only when the source sets a waited-for key after the held call; a key no line
        # sets (a misspelt name, set before the barrier under another) is no cycle, and "set it before" no advice
        waited = {key for keys in unset.values() for key in keys}
        after = sorted({(key, line) for e in held.values() for key, line in _keys_set_after(e) if key in waited})
        if after:
            headline = (
                f"A wait cycle through the store: {them} {how} store.{wait.name} {for_keys(wait, 'had set')}, "
                f"while {rank_list(sorted(held))} waited in {call.name} #{k}, which {them} never reached: the "
                f"source sets the key only after that call (line {after[0][1]}), so neither side could go on."
            )
            advice = (
                f"Set the key before any collective the waiting rank has not reached (here before {call.name} #{k} "
                f"{_called_at(call)}), or wait for it after that call: a store wait and a collective each hold a "
                "rank until the other side moves."
            )
        else:
            headline = (
                f"{them} {how} store.{wait.name} {for_keys(wait, 'had set')}, while "
                f"{rank_list(sorted(held))} waited in {call.name} #{k}, which {them} never reached: no rank set the "
                "key before that call, and the source shows no set of it after the call either."
            )
            advice = (
                "Make sure some rank sets every key a rank waits for (store.set/add), under the very name waited "
                f"for, on every path it can take, and before any collective the waiting rank has not reached (here "
                f"{call.name} #{k} {_called_at(call)}): a store wait and a collective each hold a rank until the "
                "other side moves."
            )
    elif all(res.ok for res in run.ranks if res.rank not in waiting):
        others = [res.rank for res in run.ranks if res.rank not in waiting]
        cycle = _cycle_of_waits(waiting, unset) if len(waiting) > 1 else []
        if cycle:  # review71b M2: each key is set in the source, after the setter's own wait
            ranks = sorted(r for r, *_ in cycle)
            each = "; ".join(
                f"rank {r} in store.{waiting[r].name} for {k!r}, which the source sets after rank {s}'s wait, at "
                f"{Site(waiting[s].file or '', line, waiting[s].func or '').place}"
                for r, k, s, line in cycle
            )
            them = rank_list(ranks)
            headline = (
                f"A wait cycle through the store: {them} {how} store waits, each for a key another of them sets "
                f"only after its own wait ({each})"
            )
            r, k, s, line = cycle[0]
            advice = (
                f"Break the cycle: let a rank set its key before it waits for another's (here rank {s}'s "
                f"store.set of {k!r} at line {line} comes after its wait at line {waiting[s].line}), or have every "
                "rank set its own key first and only then wait for the others'."
            )
        elif len(waiting) == 1:
            headline = f"{them} {how} store.{wait.name} {for_keys(wait)}"
            advice = "Make sure some rank sets every key a rank waits for (store.set/add), on every path it can take."
        else:  # each rank's own keys (review46b C1: rank 1's were said to be rank 0's)
            each = "; ".join(f"rank {r} in store.{e.name} for {keys_of(e)}" for r, e in sorted(waiting.items()))
            # review71b M2: a key a waiter sets only after its own wait is not missing; the record cannot tell
            headline = f"{them} {how} store waits for keys no rank had set when the waits {ended} ({each})"
            advice = (
                "Either no rank sets a key waited for on the path it takes (make sure some rank sets every key a rank "
                "waits for, store.set/add, on every path), or a rank sets it only after a wait of its own for "
                "another rank's key, a wait cycle (let each rank set its own key before it waits for the others')."
            )
        headline += f": {rank_list(others)} finished." if others else "."
        if len(waiting) > 1 and not cycle:
            headline += " If each sets the key another waits for only after its own wait, that is a wait cycle."
    else:
        return None  # the others were busy elsewhere: another rule says where
    evidence = [
        f"rank {r} waited in store.{e.name} for {', '.join(map(repr, e.keys[:3]))}{' …' if len(e.keys) > 3 else ''} "
        f"at {where_text(e)}"
        for r, e in sorted(waiting.items())
    ]
    evidence += [f"rank {r} waited in {e.name} #{len(f.calls[r])} {_called_at(e)}" for r, e in sorted(held.items())]
    evidence += [f"the source sets {key!r} at line {line}, after that call" for key, line in after[:3]]
    evidence += _key_setters(run, {k for e in waiting.values() for k in e.keys})
    if held and not after:
        evidence += _keys_nobody_waited_for(run)
    evidence += _failure_evidence(f)
    return Diagnosis("store-wait-cycle", headline, evidence, advice, ranks=sorted(waiting), site=_site(wait))


def _keys_set_after(wait: Event) -> list[tuple[str, int]]:
    """(key, line) of each store set/add/compare_set with a literal key that the source of the function at
    ``wait``'s frame makes after the statement of the wait: the rest of its block, then the rest of each block
    around it (not an ``else`` of an ``if`` it is in). Such a set runs only after the wait returns (review71b M2:
    rank 0 waits for 'k_from_1', then sets 'k_from_0'; rank 1 the other way round). The source is read only as
    :func:`barrierlab._files.source` allows, within its time budget; [] when it cannot be read or parsed, or
    when the keys are not literals (then the source cannot say which key a rank sets)."""
    if not (wait.file and wait.line) or wait.file.startswith("<") or not _files.within_budget():
        return []
    text = _files.source_text(wait.file)
    if text is None:
        return []
    started = time.perf_counter()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    finally:
        _files.charge(time.perf_counter() - started)
    line = wait.line
    func = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == wait.func
            and n.lineno <= line <= (n.end_lineno or n.lineno)
        ),
        tree if wait.func == "<module>" else None,
    )
    if func is None:
        return []
    following: list[ast.stmt] = []
    block: list[ast.stmt] | None = func.body
    while block:
        here = next((i for i, st in enumerate(block) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
        if here is None:
            break
        statement = block[here]
        following = block[here + 1 :] + following
        block = next(
            (
                part
                for name in ("body", "orelse", "finalbody", "handlers")
                for part in [getattr(statement, name, None)]
                if isinstance(part, list)
                and any(st.lineno <= line <= (st.end_lineno or st.lineno) for st in part)
                and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            ),
            None,
        )
        if block and isinstance(block[0], ast.ExceptHandler):
            block = next(h.body for h in block if h.lineno <= line <= (h.end_lineno or h.lineno))
    found = []
    for statement in following:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("set", "add", "compare_set")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append((node.args[0].value, node.lineno))
    return sorted(found, key=lambda kl: kl[1])


def _cycle_of_waits(waiting: dict[int, Event], unset: dict[int, list[str]]) -> list[tuple[int, str, int, int]]:
    """A cycle of store waits the source shows: [(rank, key it waits for, the rank that sets that key only after
    its own wait, the line of that set)...], each rank's key set by the next; [] when the source shows none."""
    sets = {r: _keys_set_after(e) for r, e in waiting.items()}
    unblocker: dict[int, tuple[str, int, int]] = {}
    for r in sorted(waiting):
        for s in sorted(waiting):
            if s == r:
                continue
            hit = next(((k, line) for k, line in sets[s] if k in unset[r]), None)
            if hit is not None:
                unblocker[r] = (hit[0], s, hit[1])
                break
    for start in sorted(unblocker):
        path = [start]
        while unblocker.get(path[-1]) and unblocker[path[-1]][1] not in path:
            path.append(unblocker[path[-1]][1])
        last = unblocker.get(path[-1])
        if last is not None and last[1] in path:
            cycle = path[path.index(last[1]) :]
            return [(r, unblocker[r][0], unblocker[r][1], unblocker[r][2]) for r in cycle]
    return []


def _key_setters(run: Run, keys: set[str]) -> list[str]:
    """Which ranks set which of ``keys`` (store set/add/compare_set), and where; and the ranks that set none of
    them: a rank that skipped its set is the cause of a wait for its key."""
    by_site: dict[str, dict[int, list[str]]] = {}
    for res in run.ranks:
        for e in res.events:
            if e.kind == "store" and e.name in ordering.KEY_WRITERS and set(e.keys or ()) & keys:
                mine = by_site.setdefault(_place(e), {}).setdefault(res.rank, [])
                mine += [k for k in e.keys if k in keys and k not in mine]
    setters = {r for ranks in by_site.values() for r in ranks}
    lines = []
    for place, ranks in list(by_site.items())[:4]:
        written = [k for r in sorted(ranks) for k in ranks[r]]
        shown = ", ".join(repr(k) for k in written[:4]) + (" …" if len(written) > 4 else "")
        lines.append(f"{rank_list(sorted(ranks))} set {shown} at {place}")
    silent = [res.rank for res in run.ranks if res.rank not in setters and res.recorded]
    if silent and by_site:
        lines.append(f"{rank_list(silent)} set none of the keys waited for")
    return lines


def _keys_nobody_waited_for(run: Run) -> list[str]:
    """The keys ranks set (store set/add/compare_set) that no rank waited for or read, and where: next to a wait
    for a key nobody set, such a key may be the same one misspelt (review80d C1: 'ready_a' set, 'ready_b' waited
    for)."""
    read = {
        k
        for res in run.ranks
        for e in res.events
        if e.kind == "store" and e.name not in ordering.KEY_WRITERS
        for k in e.keys or ()
    }
    by_site: dict[str, dict[int, list[str]]] = {}
    for res in run.ranks:
        for e in res.events:
            if e.kind == "store" and e.name in ordering.KEY_WRITERS:
                mine = by_site.setdefault(_place(e), {}).setdefault(res.rank, [])
                mine += [k for k in e.keys or () if k not in read and k not in mine]
    lines = []
    for place, ranks in by_site.items():
        written = list(dict.fromkeys(k for r in sorted(ranks) for k in ranks[r]))
        if written:
            shown = ", ".join(repr(k) for k in written[:4]) + (" …" if len(written) > 4 else "")
            lines.append(
                f"{rank_list(sorted(r for r in ranks if ranks[r]))} set {shown} at {place}, which no rank waited for"
            )
    return lines[:4]


def rule_stopped_outside_collectives(f: Facts) -> Diagnosis | None:
    """Ranks stopped at the deadline outside any collective, the others that failed having raised a consequence
    of that (a store that waited for a client that never came) after their last collective: the headline says
    where each was (round 14: a side-channel TCPStore every rank made on a port of its own was told as "did not
    finish, but every rank made the same collective calls", no line named)."""
    failed = f.failed
    stuck = [r for r in failed if f.run[r].status == STOPPED]
    if not failed or not stuck or f.first_diff or f.split:
        return None
    raised = [r for r in failed if r not in stuck]
    for r in raised:
        result, calls = f.run[r], f.calls.get(r, [])
        if (
            result.status != RAISED
            or failed_by_itself(result)
            or (calls and (calls[-1].end is None or calls[-1].error))
        ):
            return None
    places = []
    for r in stuck:
        where = f.run[r].stuck
        if where is not None and where.site is not None:
            places.append(f"rank {r} was stopped at {where.site.place}{_in_func(where.site)}")
    for r in raised:
        chain = _raised_chain(f.run[r])
        kind = f.run[r].error_message.split(":", 1)[0].strip() or "an exception"
        if chain.frames:
            places.append(f"rank {r} raised {_clip(kind, 60)} at {chain.frames[-1].place}{_in_func(chain.frames[-1])}")
    when = "before the deadline" if not raised else ""
    headline = f"{rank_list(failed)} did not finish{' ' + when if when else ''}, outside any collective"
    headline += (": " + "; ".join(places) + ".") if places else "."
    return Diagnosis(
        "stopped",
        headline,
        _failure_evidence(f),
        "The function ran longer than the deadline; raise `deadline` or look at where it was (run.stuck)."
        + (
            " A rank that raised waited for a peer outside any collective (a store, a rendezvous): read its "
            "traceback (run[rank].traceback)."
            if raised
            else ""
        ),
        ranks=stuck,
    )


def rule_collective_in_forked_child(f: Facts) -> Diagnosis | None:
    """A child process forked from a rank (a DataLoader worker, a multiprocessing.Process) called a collective
    and never returned from it, while its rank did not finish (attack25 a04 and a11: a barrier in a Dataset's
    ``__getitem__`` with ``num_workers=1``; every rank stopped at ``for batch in loader:``, told as "outside any
    collective ... raise `deadline`"). The child holds a copy of the rank's process group, but not the threads
    that run its collectives: ProcessGroupGloo's constructor starts them (``runLoop``, ProcessGroupGloo.cpp), and
    fork copies only the thread that called it. The child's call is queued and never run, not even to the
    timeout (measured: timeout 3 s, still inside at a deadline of 8 s). A rank that finished all the same (it
    waited for its child a while, then killed it) is told so too (review78d M4: the child's barrier was said to
    be its rank's, "reached by only some ranks", with a rank-dependent `if` to look for)."""
    found: dict[int, Event] = {}
    for r in [res.rank for res in f.run.ranks]:
        calls = [e for e in f.run[r].events if e.kind in ("collective", "p2p") and e.in_child_process and e.never_left]
        if calls:
            found[r] = calls[0]
    if not found:
        return None
    first = found[min(found)]
    sites = {where_text(e) for e in found.values()}
    at = next(iter(sites)) if len(sites) == 1 else where_text(first)
    forked = "forked a child process" if len(found) == 1 else "each forked a child process"
    headline = (
        f"{rank_list(sorted(found))} {forked} (a DataLoader worker, a multiprocessing.Process) that "
        f"called {first.name} at {at} and never returned from it: a collective made in a forked child is queued "
        "on a copy of the rank's process group whose threads were not copied, so it never runs, not even to the "
        "timeout."
    )
    stuck = []
    for r in sorted(found):
        where = f.run[r].stuck
        if f.run[r].status == STOPPED and where is not None and where.site is not None:
            stuck.append(f"rank {r} was stopped at {where.site.place}{_in_func(where.site)}")
    if stuck:
        each = "" if len(stuck) == 1 else "each "
        headline += f" Meanwhile {'; '.join(stuck)}, {each}waiting on its child (for what it sends, or for it to end)."
    done = [r for r in sorted(found) if f.run[r].status == FINISHED]
    if done:
        own = any(e.kind == "collective" and not e.in_child_process for r in done for e in f.run[r].events)
        its = "its" if len(done) == 1 else "their"
        headline += f" {rank_list(done)} finished all the same" + (
            "."
            if own
            else f", {its} own process having made no collective call: the call was the child's, not the rank's."
            if len(done) == 1
            else ", their own processes having made no collective call: the calls were the children's, not the ranks'."
        )
    evidence = [
        f"rank {r}'s {e.lane} entered {e.name} at {_t(f.run, e.start)}, at {where_text(e)}, and never left"
        for r, e in sorted(found.items())
    ] + _failure_evidence(f)
    advice = (
        "Make collectives only in the rank's own process, never in __getitem__, a worker_init_fn, a collate_fn or "
        "a child process: synchronise in the training loop (before the DataLoader is made, or between steps), or "
        "use num_workers=0 where a worker must wait for other ranks. (Fork copies only the thread that called it "
        "(POSIX fork); ProcessGroupGloo runs its collectives on threads its constructor started, runLoop in "
        "ProcessGroupGloo.cpp.)"
    )
    return Diagnosis("stopped", headline, evidence, advice, ranks=sorted(found), site=_site(first))


def _in_spawn(result) -> bool:
    """Whether ``result``'s rank was stopped inside ``torch.multiprocessing.spawn`` (or ``start_processes``)."""
    where = result.stuck if result.status == STOPPED else None
    frames = getattr(where, "frames", None) or ()
    return any(
        str(getattr(frame, "file", "")).replace(os.sep, "/").endswith("torch/multiprocessing/spawn.py")
        for frame in frames
    )


def rule_spawn_inside_a_rank(f: Facts) -> Diagnosis | None:
    """A rank stopped at the deadline inside ``torch.multiprocessing.spawn``: the script starts its own ranks
    (the DDP tutorial's ``mp.spawn(demo_basic, nprocs=...)``) and was run inside a job that had launched its
    ranks already (``barrierlab run``, torchrun). Its children are no ranks of this run: nothing of theirs is
    recorded, and waiting longer does not help (attack25 a05: told "raise `deadline`"; under torchrun the
    children retried a store nobody hosted)."""
    spawning = [r for r in f.failed if _in_spawn(f.run[r])]
    if not spawning:
        return None
    first = f.run[spawning[0]].stuck
    site = first.site
    at = f" at {site.place}{_in_func(site)}" if site is not None else ""
    headline = (
        f"{rank_list(spawning)} {'was' if len(spawning) == 1 else 'were'} stopped at the deadline inside "
        f"torch.multiprocessing.spawn{at}: the program starts its own ranks, and it ran as a rank of a job already "
        f"launched, so each rank started processes of its own and waited for them. They are no ranks of this run: "
        "nothing they did is recorded here, and children that start a process group of their own wait for peers "
        "this run never starts."
    )
    evidence = _failure_evidence(f)
    advice = (
        "Launch the ranks once: run a script written for mp.spawn with plain `python script.py` (mp.spawn starts "
        "the ranks), or give barrierlab the function mp.spawn would run, as mp.spawn calls it: "
        "`barrierlab.run(fn, N, args=(...), init=False)` calls fn(rank, *args) on N ranks and points its own "
        "init_process_group at barrierlab's group. To run the script under torchrun or `barrierlab run`, call the "
        "per-rank function directly, with the rank and world size torchrun gives (RANK, WORLD_SIZE), not mp.spawn."
    )
    return Diagnosis("stopped", headline, evidence, advice, ranks=spawning, site=site)


#: How a rank's traceback shows an exception raised in a child process and re-raised in the rank, and the child.
_CHILD_TRACEBACKS = (
    ("concurrent.futures.process._RemoteTraceback", "a process pool's task"),
    ("multiprocessing.pool.RemoteTraceback", "a multiprocessing pool's task"),
    ("in DataLoader worker process", "a DataLoader worker"),
)


def _raised_in_child(result) -> str:
    """The kind of child process ``result``'s exception was raised in (re-raised in the rank), or ""."""
    text = (result.traceback or "") + "\n" + (result.error_message or "")
    return next((child for marker, child in _CHILD_TRACEBACKS if marker in text), "")


def _in_func(site) -> str:
    return f", in {site.func}" if getattr(site, "func", None) and site.func != "<module>" else ""


#: gloo's words when a rank received more bytes than its tensor holds (its process is aborted).
_SIZE_ABORT = re.compile(r"(\d+) vs (\d+)\. Received data size doesn't match expected size")


def _p2p_match(a, rank_a: int, b, rank_b: int) -> bool:
    """Call ``a`` of ``rank_a`` (blocked, its peer ``rank_b``) and call ``b`` of ``rank_b`` are a send and the
    recv it pairs with (either way round): the two would complete each other, so they are no link of a cycle of
    waits — one of them came late (round 21: a pipeline stage's recv timed out while the sender still compiled)."""
    names = {a.name, b.name}
    return names == {"send", "recv"} and _p2p_peer(b) == rank_a and _p2p_peer(a) == rank_b


def _size_abort(f: Facts, rank: int):
    """gloo's "N vs M. Received data size doesn't match expected size" for ``rank``, if it aborted with it."""
    if rank not in f.aborted:
        return None
    return _SIZE_ABORT.search(f.run[rank].stderr or "") or _SIZE_ABORT.search(f.aborted[rank])


def rule_aborted_on_size(f: Facts) -> Diagnosis | None:
    """gloo aborted a rank because the data it received did not fit its tensor, and no record of that rank's
    calls says where (round 19: a buffer registered on rank 0 alone made DDP's construction-time broadcast of
    parameters and buffers bigger there; the headline was "rank 1 failed by itself (killed by signal)"). The
    stack faulthandler wrote to the rank's stderr as it aborted names the learner's line, and torch's frames
    in it the collective torch was running."""
    if f.first_diff or f.split or f.shapes:
        return None
    for rank, message in sorted(f.aborted.items()):
        sizes = _SIZE_ABORT.search(f.run[rank].stderr or "") or _SIZE_ABORT.search(message)
        stuck = stuck_at(f.run[rank].stderr or "")
        if sizes is None or stuck is None or stuck.site is None:
            continue
        torch_frames = [(s.file, s.line, s.func) for s in stuck.frames if f"{os.sep}torch{os.sep}" in s.file]
        receive = _receiving(f.run[rank])  # an irecv's wait, or batch_isend_irecv's (attack22 a07)
        call = stuck.call if stuck.call not in (None, "wait") or receive is None else receive.name
        what = _torch_call_phrase(torch_frames) or (f"dist.{call}()" if call else "a collective")
        if receive is not None and call != stuck.call:
            what = f"the wait of its {receive.name}"
        others = [r for r in f.failed if r != rank]
        p2p = call in ("recv", "irecv", "recv_object_list", "batch_isend_irecv")
        site, chain = (
            _placed_by_record(f.run, stuck.site),
            Chain(tuple(_placed_by_record(f.run, s) for s in stuck.chain.frames)),
        )
        cause = (
            "the message sent to it was bigger than the tensor it received into"
            if p2p
            else "the ranks passed tensors of different sizes"
        )
        sender = _last_send_to(f.run, rank) if p2p else None
        if sender is not None:  # round 22: the list sent with send_object_list had grown on the sender
            cause += f" (rank {sender.rank}'s {sender.name} at {where_text(sender)})"
        advice = (
            "recv_object_list receives into a list of the length it is given: the matching send_object_list "
            "must send a list of that same length every time (send its length first if it can change, or keep "
            "one fixed-length list, with None where there is nothing)."
            if call == "recv_object_list"
            else "A recv's tensor must be as large as what the matching send sends: when the sizes change from one "
            "message to the next (padded batches of different lengths), send the shape first (a small tensor "
            "of its sizes) and allocate the receiving tensor from it, or pad every message to one fixed size."
            if p2p
            else "Every rank must pass tensors of the same sizes to each collective, including those torch makes "
            "for you: DDP broadcasts rank 0's parameters and buffers when it wraps the model, so every rank's "
            "module must have the same parameters and buffers, of the same shapes, before DDP(...) (register "
            "buffers in __init__ on every rank, then fill them)."
        )
        return Diagnosis(
            "different-sizes",
            f"gloo aborted rank {rank}: in {what}, reached from {site}{called_from(chain)}, it received "
            f"{sizes.group(1)} bytes where its tensors hold {sizes.group(2)}: {cause}"
            + (f", and {rank_list(others)} failed because of it." if others else "."),
            _failure_evidence(f),
            advice,
            ranks=[rank],
            site=site,
        )
    return None


def _receiving(result) -> Event | None:
    """The point-to-point receive ``result``'s rank was waiting for when it ended: its last call left unfinished,
    an ``irecv`` (or ``batch_isend_irecv``) whose ``Work.wait()`` it was in, or a ``recv``; else None."""
    open_calls = [e for e in result.events if e.never_left and (e.kind in CALL_KINDS or e.name == "Work.wait")]
    if not open_calls:
        return None
    last = open_calls[-1]
    if last.name == "Work.wait":
        last = next((e for e in result.events if e.id == last.of), None) if last.of is not None else None
    return (
        last if last is not None and last.name in ("recv", "irecv", "recv_object_list", "batch_isend_irecv") else None
    )


def _placed_by_record(run, site: Site | None) -> Site | None:
    """``site`` with its file as the ranks' records name it when the stack names code sent by value
    (``<dynamic-code>``: a function of a script's ``__main__``): the file of a recorded call made in a function
    of that name (attack22 a07: the receiver's line was "<dynamic-code>:24" while the sender's was named)."""
    if site is None or not site.file.startswith("<"):
        return site
    for result in run.ranks:
        for e in result.events:
            frames = ([(e.file, e.line, e.func)] if e.file else []) + list(e.callers or ())
            for file, _line, func in frames:
                if func == site.func and file and not file.startswith("<"):
                    return Site(file, site.line, site.func)
    return site


def _last_send_to(run, rank: int):
    """The last send (``send``, ``isend``, ``send_object_list``) another rank made to ``rank``, as recorded, or
    None. Its ``rank`` attribute is set to the sender's rank."""
    for result in run.ranks:
        if result.rank == rank:
            continue
        for e in reversed(result.events):
            if e.kind == "p2p" and e.name in ("send", "isend", "send_object_list") and e.peer.get("dst") == rank:
                return e
    return None


def _torch_call_phrase(torch_frames: list[tuple[str, int, str]]) -> str | None:
    """Who in torch made the collective a stack is inside ("DDP's construction-time broadcast of parameters
    and buffers"), from the same table the recorder names torch's collectives by."""
    if not torch_frames:
        return None
    from barrierlab.record import ISSUERS  # noqa: PLC0415 - only on this path: the recorder imports torch

    for fragment, name, phrase in ISSUERS:
        for file, _line, func in torch_frames:
            if fragment in file and (not name or name == func) and fragment != "distributed/distributed_c10d.py":
                return phrase.format(op="collective", func=func)
    return None


def rule_failed_by_itself(f: Facts) -> Diagnosis | None:
    failed = f.failed
    if not failed or f.first_diff or f.split:
        return None
    causes = [r for r in failed if failed_by_itself(f.run[r])]
    for r in failed:  # main_process_first names the rank whose failure it passed on
        match = re.search(r"rank (\d+) failed while preparing", f.run[r].error_message)
        if match and int(match.group(1)) not in causes and int(match.group(1)) < f.run.world_size:
            causes.append(int(match.group(1)))
    if not causes or len(causes) >= len(failed):
        return None
    others = [r for r in failed if r not in causes]
    return _rank_failed(
        f.run, sorted(causes), f"and {rank_list(others)} failed because of it", _failure_evidence(f), None
    )


def rule_raised_by_itself(f: Facts) -> Diagnosis | None:
    """The ranks that did not finish raised an exception of their own (not a peer's consequence) while every
    rank's collectives matched: the exception is the news. A folder another rank makes, unordered before the
    access that raised, is named (the ordering model)."""
    failed = f.failed
    if not failed or f.first_diff or f.split:
        return None
    if not all(f.run[r].status == RAISED and failed_by_itself(f.run[r]) for r in failed):
        return None
    chains = {r: _raised_chain(f.run[r]) for r in failed}
    messages = {r: f.run[r].error_message.splitlines()[0] if f.run[r].error_message else "" for r in failed}
    first = failed[0]
    if not chains[first].frames:
        return None
    where = chains[first].frames[-1]
    same = all(messages[r] == messages[first] and chains[r].frames[-1:] == (where,) for r in failed)
    who = rank_list(failed) if same else rank_list([first])
    # the call that raised is itself a collective that refused its arguments (review49b M1: src=5, a group
    # the root is not in): not "no collective is to blame"
    refused = next(
        (
            e
            for e in reversed(f.run[first].events)
            if e.kind in CALL_KINDS and e.error and e.line == where.line and e.file and where.file.endswith(e.file)
        ),
        None,
    )
    no_group = "process group has not been initialized" in messages[first]
    # a file another rank wrote after this rank looked, or removed before: a missing ordering, which is a missing
    # collective (review53b M1: "no collective is to blame" for notebook 07's own read-before-write race)
    # (a file another rank removed first may have been removed in order, after a barrier: only named below)
    missing = {r: _missing_file_cause(f.run, r) for r in failed}
    unordered = {r: m for r, m in missing.items() if m[0] == "later"}
    blame = (
        f"and {'their' if same and len(failed) > 1 else 'its'} own {refused.name} raised it, refusing its "
        "arguments before it paired with any rank"
        if refused is not None and not no_group
        else "so no collective is to blame"
    )
    found_races = ordering.races(f.run)  # built once: the model of a long run is not cheap
    # a file read while another rank wrote it, nothing ordering the two (review54 C4: a half-written JSON)
    half_read = {} if unordered or no_group else {r: _unordered_read_evidence(f.run[r], found_races) for r in failed}
    half_read = {r: lines for r, lines in half_read.items() if lines}
    # the file was removed (or renamed away) before the read, nothing ordering the read first (review64b C2:
    # the write was ordered, by a barrier; the removal was not)
    removed = half_read and all(missing[r][0] == "gone" for r in half_read)
    if removed:
        removers = rank_list(sorted({missing[r][2] for r in half_read if missing[r][2] is not None}))
        blame = (
            f"but nothing ordered {'its' if len(half_read) == 1 else 'their'} read of the file before {removers}'s "
            "removal of it: a barrier (or another synchronising call) after every rank's read and before the "
            "removal is missing"
        )
    elif half_read and all(USED_IN_THE_RAISING_CALL in lines[0] for lines in half_read.values()):
        blame = (
            "but nothing ordered its use of a file against another rank's change of it: a barrier (or another "
            "synchronising call) between the two is missing"
        )
    elif half_read and all(
        USED_IN_THE_RAISING_CALL not in lines[0] and _last_read_found_no_file(f.run[r])
        for r, lines in half_read.items()
    ):
        # review92d M2: "it may have read it half written" of reads that found no file (FileNotFoundError): they
        # came before the write had made the file, as their evidence says ("no file yet")
        they = len(half_read) > 1
        blame = (
            f"but nothing ordered {'their reads' if they else 'its read'} of the file after another rank's write "
            f"of it: {'they' if they else 'it'} looked for it before that write had made it, and found no file; a "
            "barrier (or another synchronising call) after the write is complete is missing"
        )
    elif half_read:
        blame = (
            "but nothing ordered the file it read against another rank's write of it: it may have read it half "
            "written; a barrier (or another synchronising call) after the write is complete is missing"
        )
    if unordered and not no_group:
        writers = rank_list(sorted({m[2] for m in unordered.values()}))
        pending = any(  # a reader's own async barrier, not waited for when it raised (call_hazards says so too)
            e.kind == "collective" and e.name in ("barrier", "monitored_barrier")
            for r in unordered
            for e in ordering.unwaited(f.run[r].events)
        )
        blame = (
            f"but nothing ordered {'its' if len(unordered) == 1 else 'their'} read after {writers}'s write of the "
            + (
                "file: the barrier between them was called with async_op=True and not waited for before the read"
                if pending
                else "file: a barrier (or another synchronising call) between the two is missing"
            )
        )
    # review95d F4: an all_reduce(async_op=True) never waited for, its tensor divided and copied back while the
    # reduction was in flight, and the ranks' replicas diverged: "no collective is to blame" while one was
    unwaited = {
        (e.name, _place(e)): e
        for r in failed
        for e in _learners_unwaited(f.run[r])
        if e.kind == "collective"
        and e.name not in ("barrier", "monitored_barrier")
        and _barrier_after(f.run[r].events, e) is None
    }
    told_before = (refused is not None and not no_group) or removed or half_read or unordered or no_group
    if unwaited and not told_before:
        named = "; ".join(f"{name}(async_op=True) at {place}" for name, place in unwaited)
        blame = (
            f"but {'their' if same and len(failed) > 1 else 'its'} {named} {'was' if len(unwaited) == 1 else 'were'} "
            "never waited for: nothing made the collective complete before the code after it read or changed its "
            "tensors, so what those reads saw depended on timing"
        )
    # the run's own races, when nothing above told one (review89d M1: rank 0 read the file it had removed itself,
    # told with "no collective is to blame", while run.races() listed ranks 1-3's reads of it unordered against
    # that removal: ranks 1-3 read first by timing alone)
    told = told_before or unwaited
    untold = [] if told else [race for race in found_races if not race.made]
    if untold:
        what, race_advice = _race_words(f.run, untold)
        blame = (
            f"so no collective is to blame for that error; but {len(untold)} pair{'s' if len(untold) > 1 else ''} "
            f"of file accesses of this run raced: {what}"
        )
    child = no_group and _raised_in_child(f.run[first])
    if child:  # attack27 a05, a13: a collective in a spawned child (a process pool's task, a DataLoader worker)
        blame = (
            f"and the call was made in {child}, a child process with no process group: one started with spawn or "
            "forkserver, or forked before the rank's init_process_group"
        )
    elif no_group:  # attack25 a03: a barrier after destroy_process_group() or before init_process_group() (the
        # recorder does not record either, so both are named)
        blame = (
            f"and no process group existed when {'they' if same and len(failed) > 1 else 'it'} made "
            f"{refused.name if refused is not None else 'the call'}: init_process_group() had not made one yet, or "
            "destroy_process_group() had ended it"
        )
    headline = (
        # a child's frames follow the rank's in the traceback: no "called from" between them (review54 C3)
        f"{who} raised {_clip(messages[first], 200)} at {where}{'' if child else called_from(chains[first])}; "
        f"{'until then every rank made' if len(f.flights) == len(f.run.ranks) else 'the ranks made'} the same "
        f"collective calls, {blame}."
    )
    evidence = [] if child else _own_code_traceback(f.run, first)
    races = [
        race
        for race in found_races
        if race.made and race.made.rank not in failed and any(x.rank in failed for x in (race.first, race.second))
    ]
    races.sort(key=lambda race: (not _used(race).event.error, -len(race.made.path)))
    advice = "Read the traceback (run[rank].traceback) from its last line of your code."
    if child:
        advice = (
            "Make collectives only in the rank's own process: give the child what it needs (the rank, the world "
            "size, tensors) as arguments and return its result to the rank, which then makes the collective "
            "(a DataLoader's workers and a process pool's tasks are such children when they are spawned, or forked "
            "before the rank's init_process_group)."
        )
    elif no_group:
        advice = (
            "Make every collective between init_process_group() and destroy_process_group(): call "
            "destroy_process_group() last, after the final barrier, and init_process_group() before the first "
            "collective (the default group exists only between the two)."
        )
    if races:
        evidence.append(_folder_race_text(races[0]))
        advice = FOLDER_ADVICE
    elif untold:
        evidence += _race_lines(untold)
        advice = f"{advice} The race is a bug of its own, whatever the traceback shows. {race_advice}"
    elif removed and not unordered and not no_group:
        advice = REMOVAL_ADVICE
    elif (unordered or half_read) and not no_group:
        advice = UNORDERED_FILE_ADVICE
    elif unwaited and not told_before:
        advice = (
            "Keep the Work handle of every async_op=True collective and call work.wait() before the first read or "
            "change of its tensors (or make the call without async_op=True); then " + advice[0].lower() + advice[1:]
        )
    if not races:
        evidence += [line for _, lines, _, _ in missing.values() for line in lines]
        evidence += [line for lines in half_read.values() for line in lines]
    evidence += _failure_evidence(f)
    return Diagnosis(
        "rank-failed",
        headline,
        evidence,
        advice,
        ranks=failed,
        site=where,
    )


def _folder_race_text(race) -> str:
    made, used = race.made, _used(race)
    what = used.event.call or {"read": "read", "list": "listing"}.get(used.how, "open for writing")
    t = race.origin
    failed = ", it failed" if used.event.error else ""
    return (
        f"rank {made.rank} makes the folder `{os.path.basename(made.path)}` (t={made.event.start - t:.3f} s) at "
        f"{_site(made.event) or made.where()}; nothing orders it before rank {used.rank}'s {what} of "
        f"`{os.path.basename(used.path)}` inside it (t={used.event.start - t:.3f} s{failed}) at "
        f"{_site(used.event) or used.where()} — a barrier between them does (on {race.backend})"
    )


def _used(race) -> ordering.Access:
    """The access of a folder race that needed the folder (not the ``mkdir``)."""
    return race.second if race.made is race.first else race.first


#: Calls that make a process group: gloo connects its members as the group is made.
_GROUP_MAKERS = GROUP_MAKERS


def _failed_connecting(error: str) -> bool:
    """Whether a group-making call's error is gloo failing to connect the group (connectFullMesh: a closed
    connection or a rendezvous that did not complete)."""
    return (explain_error(error) or ("",))[0] in ("peer gone", "rendezvous")


def rule_group_setup_failed(f: Facts) -> Diagnosis | None:
    """A rank failed while making a process group because a member had already returned and its process ended
    (attack24 a09, attack22 a11: rank 3 skipped its subgroup's all_reduce and returned while rank 2 was still
    connecting the subgroup: "Gloo connectFullMesh failed with Connection closed by peer"; every rank had made
    the same calls, so the record shows no divergence, only the early return)."""
    failed = f.failed
    if not failed or f.first_diff or f.split:
        return None
    for r in failed:
        calls = f.calls.get(r) or []
        last = calls[-1] if calls else None
        if last is None or last.name not in _GROUP_MAKERS or not last.error:
            continue
        if not _failed_connecting(last.error):
            continue
        gone = [
            q.rank
            for q in f.run.ranks
            if q.rank != r
            and q.status == FINISHED
            and q.ended is not None
            and last.start is not None
            and q.ended <= (last.end if last.end is not None else math.inf)
        ]
        # ranks that used a subgroup without rank r (ranks 0 and 1 on theirs) were not in the group being made
        elsewhere = [set(members) for members, _ in subgroup_calls(f.run).values() if members and r not in members]
        gone = [q for q in gone if not any(q in members for members in elsewhere)]
        if not gone:
            continue
        k = sum(1 for e in calls if e.name == last.name)
        made = {q: sum(1 for e in f.calls.get(q) or [] if e.name in _GROUP_MAKERS) for q in gone}
        headline = (
            f"rank {r} failed in {last.name} #{k} at {where_text(last)}: gloo could not connect the new group, "
            f"because {rank_list(gone)} had already {_finished_words(f.run[gone[0]], done=True)} and "
            f"{'its process' if len(gone) == 1 else 'their processes'} ended while rank {r} was still connecting."
        )
        evidence = [  # counted like the other ranks' evidence: calls that made groups apart (CI on b1d27e5)
            f"rank {q} returned after {_count_of(len(f.calls.get(q) or []) - made[q], 'collective call')} and "
            f"{_count_of(made[q], 'call')} making groups, at {_t(f.run, f.run[q].ended)}"
            for q in gone
        ] + _failure_evidence(f)
        found = _lint_findings(last, f.run)
        evidence += [f"barrierlab.lint, on {Site(x.path, x.line).place}: {x.why}" for x in found]
        if found:  # the call the early return skipped, which the record cannot show (it was never made)
            headline += (
                f" {sentence_start(rank_list(gone))} never made the "
                f"{found[0].collective.rsplit(' -> ', 1)[-1]} at {Site(found[0].path, found[0].line).place}: "
                f"{_how_ranks_differ(found[0])} (barrierlab.lint)."
            )
        same = all([e.name for e in f.calls.get(q) or []] == [e.name for e in calls] for q in gone)
        if not found and same:  # review72c C2: every rank ran the same lines; the others finished first
            headline += (
                f" {sentence_start(rank_list(gone))} had made the same {len(calls)} call"
                f"{'s' if len(calls) != 1 else ''} as rank {r}: none skipped a call, "
                f"{'it' if len(gone) == 1 else 'they'} finished making the group first and returned."
            )
            advice = (
                "A rank's process must not end while another member is still making or using a group: after the "
                "group's last call, let every rank make one more call that waits for all of them (a "
                "dist.barrier() before the function returns), so no rank returns before the others are done with "
                "the group."
            )
            return Diagnosis("rank-failed", headline, evidence, advice, ranks=[r, *gone], site=_site(last))
        return Diagnosis(
            "rank-failed",
            headline,
            evidence,
            "A rank must not return while other ranks still make or use a group it belongs to: find why "
            f"{rank_list(gone)} returned early (a rank-dependent `if`, `return` or `continue` that skips "
            "collectives on the group; barrierlab.lint finds these statically), and let every member make the "
            f"same calls on it. {RULES}",
            ranks=[r, *gone],
            site=_site(last),
        )
    return None


def _lint_findings(event, run: Run) -> list:
    """Lint's findings of only some ranks reaching a call in the file of ``event`` (at most three), in code the
    run executed (:func:`_in_executed_code`; review72c C2: a barrier under `if rank == 0` in a function no rank called was
    quoted as the call "rank 0 never made")."""
    return _in_executed_code(run, [x for x in _learner_lint(event.file) if x.kind in _REACHED_BY_SOME])[:3]


#: lint's findings per learner's file during one diagnosis (:func:`diagnose` empties it), with the file's
#: (mtime, size) when linted; kept for this many files.
_LINTS_KEPT = 64
_lints: dict[str, tuple[tuple[int, int], list]] = {}


def _learner_lint(path: str | None) -> list:
    """lint's findings on the learner's file ``path`` (none for a frame of a library, a notebook cell or a file
    lint cannot read), linted once per version of the file."""
    from barrierlab.lint import lint_file

    if not path or path.startswith("<") or not is_learners(path):
        return []
    try:
        st = os.stat(path)
    except OSError:
        return []
    stamp = (st.st_mtime_ns, st.st_size)
    kept = _lints.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    try:
        findings = lint_file(path)
    except Exception:  # noqa: BLE001 - a file lint cannot read says nothing here
        findings = []
    if len(_lints) >= _LINTS_KEPT:
        _lints.clear()
    _lints[path] = (stamp, findings)
    return findings


def _in_executed_code(run: Run, findings: list) -> list:
    """The findings whose line lies in code the run executed, as far as the record shows: in a function one of
    the recorded frames (every event's file, line and function, and its callers) is in, or in a function of the
    same file such a function calls by name (a helper that made no recorded call itself); top-level code only
    when a frame of the file's ``<module>`` was recorded. None where the source cannot be read. What the record
    shows is worked out once per file."""
    executed: dict[str, tuple[set[tuple[int, int]], bool] | None] = {}
    kept = []
    for x in findings:
        if x.path not in executed:
            executed[x.path] = _executed_functions(run, x.path)
        if executed[x.path] is None:
            continue
        spans, module = executed[x.path]
        inner = _innermost_function(x.path, x.line)
        if module if inner is None else inner in spans:
            kept.append(x)
    return kept


def _function_spans(path: str) -> list[tuple[int, int, str, ast.AST]] | None:
    """(first line, last line, name, node) of every function defined in the source at ``path``, or None."""
    text = _files.source_text(path)
    if text is None or not _files.within_budget():
        return None
    started = time.perf_counter()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    finally:
        _files.charge(time.perf_counter() - started)
    return [
        (node.lineno, node.end_lineno or node.lineno, node.name, node)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def _innermost_function(path: str, line: int) -> tuple[int, int] | None:
    """(first line, last line) of the innermost function of ``path`` around ``line``, or None (top level)."""
    around = [(first, last) for _, first, last in functions(path) if first <= line <= last]
    return max(around) if around else None


def _executed_functions(run: Run, path: str) -> tuple[set[tuple[int, int]], bool] | None:
    """The functions of ``path`` (their (first, last) lines) the record shows executed, with those they call by
    name, and whether its top level ran; None when the source cannot be read."""
    spans = _function_spans(path)
    if spans is None:
        return None
    module = False
    found: set[tuple[int, int]] = set()
    for result in run.ranks:
        for e in result.events:
            for site in chain_of(e).frames:
                if site.file != path:
                    continue
                if site.func == "<module>":
                    module = True
                around = [(a, b) for a, b, name, _ in spans if a <= site.line <= b and name == site.func]
                if around:
                    found.add(max(around))
    nodes = {(a, b): node for a, b, _, node in spans}
    todo = list(found)
    while todo:
        called = {
            n.func.id if isinstance(n.func, ast.Name) else n.func.attr
            for n in ast.walk(nodes[todo.pop()])
            if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
        }
        for a, b, name, _ in spans:
            if name in called and (a, b) not in found:
                found.add((a, b))
                todo.append((a, b))
    return found, module


def rule_same_calls(f: Facts) -> Diagnosis | None:
    """Ranks failed although both records show the same collectives on every rank."""
    failed = f.failed
    if not failed or f.first_diff or f.split:
        return None
    unread = [rank for rank in f.calls if rank not in f.flights]
    every = "every rank" if len(f.calls) == len(f.run.ranks) else "every rank recorded here"
    if not unread:
        headline = f"{rank_list(failed)} did not finish, but {every} made the same collective calls."
        evidence = _failure_evidence(f) + [
            "torch's flight recorder agrees, position by position, including the collectives torch issued itself"
        ]
    else:
        headline = (
            f"{rank_list(failed)} did not finish; the own torch.distributed calls of {every} match, but "
            f"torch's record of the collectives it issued itself could not be read from {rank_list(unread)}."
        )
        evidence = _failure_evidence(f)
    return Diagnosis(
        "rank-failed", headline, evidence, "Read each failing rank's traceback: run[rank].traceback.", ranks=failed
    )


def rule_group_connect_failed(f: Facts) -> Diagnosis | None:
    """A rank failed while gloo connected a group it was making, with no member gone and the same calls made
    by every rank until then: the others went on to their next calls, so the record looks like calls only some
    ranks made (session 23's CI: round 2's tensor-parallel item, rank 0 failed in new_group #1 with "Gloo
    connectFullMesh failed with Connection closed by peer" on a busy machine with a 2 s timeout, and was told
    as "ranks 1-3 called new_group #2; rank 0 never did"; seen once in 75 loaded runs)."""
    for r in f.failed:
        calls = f.calls.get(r) or []
        last = calls[-1] if calls else None
        if last is None or last.name not in _GROUP_MAKERS or not last.error or last.end is None:
            continue
        if not _failed_connecting(last.error):
            continue
        k = len(calls)
        others = {q: c for q, c in f.calls.items() if q != r}
        if not others or any(len(c) < k or [e.name for e in c[:k]] != [e.name for e in calls] for c in others.values()):
            continue  # some rank made other calls, or fewer: the divergence rules say which
        if any(q.rank != r and q.ended is not None and q.ended <= last.end for q in f.run.ranks):
            continue  # a rank had ended first (rule_group_setup_failed, or that rank's own failure)
        n = sum(1 for e in calls if e.name == last.name)
        went_on = sorted(q for q, c in others.items() if len(c) > k)
        said = tidy(last.error).strip()
        headline = (
            f"rank {r} failed in {last.name} #{n} at {where_text(last)}: gloo could not connect the new group "
            f"(“{_clip(said.splitlines()[-1] if said else last.error)}”), "
            "though no rank had ended and every rank had made the same "
            f"{k} call{'s' if k != 1 else ''} until then."
        )
        if went_on:
            headline += (
                f" {sentence_start(rank_list(went_on))} went on to later calls without rank {r}: the calls rank {r} "
                "never made follow from this failure, not from the code."
            )
        evidence = _failure_evidence(f)
        advice = (
            "Nothing in the ranks' calls explains it: gloo opens a connection between every two members of a new "
            "group, and a connection that breaks while it is made fails this way (barrierlab's tests saw it once in "
            "75 runs of a 4-rank program on a busy machine). Run it again; if it recurs, check that no member's "
            "process ended or was stopped at that moment."
            # (no timeout advice: new_group waits with its own timeout=, torch's default when none is given, not
            # init_process_group's; review54 C1, C2)
        )
        return Diagnosis("rank-failed", headline, evidence, advice, ranks=[r], site=_site(last))
    return None


def _failure_evidence(f: Facts) -> list[str]:
    evidence = [f"rank {r} {_how_it_ended(f.run[r], f.calls.get(r, []), f.flights.get(r))}" for r in f.failed]
    return evidence + _abort_evidence(f) + _error_evidence(f.run, f.failed)


#: The rules in the order they are tried (the first one that returns a Diagnosis explains the run).
RULE_TABLE: tuple[Rule, ...] = (
    rule_new_group_members_differ,
    rule_new_group_skipped,
    # before rule_ok: ranks that finished while their forked children never returned from a collective are told of
    # the children (review92d C3: "All 2 ranks finished, after the same 1 collective call", the children's)
    rule_collective_in_forked_child,
    rule_ok,
    rule_spawn_inside_a_rank,
    rule_isend_never_waited,
    rule_waits_in_different_groups,
    rule_group_wait_cycle,
    rule_checkpoint_on_some_ranks,
    rule_torch_divergence,
    rule_paired_by_position,
    rule_loop_ran_longer,
    rule_mismatched_collectives,
    rule_p2p_cycle,
    rule_p2p_late_arrival,
    rule_store_wait_cycle,
    rule_refused_in_call,
    rule_rank_failed,
    rule_still_running,
    rule_silent_mispairing,
    rule_group_connect_failed,
    rule_uneven_loop,
    rule_only_some_ranks,
    rule_different_sizes,
    rule_different_roots,
    rule_late_arrival,
    rule_late_torch_arrival,
    rule_subgroup_mismatched,
    rule_subgroup_only_some,
    rule_stopped_outside_collectives,
    rule_aborted_on_size,
    rule_failed_by_itself,
    rule_raised_by_itself,
    rule_unmatched_p2p,
    rule_group_setup_failed,
    rule_irecv_never_waited,
    rule_same_calls,
)


#: Most calls named by :func:`call_hazards`.
HAZARDS_SHOWN = 3


#: How a hazard line from the source (a read before work.wait()) starts: not a fact of the record.
READ_BEFORE_WAIT = "In the source:"


def _reads_before_wait(events: list[Event]) -> list[tuple[Event, tuple[str, int, int]]]:
    """Each ``async_op=True`` collective of one rank that was waited for (its ``Work.wait()`` is in the record, at
    a later line of the same file) and whose tensor lint's read-before-wait check finds used, in the source,
    between the call and the wait: (the call, (tensor, line of the use, line of the wait)). The record holds no
    reads of tensors (review71b M3: each rank returned its own t[0], 1, 2, 3, 4, where the sum was 10, and the
    run was "All 4 ranks finished"), so only the source can show it; nothing when it cannot be read."""
    waits = {e.of: e for e in events if e.kind == "wait" and e.of is not None}
    found = []
    for e in events:
        wait = waits.get(e.id) if e.is_async and e.kind == "collective" else None
        if wait is None or not (e.file and e.line and wait.line) or wait.file != e.file or wait.line <= e.line:
            continue
        if not e.file.endswith(".py"):
            continue
        for x in _learner_lint(e.file):
            used = re.fullmatch(r"(.+) used at line (\d+)", x.condition) if x.kind == "read-before-wait" else None
            if used and x.line == e.line and e.line < int(used[2]) < wait.line:
                found.append((e, (used[1], int(used[2]), wait.line)))
    return found


#: The words of a hazard line for an isend or irecv the record shows never waited for (review73c M3).
P2P_NEVER_WAITED = "was never waited for (the record shows no work.wait() of it)"


#: Most lines :func:`reused_store_waits` gives.
REUSED_WAITS_SHOWN = 3


def reused_store_waits(run: Run) -> list[str]:
    """Store waits that could hold nothing: every key a rank's wait named, that rank had already waited for (its
    earlier wait returned), and no rank deleted it in between. A key once set stays set, so such a wait returns
    at once: a barrier of store calls reused with the same key (checkpoint-engine issue #106, corpus round 41: the
    second ``_store_based_barrier`` with one group name let rank 1 read last round's weights) passes without
    waiting for anyone. One line per rank and place, at most :data:`REUSED_WAITS_SHOWN`."""
    deleted: dict[str, list[float]] = {}
    for result in run.ranks:
        for e in result.events:
            if e.kind == "store" and e.name == "delete_key":
                for key in e.keys or ():
                    deleted.setdefault(key, []).append(e.start)
    lines: list[str] = []
    for result in run.ranks:
        waited: dict[str, Event] = {}  # key -> this rank's last wait for it that returned
        said: set[str] = set()
        for e in result.events:
            if e.kind != "store" or e.name != "wait" or not e.keys:
                continue
            earlier = [waited.get(key) for key in e.keys]
            if all(w is not None and w.end is not None for w in earlier) and not any(
                w.end <= t <= e.start for key, w in zip(e.keys, earlier) for t in deleted.get(key, ())
            ):
                place = _place(e)
                if place not in said and len(lines) < REUSED_WAITS_SHOWN:
                    said.add(place)
                    first = earlier[0]
                    keys = ", ".join(f"'{key}'" for key in e.keys[:3])
                    lines.append(
                        f"rank {result.rank}'s store.wait for {keys} at {place} ({_t(run, e.start)}) found "
                        f"{'it' if len(e.keys) == 1 else 'them'} already set: rank {result.rank} had waited for "
                        f"{'it' if len(e.keys) == 1 else 'them'} before, at {_place(first)} ({_t(run, first.start)}), "
                        "and no rank deleted it since, so this wait held the rank for nothing. A store key stays set: "
                        "a barrier of store calls used again with the same key (torch's _store_based_barrier with "
                        "one group name, a key without a round number) passes at once; use a new key for each round "
                        "(a counter in its name) or delete the key once every rank has passed"
                    )
            if e.end is not None and not e.error:
                for key in e.keys:
                    waited[key] = e
    return lines


def call_hazards(run: Run) -> list[str]:
    """Calls the record shows were made so that their result could not be trusted, whatever the timing: an
    ``async_op=True`` collective never waited for (nothing made its work complete before what came after it
    read its tensors), and a list of output tensors that held one tensor in several slots (each slot then shows
    the block written last). One line per call site, naming the ranks; at most :data:`HAZARDS_SHOWN`."""
    found: dict[tuple, list[int]] = {}
    for result in run.ranks:
        for e in result.events:
            if e.kind == "collective" and e.aliased:
                found.setdefault(("aliased", e.name, _place(e)), []).append(result.rank)
        # a rank that ended another way may have waited later, had it got there (review65b C1: it raised reading
        # a file before its work.wait() line)
        for e in _learners_unwaited(result) if result.ok else ():
            if e.kind == "collective" and _barrier_after(result.events, e) is None:
                found.setdefault(("unwaited", e.name, _place(e)), []).append(result.rank)
        if result.ok:  # review73c M3: said only when a message was lost (an isend is no async_op=True call: its
            # Work.wait() is its "wait", as in :func:`_lost_isend`)
            waited = {e.of for e in result.events if e.kind == "wait" and e.of is not None}
            for e in result.events:
                if e.kind == "p2p" and e.name in ("isend", "irecv") and not e.error and e.id not in waited:
                    found.setdefault(("p2p", e.name, _place(e)), []).append(result.rank)
        if result.status == RAISED:  # review66b M2: the readers' own async barrier, not yet waited when they raised
            for e in ordering.unwaited(result.events):
                if e.kind == "collective" and e.name in ("barrier", "monitored_barrier"):
                    found.setdefault(("pending", e.name, _place(e)), []).append(result.rank)
        for e in result.outside:
            found.setdefault(("outside", e.name, _place(e)), []).append(result.rank)
        for e, read in _reads_before_wait(result.events):  # review71b M3
            found.setdefault(("read", e.name, _place(e), read), []).append(result.rank)
    lines = []
    for (hazard, name, place, *more), ranks in found.items():
        who = f"{rank_list(sorted(set(ranks)))}'s"
        if hazard == "read":
            tensor, read_line, wait_line = more[0]
            lines.append(
                f"{READ_BEFORE_WAIT} {who} {name}(async_op=True) at {place}: line {read_line} uses `{tensor}` "
                f"before its work.wait() at line {wait_line} (barrierlab.lint, read-before-wait, on the source; "
                "the record holds no reads of tensors): the call may not have written it yet, so what that line "
                "read may be the rank's own value, not the result; call work.wait() before the read"
            )
        elif hazard == "pending":
            lines.append(
                f"{who} barrier(async_op=True) at {place} had not been waited for when "
                f"{'it' if len(set(ranks)) == 1 else 'they'} raised: a barrier called with async_op=True holds a "
                "rank only from its work.wait() on, so it held nothing before that; call work.wait() before the code "
                "it must hold back"
            )
        elif hazard == "outside":  # review63b M3: torch warns and returns; a finished run said nothing of it
            alone = len(set(ranks)) == 1
            lines.append(
                f"{who} {name} at {place} named a group {'that rank is' if alone else 'those ranks are'} not in "
                f"(new_group gives a non-member GroupMember.NON_GROUP_MEMBER): torch warned and returned at once, "
                f"so it waited for nobody{' and ordered nothing' if 'barrier' in name else ' and changed nothing'}; "
                "call it only where the rank is a member (`if dist.get_rank(g) >= 0:`; get_rank gives -1 outside "
                "the group), or on a group the rank is in"
            )
        elif hazard == "p2p" and name == "isend":
            lines.append(
                f"{who} isend at {place} {P2P_NEVER_WAITED}: on gloo an isend's Work handle owns the buffer its "
                "message is sent from, and the message goes out only once the receiver has posted its recv, so a "
                "handle dropped before then (`dist.isend(...)` as a statement) loses the message and the receiver "
                "waits until its timeout; where it arrived, it did so by timing alone. Keep the handle and call "
                "work.wait() (or use the blocking dist.send)"
            )
        elif hazard == "p2p":
            lines.append(
                f"{who} irecv at {place} {P2P_NEVER_WAITED}: nothing made its message arrive before the rank "
                "returned, so a read of its tensor after the call may have seen it unfilled. Keep the handle and "
                "call work.wait() before the first read (or use the blocking dist.recv)"
            )
        elif hazard == "aliased":
            lines.append(
                f"{who} {name} at {place} was given one tensor in several slots of its output list ([t] * n): "
                "every slot shows the block written last, so what it gathered is wrong whatever the timing; "
                "build one tensor per slot"
            )
        elif name == "barrier":  # review58b: a barrier has no tensors; what is lost is the ordering
            lines.append(
                f"{who} barrier(async_op=True) at {place} was never waited for: it ordered nothing, and the code "
                "after it ran without waiting for the other ranks to arrive; keep the handle and call work.wait() "
                "where the order matters"
            )
        else:
            lines.append(
                f"{who} {name}(async_op=True) at {place} was never waited for: nothing made it complete before "
                "the rank returned, so a read of its tensors after the call may have seen them unfinished; keep the "
                "handle and call work.wait() before the first read"
            )
    return lines[:HAZARDS_SHOWN]


def _torch_issued(result) -> set[int]:
    """The ids of the rank's recorded calls that torch's own Python code made (the flight record's issuer, not a
    library's, linked to the recorded call): the learner holds no handle of them. Join's all_reduce(async_op=True)
    hands its Work to DDP's reducer, which waits for it in C++ (join.py notify_join_context, DDP's forward
    _set_forward_pass_work_handle): told "never waited for ... keep the handle" of a correct Join program
    (review92d C2)."""
    flight = result.flight
    entries = getattr(flight, "entries", None) or ()
    return {
        x.call.id
        for x in entries
        if x.issuer and library_of(x.issuer) is None and x.call is not None and x.call.id is not None
    }


def _learners_unwaited(result) -> list[Event]:
    """:func:`ordering.unwaited` of the rank's events, less the calls torch's own code made (:func:`_torch_issued`):
    the async calls whose handle the learner's code had and never waited for."""
    issued = _torch_issued(result)
    return [e for e in ordering.unwaited(result.events) if e.id is None or e.id not in issued]


def _barrier_after(events: list[Event], call: Event) -> Event | None:
    """The first blocking barrier on ``call``'s group that the rank made after ``call`` (an ``async_op=True``
    collective) and that returned without an error, or None. On gloo a barrier completes all earlier work of its
    group before it returns (ProcessGroupGloo.hpp: "When executing a barrier, we need to ensure that all prior
    work has completed before completing itself"; review72c C3: rank 0's never-waited all_reduce had completed
    when its barrier returned). Other collectives do not: a blocking all_reduce or broadcast after an async
    all_reduce of 16M floats returned with the async one's is_completed() still False on every rank (gloo runs
    the group's work on two worker threads)."""
    if call.name in ("barrier", "monitored_barrier"):
        return None
    waited = {e.of for e in events if e.kind == "wait" and e.of is not None and e.end is not None and not e.error}
    for e in events:
        if (
            e.kind == "collective"
            and e.name == "barrier"
            and e.group == call.group
            and e.start > call.start
            and e.end is not None
            and not e.error
            and (not e.is_async or e.id in waited)
        ):
            return e
    return None


def completed_by_a_barrier(run: Run) -> list[str]:
    """One line per ``async_op=True`` collective never waited for that a later barrier of the rank on the same
    group completed (:func:`_barrier_after`): its result held on this gloo run, though no wait() ordered it."""
    found: dict[tuple[str, str, str], list[int]] = {}
    for result in run.ranks:
        for e in _learners_unwaited(result) if result.ok else ():
            barrier = _barrier_after(result.events, e) if e.kind == "collective" else None
            if barrier is not None:
                found.setdefault((e.name, _place(e), _place(barrier)), []).append(result.rank)
    return [
        f"{rank_list(sorted(set(ranks)))}'s {name}(async_op=True) at {place} was never waited for, but the "
        f"barrier at {at}, on the same group, completed it: on gloo a barrier waits for all earlier work of its "
        "group before it returns, so its result was there after that line (not between the two lines). Other "
        "collectives do not complete it on gloo (a blocking all_reduce or broadcast can return while it is still "
        "running); keep the handle and call work.wait() before the first read rather than rely on the barrier"
        for (name, place, at), ranks in found.items()
    ]


def diagnose(run: Run) -> Diagnosis:
    """Explain ``run``: the first disagreement between the ranks' collectives, and how each rank ended."""
    _lints.clear()  # lint follows the learner's imports: a module edited since the last run is read again
    f = facts(run)
    for rule in RULE_TABLE:
        diagnosis = rule(f)
        if diagnosis is not None:
            if rule is not rule_different_sizes and f.shapes and not diagnosis.ok:
                diagnosis.evidence += [s for s in f.shapes if s not in diagnosis.evidence]
            if not diagnosis.ok:
                hazards = call_hazards(run) + reused_store_waits(run)
                if diagnosis.kind == "isend-never-waited":  # its headline says it already
                    hazards = [h for h in hazards if P2P_NEVER_WAITED not in h]
                if diagnosis.kind == "irecv-never-waited" and diagnosis.site is not None:  # so does this one's
                    said = f"irecv at {diagnosis.site.place} {P2P_NEVER_WAITED}"
                    hazards = [h for h in hazards if said not in h]
                diagnosis.evidence += [h for h in hazards if h not in diagnosis.evidence]
            diagnosis.evidence += [h for h in completed_by_a_barrier(run) if h not in diagnosis.evidence]
            unrecorded = [r.rank for r in run.ranks if not r.recorded]
            if unrecorded:
                diagnosis.evidence.append(_unrecorded_text(unrecorded))
            diagnosis.evidence += _lost_records(run)
            return diagnosis
    lost = [r.rank for r in run.ranks if r.events_lost]
    headline = "The run could not be explained from its records."
    if lost:  # review56 C1
        headline = f"The run could not be explained from its records: {rank_list(lost)}'s events file was lost."
    return Diagnosis("unexplained", headline, _failure_evidence(f) + _lost_records(run))


def _lost_records(run: Run) -> list[str]:
    """Evidence for ranks whose events file another process removed or replaced while they ran: their calls are
    unknown, not none (attack28 a12: "rank 0 never did" of a barrier rank 0 completed)."""
    return [
        f"rank {r.rank}'s events file was {r.events_lost} while it ran (by another process: a rank of the run, a "
        "clean-up of /tmp): what it called is not known, and the diagnosis compares the other ranks only (the "
        "ledger, from torch's flight recorder, still shows its collectives)"
        for r in run.ranks
        if r.events_lost
    ]


def _unrecorded_text(ranks: list[int]) -> str:
    """The evidence line for ranks of which no file was read: the diagnosis is of the other ranks only."""
    return (
        f"nothing of {rank_list(ranks)} is in this record folder, so what {'it' if len(ranks) == 1 else 'they'} "
        "called is not known: the diagnosis compares the other ranks only. Under torchrun each machine keeps its "
        "own ranks' records (docs/torchrun.md): copy every machine's folder into one and run "
        "`python -m barrierlab report FOLDER` for the whole job"
    )


def _site(event: Event) -> Site | None:
    return Site(event.file, event.line, event.func or "") if event.file else None


def _cut_comparison(calls: dict[int, list[Event]]) -> tuple[int | None, str]:
    """Calls of a run whose records were cut in the middle, compared by their position in the group (``pos``)
    at the positions every rank kept: (how many calls each rank made, "") when they agree and every rank's last
    call has the same position; (None, the first difference in words) when not; (None, "") when positions
    were not recorded."""
    if not calls or any(e.pos is None for c in calls.values() for e in c):
        return None, ""
    at = {rank: {e.pos: e for e in c} for rank, c in calls.items()}
    kept = set.intersection(*(set(by_pos) for by_pos in at.values()))
    for position in sorted(kept):
        names: dict[str, list[int]] = {}
        for rank, by_pos in at.items():
            names.setdefault(by_pos[position].name, []).append(rank)
        if len(names) > 1:
            parts = [
                f"{rank_list(rs)} called {name} at {where_text(at[rs[0]][position])}" for name, rs in names.items()
            ]
            return None, f"call #{position}: " + "; ".join(parts)
    lasts = {rank: max(by_pos, default=0) for rank, by_pos in at.items()}
    if len(set(lasts.values())) > 1:
        parts = [f"rank {rank}: {last}" for rank, last in lasts.items()]
        return None, "the ranks made different numbers of collective calls (" + ", ".join(parts) + ")"
    return next(iter(lasts.values())), ""


def _first_divergence(calls: dict[int, list[Event]]) -> int | None:
    depth = max((len(c) for c in calls.values()), default=0)
    for i in range(depth):
        at = [c[i] if i < len(c) else None for c in calls.values()]
        if any(e is None for e in at) or len({e.name for e in at}) > 1:
            return i + 1
    return None


def _divergence_by_number(calls: dict[int, list[Event]]) -> tuple[int, dict[int, Event]] | None:
    """For a run that did not finish whose records were cut in the middle, each rank keeping as many calls: the
    first call, by its own number (``Event.seq``), that some ranks made and others never did — (its index in the
    first such rank's kept calls, each such rank's event) — or None. Kept lines are as many on every rank, so a
    rank one call ahead was compared position by position with calls it made earlier (review56 M1: 30,000
    barriers, rank 0 in a 30,001st: "could not be explained")."""
    if not calls or not all(isinstance(e.seq, int) for c in calls.values() for e in c):
        return None
    last = {r: max((e.seq for e in c), default=0) for r, c in calls.items()}
    if len(set(last.values())) == 1:
        return None
    number = min(last.values()) + 1
    at = {r: next((e for e in c if e.seq == number), None) for r, c in calls.items() if last[r] >= number}
    if not at or any(e is None for e in at.values()):
        return None
    first = min(at)
    return calls[first].index(at[first]) + 1, at  # type: ignore[arg-type]


def _completed(event: Event) -> bool:
    """Whether a call is known to have completed without an error (an ``async_op=True`` one: its work, which an
    unwaited call never shows). review59b C1: a rank that failed in a barrier the others made unwaited from another
    line was told "silently paired … the ranks passed it together"; it was a late arrival."""
    done = event.done if event.is_async else event.end
    return done is not None and not event.error


def _mispaired(calls: dict[int, list[Event]], before: int | None) -> int | None:
    """The first call that ranks made from different lines, or from one helper's line reached through different
    lines (their whole chains: corpus34's autocast item, Lightning's strategy.barrier() line reached through
    save_checkpoint on rank 0 and the finalize step on rank 1), although the op matched and every rank completed
    it. A crossing after which the ranks' calls line up again, position by position, and no shift of one rank's
    calls against another's lines them up, shifted nothing: it is a pairing of two lines the program meant
    (review92d C1: transformers' run_glue before PR #1081, whose zero-first barriers pair line 7 with line 10 at
    call #1, was told "it started at call #1" of a barrier rank 0 alone made at #3, the all_reduce at #2 the same
    line on every rank)."""
    return next(
        (k for k, _ in _crossed(calls, None if before is None else before - 1) if not _realigned(calls, k, before)),
        None,
    )


def _realigned(calls: dict[int, list[Event]], k: int, before: int | None) -> bool:
    """Whether the ranks' calls after the crossing at position ``k`` (up to ``before``, exclusive) come from the
    same places on every rank, at least one of them, while no rank's calls from ``k + 1`` on pair place by place
    with another rank's from ``k`` on (an extra call at ``k`` on that rank)."""
    seqs = [[_chain_key(e) for e in c] for c in calls.values()]
    end = min(len(s) for s in seqs)
    if before is not None:
        end = min(end, before - 1)
    after = range(k, end)  # list indices of positions k + 1 .. end
    if not after or any(len({s[i] for s in seqs}) > 1 for i in after):
        return False
    for a in seqs:
        for b in seqs:
            pairs = range(k - 1, min(len(a) - 1, len(b)))
            if a is not b and pairs and all(a[i + 1] == b[i] for i in pairs):
                return False
    return True


def _crossed(calls: dict[int, list[Event]], limit: int | None = None) -> Iterator[tuple[int, list[Event]]]:
    """Each position (numbered from 1, up to ``limit``) whose call every rank made with the same op from different
    places (their whole chains of the learner's frames), every rank completing it, with the ranks' calls there."""
    depth = min((len(c) for c in calls.values()), default=0)
    for i in range(depth if limit is None else min(depth, limit)):
        at = [c[i] for c in calls.values()]
        if len({e.name for e in at}) == 1 and len({_chain_key(e) for e in at}) > 1 and all(map(_completed, at)):
            yield i + 1, at


#: Collectives that combine every rank's data with every other's, the same way on each: made from different lines
#: at one position, the ranks' different tensors are combined (a barrier from two lines is main_process_first;
#: a rooted call's root and receivers naturally differ).
_SYMMETRIC_DATA = frozenset({"all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                             "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "all_gather_object"})  # fmt: skip


def _crossed_data_calls(calls: dict[int, list[Event]], flights: dict) -> list[int]:
    """In a finished run, the positions (from 1) of each symmetric data collective (:data:`_SYMMETRIC_DATA`) that the ranks made from
    different lines (their whole chains) at the same position, every rank completing it: what each rank got
    combines what the others passed from another line. Not one torch or a library issued on some rank (the flight
    record's issuer: Join's shadow all_reduce on a rank that ran out of inputs pairs with DDP's on the others, by
    design), nor one made inside a DCP call."""
    issued = {(e.group, e.seq) for entries in (flights or {}).values() for e in entries if e.issuer and not e.p2p}
    return [
        k
        for k, at in _crossed(calls)
        if at[0].name in _SYMMETRIC_DATA and not any(e.within or (e.group or "0", e.seq) in issued for e in at)
    ]


def _swapped_pair(calls: dict[int, list[Event]], crossed: list[int]) -> tuple | None:
    """Two of the ``crossed`` positions, of one op, whose two lines of code (their text) some ranks ran in one
    order and the others in the other, every rank running one of the two orders: ((i, j), (ranks of one order,
    ranks of the other)), else None. Both calls then combined one line's tensors with the other's (review90d M3)."""
    for a, i in enumerate(crossed):
        for j in crossed[a + 1 :]:
            orders: dict[tuple, list[int]] = {}
            for rank, c in sorted(calls.items()):
                if c[i - 1].name != c[j - 1].name:
                    break
                texts = (
                    Site(c[i - 1].file or "", c[i - 1].line or 0).code,
                    Site(c[j - 1].file or "", c[j - 1].line or 0).code,
                )
                orders.setdefault(texts, []).append(rank)
            else:
                if len(orders) == 2:
                    (x, y), (u, v) = orders
                    if x and y and x != y and (x, y) == (v, u):
                        one, other = orders.values()
                        return (i, j), (one, other)
    return None


def _paired_across_lines(f: Facts, crossed: list[int]) -> list[int]:
    """In a finished run, the positions (from 1) not in ``crossed`` (the symmetric data calls the headline
    names already) where every rank completed the same collective made from different lines: what the ranks'
    calls met is their position, not their line (main_process_first, or an extra call evened out later). Not a
    group-making call, nor one torch or a library issued on some rank (Join's shadow all_reduce, by design)."""
    issued = {(e.group, e.seq) for entries in (f.flights or {}).values() for e in entries if e.issuer and not e.p2p}
    return [
        k
        for k, at in _crossed(f.calls)
        if k not in crossed
        and at[0].name not in GROUP_MAKERS
        and not any((e.group or "0", e.seq) in issued for e in at)
    ]


def _mispairing_evidence(calls: dict[int, list[Event]], k: int) -> list[str]:
    at = {r: c[k - 1] for r, c in calls.items()}
    groups: dict[tuple, list[int]] = {}
    for rank, event in sorted(at.items()):
        groups.setdefault(_chain_key(event), []).append(rank)
    parting_at = _parting_of(at)
    parts = [
        f"{rank_list(rs)} at {where_text(at[rs[0]])}{called_from(chain_of(at[rs[0]]), parting_at)}"
        for rs in groups.values()
    ]
    return [
        f"call #{k} ({at[next(iter(at))].name}) came from different lines, and the ranks passed it together: "
        + "; ".join(parts)
    ]


def _uneven_loop(calls, arrived, missing, k) -> bool:
    """The call that only some ranks made repeats a line every rank called before, reached through the same
    lines of the learner's code: a loop of uneven length. A helper's line reached from a call site the others
    never reached is no loop (corpus34's autocast item: Lightning's strategy.barrier() line, reached once more on
    rank 0 through save_checkpoint under `if trainer.is_global_zero:`, was told as "a loop ran a different number
    of times")."""

    extra = _chain_key(calls[arrived[0]][k - 1])
    return all(any(_chain_key(e) == extra for e in calls[r]) for r in missing) and any(
        _chain_key(e) == extra for e in calls[arrived[0]][: k - 1]
    )


def _outcomes(run: Run, at_k: dict[int, Event]) -> list[str]:
    lines = []
    never_left: dict[str, list[int]] = {}  # how each rank that never left the call ended (review18b)
    for r, e in sorted(at_k.items()):
        if e.end is None:
            never_left.setdefault(_ended_inside(run[r]), []).append(r)
    for how, ranks in never_left.items():
        lines.append(f"{rank_list(ranks)} never left it ({how})")
    errors = {r: e.error for r, e in sorted(at_k.items()) if e.error}
    kinds = {r: (explain_error(m) or ("", ""))[0] for r, m in errors.items()}
    timeout_ms = next((re.search(r"(\d+)ms", errors[r]).group(1) for r in errors if kinds[r] == "gloo timeout"), None)
    failed: dict[str, list[int]] = {}
    for r, message in errors.items():
        if timeout_ms and kinds[r] == "gloo timeout":
            text = (
                f"gloo gave up after {timeout_ms} ms waiting for a peer: the peer did not reach the matching call "
                "within the timeout in force (the group's, or the call's own timeout=), or reached a call that "
                "does not match it (another op, or other sizes)."
            )
        elif timeout_ms and kinds[r] == "peer gone":
            # which rank gives up first, and so which ones see a closed connection instead, is a race (review52b:
            # a late rank that failed at once was said to have waited the timeout with the others)
            text = (
                f"a peer closed its connection (a peer whose own {timeout_ms} ms timeout expired first closes its "
                "connections, as does one whose process ended): gloo reports that at once, without waiting for "
                "the timeout."
            )
        else:
            text = _error_text(run, message, waiting=set(errors))
        failed.setdefault(text, []).append(r)
    for text, ranks in failed.items():
        lines.append(f"{rank_list(ranks)} failed in it: {text}")
    return lines


def _ended_inside(result) -> str:
    """How a rank whose call never returned ended, in words."""
    if result.status == STOPPED:
        return "stopped at the deadline"
    if result.status == KILLED:
        return f"its process was killed by {_signal_name(result.signal)}"
    if result.status == EXITED:
        return f"its process exited with code {result.exit_code}"
    return str(result.status)


def _error_text(run: Run, message: str, waiting: set[int] = frozenset(), of: set[int] = frozenset()) -> str:
    """A known error as its explanation (stable across runs); an unknown one quoted, tidied. For a closed
    connection, the ranks whose processes ended by the end of the run, but for ``waiting``, the ranks that got
    the error in the call (a rank that caught it and returned is no peer that closed it: review75c C1); with
    ``of``, the ranks the text is said of, also the ranks that raised on a closed connection themselves before
    the last of them did (review83d C1: rank 0 waited only on rank 1, whose process had ended so, and was told
    of ranks 2 and 3 only)."""
    known = explain_error(message)
    if not known:
        return f"“{_clip(message)}”"
    text = known[1]
    if known[0] == "rendezvous":
        text = _own_store_text(run, message) or text
    if known[0] == "monitored barrier answer" and len(run.ranks) > 0:
        text = _monitored_answer_text(run, known[1])
    if known[0] == "peer gone" and not run.linger:
        last = max((run[r].ended for r in of if run[r].ended is not None), default=None)
        gone = [
            r.rank
            for r in run.ranks
            if r.rank not in waiting
            and (
                r.status == FINISHED
                or failed_by_itself(r)
                or (
                    r.status == RAISED
                    and r.rank not in of
                    and last is not None
                    and r.ended is not None
                    and r.ended < last
                )
            )
        ]
        if gone:
            text += f" Processes that had ended: {', '.join(f'rank {g} ({run[g].status})' for g in gone)}."
    return text


#: A learner's line that makes a TCPStore (a traceback's source line).
_MAKES_TCPSTORE = re.compile(r"\bTCPStore\(")


def _own_store_text(run: Run, message: str) -> str | None:
    """The rendezvous error of a TCPStore the learner's code made itself after its group was set up (review95d F7:
    "the group could not be set up ... check MASTER_ADDR/MASTER_PORT" of a side-channel store whose port each
    rank had picked for itself, the group having made a collective): said of that store, not of the group."""
    for result in run.ranks:
        if result.status != RAISED or (result.error_message or "").splitlines()[:1] != message.splitlines()[:1]:
            continue
        if not any(e.is_collective and e.end is not None and not e.error for e in result.events):
            continue  # no collective completed: the group itself may not have been set up
        lines = (result.traceback or "").splitlines()
        for i, line in enumerate(lines[:-1]):
            frame = re.match(r'\s*File "(.+)", line (\d+), in (.+)$', line)
            if frame and is_learners(frame.group(1)) and _MAKES_TCPSTORE.search(lines[i + 1]):
                place = Site(frame.group(1), int(frame.group(2)), frame.group(3)).place
                return (
                    f"the TCPStore made at {place} waited for clients that did not connect to it; the process "
                    "group had been set up (this rank had completed a collective), so this is that store's own "
                    "rendezvous, not the group's: every rank must pass that store the same host and port (a port "
                    "each rank picks for itself can differ between ranks: let one rank pick it and send it to the "
                    "others, with broadcast_object_list, or use a fixed one)."
                )
    return None


def _monitored_answer_text(run: Run, text: str) -> str:
    """The monitored barrier's answer that never came, said of what rank 0 did (review78d C1: a rank 0 that
    skipped the barrier and finished was said to have given up on the others, with an error naming them)."""
    zero = run[0]
    mine = explain_error(zero.error_message or "") if zero.status == RAISED else None
    # review80d C2: rank 0's own record, not only its status: its check's error may have been caught (DETAIL,
    # rank 0 returned it), or rank 0 may still have been in the monitored barrier (a monitored_barrier without
    # timeout= waits torch's default timeout, not the group's, and outlives the others' wait for its answer)
    caught = [e for e in zero.events if e.is_collective and e.error]
    last = next((e for e in reversed(zero.events) if e.is_collective), None)
    if (mine is not None and mine[0] == "monitored barrier") or any(
        (explain_error(e.error) or ("",))[0] == "monitored barrier" for e in caught
    ):
        why = "rank 0 gave up on the ranks that never came (its own error names them)"
    elif last is not None and last.name in ("monitored_barrier", "barrier") and last.end is None:
        why = (
            "rank 0 was in the monitored barrier too, still waiting for a rank that had not arrived "
            f"({_ended_inside(zero)} there)"
        )
    elif last is not None and last.name in ("monitored_barrier", "barrier") and last.error:
        # a CI run at load 9: rank 0 reached it and failed there on a closed connection (the rank that skipped it
        # had exited) before its own check's error; "never reached" contradicted its recorded call
        kind = (explain_error(last.error) or ("another error",))[0]
        why = f"rank 0 reached the monitored barrier too, and failed in it ({kind}) before sending any answer"
    else:
        why = f"rank 0 never reached the monitored barrier itself (rank 0 {zero.status})"
    return re.sub(r"the answer never came \(.*?\), and", f"the answer never came: {why}, and", text, count=1)


_NO_SUCH_FILE = re.compile(r"FileNotFoundError: \[Errno 2\] No such file or directory: '([^'\n]+)'")


#: torch.save's own writer into a folder that is not there (transformers #11618: each rank saved its RNG state
#: into the checkpoint folder rank 0 had not made yet; corpus round 36).
_NO_PARENT = re.compile(r"RuntimeError: Parent directory (.+?) does not exist\.")


def _error_path(result, error_type: type, *texts: re.Pattern) -> str | None:
    """The path of the ``error_type`` a rank raised, if that is how it failed: the rebuilt exception's filename,
    else the first of ``texts`` that matches the traceback's last line."""
    error = result.exception
    if isinstance(error, error_type) and isinstance(error.filename, str):
        return error.filename
    lines = (result.traceback or "").strip().splitlines()
    match = next((m for text in texts if lines and (m := text.search(lines[-1]))), None)
    return match.group(1) if match else None


def _missing_path(result) -> str | None:
    """The path of the FileNotFoundError a rank raised, if that is how it failed (or the folder torch.save found
    missing)."""
    return _error_path(result, FileNotFoundError, _NO_SUCH_FILE, _NO_PARENT)


_FILE_EXISTS = re.compile(r"FileExistsError: \[Errno 17\] File exists: '([^'\n]+)'")


def _existing_path(result) -> str | None:
    """The path of the FileExistsError a rank raised, if that is how it failed."""
    return _error_path(result, FileExistsError, _FILE_EXISTS)


def _made_first(run: Run, rank: int) -> tuple[int, object] | None:
    """For a rank that failed making a path that was there (FileExistsError: ``os.mkdir``, ``os.makedirs``
    without ``exist_ok``, ``Path.mkdir``, ``os.symlink``, an exclusive create): the other rank that made that
    path first, and its event (Project-MONAI/MONAI #2374, corpus round 33: every rank checked that the cache
    folder was missing, then made it; the second one failed, told as "failed by itself"). None when the record
    names no other rank that made it."""
    path = _existing_path(run[rank])
    if not path:
        return None
    failed_at = next((e.start for e in reversed(run[rank].events) if e.kind == "file" and e.path == path), math.inf)
    made = [
        (e.start, other.rank, e)
        for other in run.ranks
        if other.rank != rank
        for e in other.events
        if e.kind == "file" and e.start <= failed_at and e.name in ("mkdir", "write") and e.path == path
    ]
    if not made:
        return None
    _, who, event = min(made, key=lambda m: m[0])
    return who, event


def _unordered_read_evidence(result, races: list) -> list[str]:
    """For a rank that raised (``result``): the race of ``races`` (the run's ordering model) between its last read
    of a file and another rank's change of it (round 30's datasets item: rank 0's json.load raised while rank 1
    rewrote dataset_infos.json; the diagnosis named rank 0's line only). What it read may have been half
    written: the race names the other rank's line, the cause."""
    if result.status != RAISED:
        return []
    rank = result.rank
    reads = [e for e in result.events if e.kind == "file" and e.name == "read"]
    last = reads[-1] if reads else None
    for race in races if reads else ():
        if race.made:
            continue
        mine = next((a for a in (race.first, race.second) if a.rank == rank and a.event is last), None)
        other = race.second if mine is race.first else race.first
        if mine is not None and other.rank != rank and other.how in ("write", "append", "rename", "remove"):
            return [f"rank {rank}'s last read before it raised was not ordered against another rank's change: {race}"]
    return _unordered_use_in_the_raising_call(result, races)


def _last_read_found_no_file(result) -> bool:
    """Whether the rank's last recorded read of a file (the one :func:`_unordered_read_evidence` names) found no
    file: what it raced was the file's making, not a half-written file."""
    reads = [e for e in result.events if e.kind == "file" and e.name == "read"]
    return bool(reads) and ordering.found_no_file(reads[-1])


#: How :func:`_unordered_use_in_the_raising_call`'s evidence begins (after "rank N"): a use of a file that is not a
#: read (a write, a look), told as such.
USED_IN_THE_RAISING_CALL = "'s use of a file in the call that raised"


def _unordered_use_in_the_raising_call(result, races: list) -> list[str]:
    """For a rank that raised an exception of its own after a file it was using changed under it (round 43's
    PufferDrive item: rank 0 wrote `./visualize`, rank 1 removed it and wrote its own, rank 0's build checked the
    size and raised RuntimeError; told as "rank 0 failed by itself"): the race, of ``races``, between a file access
    the rank made inside the call that raised and another rank's change of that file made before the rank's last
    such access. A file access records its own line, not its callers: inside the call means after the rank's last
    collective, in the function that raised or in one the traceback does not pass through (a helper it called
    that returned), not in the functions that called it (a ``finally:`` there runs after the raise). The latest
    access first."""
    chain = _raised_chain(result)
    if len(chain.frames) < 2:
        return []
    caller = chain.frames[-2]
    inner = chain.frames[-1].func
    outer = {site.func for site in chain.frames[:-1]} - {inner}
    calls = [e.end or e.start for e in result.events if e.kind in CALL_KINDS and (e.end or e.start) is not None]
    after = max(calls, default=None)
    inside = [
        e
        for e in result.events
        if e.kind == "file"
        and (e.func == inner or e.func not in outer)
        and (after is None or (e.start is not None and e.start >= after))
    ]
    if not inside:
        return []
    last = max((e.start for e in inside if e.start is not None), default=None)
    for event in reversed(inside):
        for race in races:
            if race.made:
                continue
            mine = next((a for a in (race.first, race.second) if a.rank == result.rank and a.event is event), None)
            other = race.second if mine is race.first else race.first
            if mine is None or other.rank == result.rank or other.how not in ("write", "append", "rename", "remove"):
                continue
            start = getattr(other.event, "start", None)
            if last is not None and start is not None and start > last:
                continue  # a change after the rank's last use (its peers' clean-up once it had failed)
            return [
                f"rank {result.rank}{USED_IN_THE_RAISING_CALL} ({caller.place}, in {caller.func}) was not ordered "
                f"against another rank's change: {race}"
            ]
    return []


def _missing_file_evidence(run: Run, rank: int) -> list[str]:
    """For a rank that failed on a file that was not there: what the record says became of it (see
    :func:`_missing_file_cause`)."""
    return _missing_file_cause(run, rank)[1]


def _t(run: Run, seconds: float) -> str:
    """A moment of the run as the diagnosis prints it: counted from the first rank's start of its function
    (:func:`events.ranks_start`), as run.races() and the timelines count (review73c M4: one file access was
    t=0.409 s here and t=0.302 s in run.races(), the diagnosis counting from the launch)."""
    return f"t={seconds - ranks_start(run):.3f} s"


def _missing_file_cause(run: Run, rank: int) -> tuple[str, list[str], int | None, object]:
    """For a rank that failed on a file that was not there: what the record says became of it — the rank that
    removed it (or its folder) or renamed it away ("gone"), the rank that wrote it after the look ("later"),
    else that no rank made it, with what they wrote into its folder instead ("never"). The cause is far from the
    line that raised (round 24: keep-last-2 rotation on rank 0 deleted the checkpoint a stale tracker on rank 1
    then loaded; part files named by the local rank), the rank that removed or wrote it, and its event.
    ("", [], None, None) when the record cannot say."""
    path = _missing_path(run[rank])
    if not path:
        return "", [], None, None

    def named(p: str | None) -> bool:
        return bool(p) and (p == path or (not os.path.isabs(path) and p.endswith(os.sep + path)))

    looks = [e.start for e in run[rank].events if e.kind == "file" and named(e.path) and ordering.found_no_file(e)]
    looked = looks[-1] if looks else math.inf  # what happened after the rank looked (its clean-up) is no cause
    if not looks and run[rank].ended is not None and _NO_PARENT.search(run[rank].traceback or ""):
        looked = run[rank].ended  # torch.save's native writer is not recorded: the rank failed by then
    gone, made, nearby, later, elsewhere = [], [], [], [], []
    for result in run.ranks:
        for e in result.events:
            if e.kind != "file" or not e.path:
                continue
            if e.start > looked:
                written = e.to if e.name == "rename" and e.to else e.path
                if result.rank != rank and e.name in ("write", "append", "rename", "mkdir") and named(written):
                    later.append((e.start, result.rank, e))  # made after the look: too late (attack25 a02)
                elif result.rank != rank and _renames_its_folder(e, path):
                    later.append((e.start, result.rank, e))  # its folder renamed into place after the look (round 33)
                continue
            if e.name == "remove" and (named(e.path) or path.startswith(e.path.rstrip(os.sep) + os.sep)):
                gone.append((e.start, result.rank, "removed", e))  # the file, or a folder holding it (rmtree)
            elif e.name == "rename" and named(e.path):
                gone.append((e.start, result.rank, f"renamed it to {e.to}", e))
            elif e.name in ("write", "append") or (e.name == "rename" and e.to):
                written = e.to if e.name == "rename" else e.path
                if named(written):
                    made.append(e)
                elif os.path.basename(written) != os.path.basename(path):
                    nearby.append((result.rank, written, e))
                elif result.rank != rank:
                    elsewhere.append((result.rank, written, e))  # its name, in another folder (round 38)
    if gone:
        _, who, how, e = min(gone, key=lambda g: g[0])
        what = "it" if named(e.path) else f"its folder {e.path}"
        verb = f"removed {what}" if how == "removed" else how
        return "gone", [f"rank {rank} looked for {path}: rank {who} had {verb} at {where_text(e)}"], who, e
    if made:  # made and not removed: gone by other means (another process, a mount) — the record cannot say
        return "", [], None, None
    if later:  # the textbook missing barrier: the reader came first
        t, who, e = min(later, key=lambda w: w[0])
        made_it = f"renamed its folder to {e.to}" if _renames_its_folder(e, path) else "wrote it"
        if e.name == "mkdir":
            said = (
                f"rank {rank} used the folder {path} (it failed by {_t(run, looked)}) before rank {who} made it at "
                f"{where_text(e)} ({_t(run, t)}): nothing ordered the use after the making (a barrier after it, or "
                "os.makedirs(..., exist_ok=True) on every rank before its own use)"
            )
        else:
            said = (
                f"rank {rank} looked for {path} at {_t(run, looked)}, before rank {who} {made_it} at {where_text(e)} "
                f"({_t(run, t)}): nothing ordered the read after the write (a barrier after the write, or a store key "
                "the writer sets once the file is complete)"
            )
        return (
            "later",
            [said],
            who,
            e,
        )
    folder = os.path.dirname(path) if os.path.isabs(path) else None
    others = sorted({(r, w, where_text(e)) for r, w, e in nearby if folder and os.path.dirname(w) == folder})
    line = f"rank {rank} looked for {path}, and no rank wrote it during the run"
    if others:
        by_line: dict[str, list[str]] = {}
        for r, w, where in others[:8]:
            by_line.setdefault(where, []).append(f"rank {r} {os.path.basename(w)}")
        shown = "; ".join(f"at {where}: {', '.join(files)}" for where, files in by_line.items())
        line += f". Into that folder the ranks wrote, {shown}" + (
            f" (and {len(others) - 8} more)" if len(others) > 8 else ""
        )
    lines = [line]
    if elsewhere:  # VLMEvalKit (round 38): each rank named the output folder from its own clock
        r, written, e = elsewhere[0]
        lines.append(
            f"a file of that name was written in another folder: rank {r} wrote {written} at {where_text(e)}; the "
            "ranks built different paths for it: check how each computes the folder (a clock, a random draw or the "
            "rank in the name gives each rank its own; compute it on one rank and broadcast it)"
        )
    return "never", lines, None, None


def _renames_its_folder(event: Event, path: str) -> bool:
    """Whether ``event`` is a rename whose new name is a folder holding ``path`` (``step0-tmp`` -> ``step0``)."""
    return event.name == "rename" and bool(event.to) and path.startswith(event.to.rstrip(os.sep) + os.sep)


def _how_ended(result) -> str:
    """A failed rank's status in words, with the signal that killed it (``killed by SIGKILL``)."""
    if result.status == KILLED and result.signal is not None:
        return f"killed by {_signal_name(result.signal)}"
    return str(result.status)


def _rank_failed(run: Run, causes: list[int], consequence: str, evidence: list[str], site) -> Diagnosis:
    statuses = ", ".join(sorted({_how_ended(run[r]) for r in causes}))
    raised = [r for r in causes if run[r].traceback and run[r].status == RAISED]
    # a killed or exited rank has no traceback: its exit status and what it printed are what there is (review46b M3)
    ended = "run[rank].exit_code / run[rank].signal, what it printed in run[rank].stderr"
    if all(run[r].status == LOST for r in causes):  # nothing of how it ended reached the record (attack24 a04)
        where = (
            "nothing of how it ended was recorded: torchrun's output on its machine says why (the machine or its "
            "agent died, or the agent stopped it), and what it printed is in run[rank].stderr"
        )
    elif len(raised) == len(causes):
        where = "its traceback is in run[rank].traceback"
    elif not raised:
        where = f"its exit code or signal is in {ended}"
    else:
        where = f"run[rank].traceback holds a raised rank's traceback; a killed or exited rank's exit code or signal is in {ended}"
    fix_first = f"Fix the failing rank first: {where}."
    advice = (
        "When a rank's process "
        "ends, the ranks whose current wait is on it fail at once (closed connection), while the others can "
        "still wait the full timeout (notebook 04 §2 shows both); if it stays alive but stops calling collectives "
        f"(it caught the exception and moved on), they wait until the timeout ({DEFAULT_TIMEOUTS})."
    )
    if any(run[r].status == KILLED and run[r].signal == signal.SIGKILL for r in causes):
        advice += (  # attack24 a06: a rank the out-of-memory killer ended was only "killed by SIGKILL"
            # review94d F6: "comes from outside the process" was said of ranks that killed themselves (os.kill
            # with their own pid); the record does not show who sent the signal
            " SIGKILL cannot be caught, and the record does not show who sent it: the kernel (most often its "
            "out-of-memory killer; the kernel log, `dmesg`, or the container's memory events say so; a Binder "
            "session has 2 GB), another process (a job scheduler, a `kill -9`), or the rank itself "
            "(`os.kill(os.getpid(), signal.SIGKILL)`)."
        )
    if 0 in causes and (run[0].status == RAISED or (run[0].status == EXITED and run[0].traceback)):
        advice += (  # review93d M1: not for a rank 0 that was killed or called os._exit: nothing can pass that on
            " For rank-0-only preparation, barrierlab.main_process_first() passes an exception rank 0 raises "
            "to every rank instead of leaving them waiting."
        )
    # the learner's line they raised at, when every cause raised at the same one (one rank, or several)
    # or where it called sys.exit() (an exited rank's traceback is its SystemExit's)
    raised_at = {_raised_at(run[r]) for r in causes if run[r].status in (RAISED, EXITED)}
    where = raised_at.pop() if len(raised_at) == 1 and all(run[r].status in (RAISED, EXITED) for r in causes) else ""
    if where:  # the learner's whole chain down to it, as a traceback (round 23: a raise three calls deep)
        evidence = _own_code_traceback(run, causes[0]) + evidence
    found_races = None  # the ordering model, built only when a cause raised with nothing missing to tell
    unordered: dict[int, str] = {}  # a cause whose failing file access nothing ordered against another rank's
    for rank in causes:
        kind, missing, who, change = _missing_file_cause(run, rank)
        if run[rank].status == RAISED and kind in ("", "gone"):
            found_races = ordering.races(run) if found_races is None else found_races
        if kind == "later":
            made_it = (
                "renamed its folder into place" if _renames_its_folder(change, _missing_path(run[rank])) else "wrote it"
            )
            if change.name == "mkdir":  # transformers #11618: a rank saved into a folder rank 0 made later
                unordered[rank] = f"used a folder before rank {who} made it"
            else:
                unordered[rank] = f"read a file before rank {who} {made_it}"
        elif kind == "gone" and any(
            change in (r.first.event, r.second.event) and rank in (r.first.rank, r.second.rank)
            for r in found_races or ()
        ):
            gone = "removed" if change.name == "remove" else "renamed away"
            unordered[rank] = f"looked for a file rank {who} had {gone}, nothing ordering the two"
        if not missing and run[rank].status == RAISED:
            missing = _unordered_read_evidence(run[rank], found_races)
            if missing:
                unordered[rank] = (
                    "used a file another rank was changing, nothing ordering the two"
                    if USED_IN_THE_RAISING_CALL in missing[0]
                    else "read a file another rank was changing, nothing ordering the two"
                )
        evidence += missing
    explained = {r: explain_error(run[r].error_message) for r in causes}
    stdin = [r for r, known in explained.items() if known and known[0] == "stdin"]
    if stdin:
        evidence.append(f"{rank_list(stdin)} raised: {explained[stdin[0]][1]}")
    for result in run.ranks:  # where the others were when it failed (the calls they waited in)
        if result.rank in causes or result.status == FINISHED:
            continue
        last = next((e for e in reversed(result.events) if e.kind in CALL_KINDS or e.name == "Work.wait"), None)
        if last is not None and (last.error or last.end is None):
            evidence.append(f"rank {result.rank} was waiting in {last.name} at {where_text(last)}")
    how = f"failed by {'themselves' if len(causes) > 1 else 'itself'}"
    unused = [r for r in causes if (explained[r] or ("",))[0] == "ddp unused parameters"]
    if unused and len(unused) == len(causes):
        indices = {r: _UNUSED_INDICES.search(run[r].error_message or "") for r in unused}
        listed = {r: ", ".join(m.group(1).split()) for r, m in indices.items() if m}
        if len(unused) == 1:
            gave = f"parameters {listed[unused[0]]}" if listed else "some parameters"
        else:
            gave = "some parameters" + (" (" + "; ".join(f"rank {r}: {p}" for r, p in listed.items()) + ")") * bool(
                listed
            )
        its = "its" if len(unused) == 1 else "their"
        how = f"failed in DDP: {its} previous step gave {gave} no gradient, which DDP found at the next forward"
        fix_first = (
            "Make the loss use every parameter of the model on every rank at every step: a branch that leaves a "
            "head or a loss term out for some batches (an empty batch, a rank-dependent condition) leaves those "
            "parameters without a gradient, DDP never starts their bucket's all_reduce, and the other ranks wait "
            "in it. Keep them in the graph (add the skipped term times 0 to the loss), or pass "
            "find_unused_parameters=True to DistributedDataParallel (it then looks for unused parameters after "
            "every forward, at a cost); TORCH_DISTRIBUTED_DEBUG=INFO makes the error name the parameters."
        )
    first = {r: _made_first(run, r) for r in causes if run[r].status == RAISED}
    first = {r: made for r, made in first.items() if made is not None}
    if first and set(first) == set(causes):
        for r, (who, event) in first.items():
            evidence.append(
                f"rank {r} tried to make {_existing_path(run[r])}, which rank {who} had made first at "
                f"{where_text(event)} ({_t(run, event.start)})"
            )
        makers = sorted({who for who, _ in first.values()})
        how = f"failed to make a path that {rank_list(makers)} had made first (each rank makes it)"
        fix_first = (
            "Every rank makes the same folder or file, and only the first to do so succeeds (a check that it is "
            "missing, then a make, is no better: each rank can pass the check before any makes it). Make it with "
            "os.makedirs(path, exist_ok=True) (Path.mkdir(parents=True, exist_ok=True)) on every rank, or on one "
            "rank before a barrier that the others wait at before they use it."
        )
    elif unordered and set(unordered) == set(causes):  # corpus32: three file races told as "failed by itself"
        how = f"failed on a file hand-off ({'; '.join(sorted(set(unordered.values())))})"
        fix_first = (
            "Order the hand-off on every rank: a barrier (or another synchronising call) after the write is "
            "complete and before any read, and a removal (or a rename away) only after every rank has read (the "
            "evidence names both sides; the traceback is in run[rank].traceback)."
        )
    advice = f"{fix_first} {advice}"
    return Diagnosis(
        "rank-failed",
        f"{rank_list(causes)} {how} ({statuses}{where}), {consequence}.",
        evidence,
        advice,
        ranks=causes,
        site=site,
    )
