"""Turn the files that ranks recorded under torchrun into the same Run a notebook gets.

Each rank started by ``barrierlab.scenarios.torchrun_main`` (or any code that called
``barrierlab.record.start_from_env()``) leaves ``rankN.events`` and, when it got that far,
``rankN.outcome.json`` in the record folder. Ranks on different machines have different monotonic
clocks, so times are aligned through the wall clock each rank noted when it started recording.
"""

from __future__ import annotations

import glob
import json
import os
import re

from barrierlab import record
from barrierlab.result import FINISHED, LOST, RAISED, RankResult, Run
from barrierlab.sites import Site


def load(folder: str) -> Run:
    """A :class:`Run` rebuilt from a record folder (statuses, errors, events, call sites)."""
    paths = {int(m.group(1)): p for p in glob.glob(os.path.join(folder, "rank*.events"))
             if (m := re.search(r"rank(\d+)\.events$", p))}
    outcomes = {}
    for path in glob.glob(os.path.join(folder, "rank*.outcome.json")):
        with open(path) as f:
            item = json.load(f)
        outcomes[item["rank"]] = item
    world_size = max(list(paths) + [o.get("world_size", 0) - 1 for o in outcomes.values()], default=-1) + 1
    if world_size == 0:
        raise FileNotFoundError(f"no rank*.events files in {folder!r}: was BARRIERLAB_RECORD_DIR set for the ranks?")
    metas = {r: record.read_meta(p) for r, p in paths.items()}
    base = min((m["wall"] for m in metas.values() if m), default=0.0)
    ranks, ends = [], []
    for rank in range(world_size):
        meta = metas.get(rank)
        # monotonic time on this rank -> seconds since the earliest rank started, via the wall clock
        t0 = meta["t0"] - (meta["wall"] - base) if meta else 0.0
        events = record.read_events(paths[rank], rank=rank, t0=t0) if rank in paths else []
        for event in events:
            if event.file:
                event.where = str(Site(event.file, event.line, event.func or ""))
        outcome = outcomes.get(rank)
        result = RankResult(rank=rank, status=LOST, events=events)
        if outcome:
            result.status = outcome.get("status", RAISED)
            result.started = outcome["t_start"] - t0
            result.ended = outcome["t_end"] - t0
            result.traceback = outcome.get("traceback", "")
            if result.status == FINISHED:
                result.value = outcome.get("value")
            else:
                result.exception = _rebuild(outcome.get("message", "unknown error"))
            ends.append(result.ended)
        ranks.append(result)
    ends += [e.end for r in ranks for e in r.events if e.end is not None]
    return Run(world_size=world_size, ranks=ranks, elapsed=max(ends, default=0.0), timeout=float("nan"),
               deadline=float("nan"))


def _rebuild(message: str) -> BaseException:
    """``"ValueError: bad"`` -> ValueError("bad") for built-in exception types, else RuntimeError(message)."""
    import builtins

    name, sep, text = message.partition(": ")
    kind = getattr(builtins, name, None)
    if sep and isinstance(kind, type) and issubclass(kind, BaseException):
        try:
            return kind(text)
        except Exception:
            pass
    return RuntimeError(message)
