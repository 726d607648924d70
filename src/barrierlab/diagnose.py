"""Explain a failed or stopped run in plain words.

The explanation comes from aligning the ranks' collective calls (the *ledger*: call #1, #2, ... on each
rank, with its op and call site), finding the first call where the ranks disagree, and combining that
with how each rank ended (returned, raised, exited, killed, stopped at the deadline with its stack) and
with torch's own error messages, which are translated by :func:`explain_error`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from barrierlab.record import Event
from barrierlab.result import EXITED, FINISHED, KILLED, RAISED, SETUP_FAILED, STOPPED, Run, _signal_name, tidy
from barrierlab.sites import Site

RULES = (
    "Every rank of a group must call every collective, in the same order, the same number of times."
)

# (pattern, name, explanation) for torch / gloo messages a learner meets. Explanations must not depend
# on details that vary between runs (which round of the barrier, send or recv, the peer's port).
_ERRORS = (
    (re.compile(r"Timed out waiting (\d+)ms"), "gloo timeout",
     "gloo gave up after {0} ms waiting for a peer: the peer never reached the matching collective "
     "within the group's timeout."),
    (re.compile(r"Connection closed by peer|Connection reset by peer|Broken pipe"), "peer gone",
     "a peer closed its connection while this rank was waiting on it: the peer's process ended, or the peer "
     "gave up after its own timeout. gloo reports a closed connection at once, without waiting for the timeout."),
    (re.compile(r"Application timeout caused pair closure"), "poisoned group",
     "an earlier timeout on this rank closed its connections, so the group is unusable: every later "
     "collective fails at once. Start a new process group (a new run)."),
    (re.compile(r"Detected mismatch between collectives"), "debug mismatch",
     "TORCH_DISTRIBUTED_DEBUG=DETAIL compared the ranks' calls before running them and found different "
     "collectives at the same position. The op name it reports for the *other* rank can be wrong: check "
     "that rank's own call."),
    (re.compile(r"Ranks? ([\d, ]+) failed to pass monitoredBarrier"), "monitored barrier",
     "monitored_barrier on rank 0 waited for every rank and names the ones that never arrived: {0}."),
    (re.compile(r"size doesn't match|EnforceNotMet"), "size mismatch",
     "the ranks passed tensors of different sizes to the same collective; gloo cannot combine them."),
    (re.compile(r"rank (\d+) failed while preparing"), "main process failed",
     "main_process_first passed on rank {0}'s failure: this rank did not fail by itself."),
    (re.compile(r"Socket Timeout|connectFullMesh"), "rendezvous",
     "the group could not be set up: a peer never connected (it exited, or was never started)."),
)

#: Errors that are consequences of another rank's problem, not causes.
_SECONDARY = {"gloo timeout", "peer gone", "poisoned group", "main process failed", "rendezvous"}


def explain_error(message: str) -> tuple[str, str] | None:
    """(short name, plain explanation) of a torch.distributed / gloo error message, if it is a known one."""
    for pattern, name, text in _ERRORS:
        match = pattern.search(message or "")
        if match:
            return name, text.format(*[g.strip() for g in match.groups()])
    return None


def rank_list(ranks: list[int]) -> str:
    """'rank 2', 'ranks 1 and 3', 'ranks 1–3', 'ranks 0, 2 and 5'."""
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}–{ranks[-1]}"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def collectives(run: Run) -> dict[int, list[Event]]:
    """Each rank's collective calls in order (#1, #2, ...)."""
    return {r.rank: sorted((e for e in r.events if e.is_collective), key=lambda e: e.seq) for r in run.ranks}


def _where(event: Event) -> str:
    return event.where or (f"{event.file}:{event.line}" if event.file else "an unknown line")


def _site_key(event: Event) -> tuple:
    return (event.file, event.line)


def ledger(run: Run) -> str:
    """A table of every rank's collective calls side by side: the first place they disagree stands out."""
    calls = collectives(run)
    depth = max((len(c) for c in calls.values()), default=0)
    header = ["#"] + [f"rank {r}" for r in calls]
    rows = []
    for i in range(depth):
        row = [str(i + 1)]
        for rank, events in calls.items():
            if i >= len(events):
                row.append("—")
                continue
            e = events[i]
            state = "" if e.end is not None and not e.error else (" (never left)" if e.end is None else " (failed)")
            row.append(f"{e.name} @ line {e.line}{state}" if e.line else e.name + state)
        rows.append(row)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines) if rows else "no collective calls were recorded"


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


def _how_it_ended(result, calls: list[Event]) -> str:
    n = len(calls)
    after = f"after {n} collective call{'s' if n != 1 else ''}"
    if result.status == FINISHED:
        return f"returned from the function {after}"
    if result.status == RAISED:
        return f"raised {result.error_message.splitlines()[0]} {after}"
    if result.status == SETUP_FAILED:
        return f"failed before the function started: {result.error_message.splitlines()[0]}"
    if result.status == EXITED:
        return f"exited (code {result.exit_code}) {after}"
    if result.status == KILLED:
        return f"was killed by {_signal_name(result.signal)} {after}"
    if result.status == STOPPED:
        stuck = f", stuck {result.stuck}" if result.stuck else ""
        return f"was stopped at the deadline {after}{stuck}"
    return result.status


def _error_evidence(run: Run, ranks: list[int], skip: dict[int, Event] | None = None) -> list[str]:
    """Explain each rank's exception, unless it was already explained at the collective it failed in."""
    by_text: dict[str, list[int]] = {}
    for rank in ranks:
        result = run[rank]
        if result.status != RAISED or (skip and rank in skip and skip[rank].error):
            continue
        message = result.error_message.splitlines()[0] if result.error_message else ""
        if explain_error(message):
            by_text.setdefault(_error_text(run, message), []).append(rank)
    return [f"{rank_list(rs)} raised: {text}" for text, rs in by_text.items()]


def _is_cause(result) -> bool:
    """A rank that failed by itself (its own exception, exit or signal), not as a consequence of a peer."""
    if result.status in (EXITED, KILLED, SETUP_FAILED):
        return True
    if result.status != RAISED:
        return False
    known = explain_error(result.error_message)
    return known is None or known[0] not in _SECONDARY


def _clip(text: str, limit: int = 110) -> str:
    text = tidy(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def diagnose(run: Run) -> Diagnosis:
    """Explain ``run``: the first disagreement between the ranks' collective calls, and how each rank ended."""
    diagnosis = _diagnose(run)
    if not diagnosis.ok:
        diagnosis.evidence += _flight_evidence(run)
    return diagnosis


def _flight_evidence(run: Run) -> list[str]:
    """A second opinion from torch's flight recorder when the ranks' counts of issued collectives differ.

    It is torch's own log (a private API, read when available), and it also sees collectives issued from
    C++, such as DDP's gradient all_reduces, which barrierlab's recorder does not."""
    flights = {r.rank: r.flight for r in run.ranks if r.flight is not None}
    if len(flights) < 2 or len({len(f) for f in flights.values()}) == 1:
        return []
    by_count: dict[int, list[int]] = {}
    for rank, entries in sorted(flights.items()):
        by_count.setdefault(len(entries), []).append(rank)
    parts = []
    for count, ranks in sorted(by_count.items(), reverse=True):
        last = flights[ranks[0]][-1][0] if count else ""
        parts.append(f"{rank_list(ranks)} issued {count}" + (f" (last: {last})" if last else ""))
    unread = [r for r in range(run.world_size) if r not in flights]
    tail = f"; no record from {rank_list(unread)} (stopped before it could be read)" if unread else ""
    return ["torch's flight recorder counts the collectives each rank issued: " + "; ".join(parts) + tail]


def _diagnose(run: Run) -> Diagnosis:
    calls = collectives(run)
    depth = {r: len(c) for r, c in calls.items()}
    first_diff = _first_divergence(calls)
    mispaired = _mispaired(calls, first_diff)

    if first_diff is None:
        failed = [r.rank for r in run.ranks if not r.ok]
        if not failed:
            return Diagnosis("ok", f"All {run.world_size} ranks finished, after the same "
                                   f"{max(depth.values(), default=0)} collective calls in the same order.")
        return _failure_without_divergence(run, calls, failed)

    k = first_diff
    at_k = {r: c[k - 1] for r, c in calls.items() if len(c) >= k}
    missing = sorted(set(calls) - set(at_k))
    evidence = []
    if mispaired:
        evidence += _mispairing_evidence(calls, mispaired)

    names = {e.name for e in at_k.values()}
    if len(names) > 1:
        by_op: dict[str, list[int]] = {}
        for rank, event in sorted(at_k.items()):
            by_op.setdefault(event.name, []).append(rank)
        evidence += [f"{rank_list(rs)} called {op} #{k} at {_where(at_k[rs[0]])}" for op, rs in by_op.items()]
        evidence += [f"{rank_list([r])} {_how_it_ended(run[r], calls[r])}" for r in missing]
        evidence += _outcomes(run, at_k)
        evidence += _error_evidence(run, list(at_k), at_k)
        return Diagnosis(
            "mismatched-collectives",
            f"Different collectives at the same position: call #{k} is "
            + " on some ranks and ".join(sorted(names)) + " on others.",
            evidence,
            "gloo does not match different ops: each rank waits for a partner that never comes, until the "
            "timeout. Make every rank call the same collectives in the same order. "
            "TORCH_DISTRIBUTED_DEBUG=DETAIL reports such a mismatch in milliseconds while you develop.",
            ranks=sorted(at_k), site=_site(next(iter(at_k.values()))),
        )

    arrived = sorted(at_k)
    event = at_k[arrived[0]]
    op = event.name
    evidence.append(f"{rank_list(arrived)} called {op} #{k} at {_where(event)}")
    missing_how = {r: _how_it_ended(run[r], calls[r]) for r in missing}
    for how in sorted(set(missing_how.values())):
        same = [r for r in missing if missing_how[r] == how]
        evidence.append(f"{rank_list(same)} never made a {_ordinal(k)} collective call: "
                        f"{'they' if len(same) > 1 else 'it'} {how}")
    evidence += _outcomes(run, at_k)
    evidence += _error_evidence(run, arrived, at_k)

    crashed = [r for r in missing if _is_cause(run[r])]
    if crashed and not mispaired:
        return _rank_failed(run, crashed, f"so the others waited for {'them' if len(crashed) > 1 else 'it'} "
                                          f"in {op} #{k}", evidence, _site(event))
    still_running = [r for r in missing if run[r].status == STOPPED]
    if still_running and len(still_running) == len(missing) and not mispaired:
        return Diagnosis(
            "still-running",
            f"{rank_list(still_running)} had not reached call #{k} ({op}) yet when the deadline stopped "
            f"{'them' if len(still_running) > 1 else 'it'}: still busy, not missing.",
            evidence,
            "Look at where the slow ranks were (run.stuck); if that work is expected to take this long, "
            "give the run a longer `deadline` (and `timeout`).",
            ranks=still_running, site=_site(event),
        )
    if mispaired:
        return Diagnosis(
            "silent-mispairing",
            f"A collective was silently paired with a different call: the failure shows at {op} #{k}, "
            f"but it started at call #{mispaired}.",
            evidence,
            "An extra collective on some ranks does not hang where it is: it pairs with the next call of the "
            "same kind on the other ranks, and the job fails later somewhere innocent (or never). "
            + RULES + " Remove the extra call or make every rank make it.",
            ranks=arrived, site=_site(calls[arrived[0]][mispaired - 1]),
        )
    if _uneven_loop(calls, arrived, missing, k):
        counts = {r: sum(1 for e in calls[r] if _site_key(e) == _site_key(event)) for r in calls}
        evidence.append("calls of " + op + f" at line {event.line}: "
                        + ", ".join(f"rank {r}: {n}" for r, n in sorted(counts.items())))
        return Diagnosis(
            "uneven-loop",
            f"A loop ran a different number of times on different ranks: {rank_list(arrived)} made more "
            f"{op} calls at line {event.line} than {rank_list(missing)}.",
            evidence,
            "Give every rank the same number of iterations (pad or drop the uneven data, as "
            "DistributedSampler(drop_last=True) does), or agree on the count first with an all_reduce(MIN); "
            "for DDP, torch.distributed.algorithms.Join handles uneven inputs.",
            ranks=arrived, site=_site(event),
        )
    return Diagnosis(
        "only-some-ranks",
        f"A collective reached by only some ranks: {rank_list(arrived)} called {op} #{k}; "
        f"{rank_list(missing)} never did.",
        evidence,
        RULES + " Look for a rank-dependent `if`, an early `return`/`continue`, or a helper called on some "
        "ranks only that contains a collective; move the collective where every rank reaches it "
        "(barrierlab.lint finds these statically).",
        ranks=arrived, site=_site(event),
    )


def _site(event: Event) -> Site | None:
    return Site(event.file, event.line, event.func or "") if event.file else None


def _first_divergence(calls: dict[int, list[Event]]) -> int | None:
    depth = max((len(c) for c in calls.values()), default=0)
    for i in range(depth):
        at = [c[i] if i < len(c) else None for c in calls.values()]
        if any(e is None for e in at) or len({e.name for e in at}) > 1:
            return i + 1
    return None


def _mispaired(calls: dict[int, list[Event]], before: int | None) -> int | None:
    """The first call that ranks made from different lines although the op matched (and it completed)."""
    depth = min((len(c) for c in calls.values()), default=0)
    limit = depth if before is None else min(depth, before - 1)
    for i in range(limit):
        at = [c[i] for c in calls.values()]
        if len({e.name for e in at}) == 1 and len({_site_key(e) for e in at}) > 1:
            return i + 1
    return None


def _mispairing_evidence(calls: dict[int, list[Event]], k: int) -> list[str]:
    at = {r: c[k - 1] for r, c in calls.items()}
    groups: dict[tuple, list[int]] = {}
    for rank, event in sorted(at.items()):
        groups.setdefault(_site_key(event), []).append(rank)
    parts = [f"{rank_list(rs)} at {_where(at[rs[0]])}" for rs in groups.values()]
    return [f"call #{k} ({at[next(iter(at))].name}) came from different lines, and the ranks passed it together: "
            + "; ".join(parts)]


def _uneven_loop(calls, arrived, missing, k) -> bool:
    """The call that only some ranks made repeats a line every rank called before: a loop of uneven length."""
    key = _site_key(calls[arrived[0]][k - 1])
    return all(any(_site_key(e) == key for e in calls[r]) for r in missing) and any(
        _site_key(e) == key for e in calls[arrived[0]][: k - 1]
    )


def _outcomes(run: Run, at_k: dict[int, Event]) -> list[str]:
    lines = []
    never_left = [r for r, e in at_k.items() if e.end is None]
    if never_left:
        lines.append(f"{rank_list(never_left)} never left it (stopped at the deadline)")
    errors = {r: e.error for r, e in sorted(at_k.items()) if e.error}
    kinds = {r: (explain_error(m) or ("", ""))[0] for r, m in errors.items()}
    timeout_ms = next((re.search(r"(\d+)ms", errors[r]).group(1) for r in errors if kinds[r] == "gloo timeout"), None)
    failed: dict[str, list[int]] = {}
    for r, message in errors.items():
        if timeout_ms and kinds[r] in ("gloo timeout", "peer gone"):
            # Which rank gives up first, and so which ones see a closed connection instead, is a race.
            text = (f"gloo gave up after {timeout_ms} ms waiting for a peer (a rank whose peer gave up first "
                    "sees the closed connection instead): the peer never reached the matching collective "
                    "within the group's timeout.")
        else:
            text = _error_text(run, message)
        failed.setdefault(text, []).append(r)
    for text, ranks in failed.items():
        lines.append(f"{rank_list(ranks)} failed in it: {text}")
    return lines


def _error_text(run: Run, message: str) -> str:
    """A known error as its explanation (stable across runs); an unknown one quoted, tidied."""
    known = explain_error(message)
    if not known:
        return f"“{_clip(message)}”"
    text = known[1]
    if known[0] == "peer gone" and not run.linger:
        gone = [r.rank for r in run.ranks if r.status == FINISHED or _is_cause(r)]
        if gone:
            text += f" Processes that had ended: {', '.join(f'rank {g} ({run[g].status})' for g in gone)}."
    return text


def _rank_failed(run: Run, causes: list[int], consequence: str, evidence: list[str], site) -> Diagnosis:
    statuses = ", ".join(sorted({run[r].status for r in causes}))
    advice = ("Fix the failing rank first: its traceback is in run[rank].traceback. When a rank's process "
              "ends, the others fail at their next collective at once (closed connection); if it stays alive "
              "but stops calling collectives (it caught the exception and moved on), they wait until the "
              "timeout.")
    if 0 in causes:
        advice += (" For rank-0-only preparation, barrierlab.main_process_first() passes rank 0's failure "
                   "to every rank instead of leaving them waiting.")
    return Diagnosis("rank-failed", f"{rank_list(causes)} failed by {'themselves' if len(causes) > 1 else 'itself'} "
                     f"({statuses}), {consequence}.", evidence, advice, ranks=causes, site=site)


def _failure_without_divergence(run: Run, calls, failed: list[int]) -> Diagnosis:
    evidence = [f"rank {r} {_how_it_ended(run[r], calls[r])}" for r in failed]
    evidence += _error_evidence(run, failed)
    stuck = [r for r in failed if run[r].status == STOPPED]
    if stuck and len(stuck) == len(failed):
        return Diagnosis(
            "stopped", f"{rank_list(stuck)} did not finish before the deadline, outside any collective.",
            evidence, "The function ran longer than the deadline; raise `deadline` or look at where it was "
                      "(run.stuck).", ranks=stuck)
    causes = [r for r in failed if _is_cause(run[r])]
    for r in failed:  # main_process_first names the rank whose failure it passed on
        match = re.search(r"rank (\d+) failed while preparing", run[r].error_message)
        if match and int(match.group(1)) not in causes and int(match.group(1)) < run.world_size:
            causes.append(int(match.group(1)))
    if causes and len(causes) < len(failed):
        others = [r for r in failed if r not in causes]
        return _rank_failed(run, sorted(causes), f"and {rank_list(others)} failed because of it", evidence, None)
    return Diagnosis(
        "rank-failed",
        f"{rank_list(failed)} did not finish, but every rank made the same collective calls.",
        evidence, "Read each failing rank's traceback: run[rank].traceback.", ranks=failed)
