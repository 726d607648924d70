"""What a run left behind: one :class:`RankResult` per rank, gathered in a :class:`Run`."""

from __future__ import annotations

import html
import os
import re
import signal
from dataclasses import dataclass, field

import cloudpickle

from barrierlab import record
from barrierlab.sites import CodeIndex, Site
from barrierlab.stacks import Stuck, relabel_traceback, stuck_at

#: How much of each rank's stdout/stderr is kept: the head and the tail, this many bytes each.
OUTPUT_KEEP = 32 * 1024

FINISHED = "finished"
RAISED = "raised"
SETUP_FAILED = "setup failed"
STOPPED = "stopped at deadline"
EXITED = "exited"
KILLED = "killed by signal"
LOST = "ended without a report"  # under torchrun: the agent stopped it, or it died before writing one


class RankFailed(RuntimeError):
    """Raised by :meth:`Run.raise_if_failed` when a rank did not finish; the message names each one."""

    def __init__(self, run: "Run") -> None:
        self.run = run
        failed = [r for r in run.ranks if not r.ok]
        lines = [f"{len(failed)} of {run.world_size} ranks did not finish:"]
        lines += ["  " + r.summary() for r in failed]
        for r in failed:
            if r.traceback:
                lines += ["", f"--- rank {r.rank} traceback ---", r.traceback.rstrip()]
        super().__init__("\n".join(lines))


@dataclass
class RankResult:
    """What one rank did: how it ended, what it returned or raised, what it printed, when it ran."""

    rank: int
    status: str
    pid: int | None = None
    value: object = None
    exception: BaseException | None = None
    traceback: str = ""
    stdout: str = ""
    stderr: str = ""
    started: float | None = None  # seconds since launch when fn began (after init_process_group)
    ended: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    stuck: Stuck | None = None
    events: list[record.Event] = field(default_factory=list, repr=False)
    #: torch's flight recorder for this rank, when it could be read: (op, sequence number, state) per
    #: collective the rank issued, including those made from C++ (DDP); None if unavailable.
    flight: list[tuple[str, int, str]] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == FINISHED

    @property
    def error_message(self) -> str:
        if self.exception is not None:
            return f"{type(self.exception).__name__}: {self.exception}"
        return self.traceback.strip().splitlines()[-1] if self.traceback.strip() else ""

    def summary(self) -> str:
        """One line: status and the essential detail."""
        head = f"rank {self.rank}: {self.status}"
        if self.status == FINISHED:
            text = repr(self.value)
            return head + (f", returned {text[:80]}{'…' if len(text) > 80 else ''}" if self.value is not None else "")
        if self.status in (RAISED, SETUP_FAILED):
            where = " before your function started" if self.status == SETUP_FAILED else ""
            return f"{head}{where}: {_first_line(self.error_message)}"
        if self.status == STOPPED:
            return f"{head}, stuck {self.stuck}" if self.stuck else head
        if self.status == KILLED:
            return f"{head} {_signal_name(self.signal)}"
        if self.status == EXITED:
            return f"{head} with code {self.exit_code} before returning from the function"
        return head


def tidy(message: str) -> str:
    """A gloo message without the noise that changes between runs and machines: the build-machine source
    path (``[/__w/.../pair.cc:553]``), the peer's address and port, and gloo's boilerplate advice."""
    message = re.sub(r"\[[^\]]*gloo/[^\]]*\] ?", "", message)
    message = re.sub(r" ?\[[0-9a-fA-F.:]+\]:\d+", "", message)
    return re.sub(r"\.? This is typically caused by .*$", "", message, flags=re.S)


def _first_line(text: str, limit: int = 200) -> str:
    text = tidy(text)
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "…"


def _signal_name(number: int | None) -> str:
    try:
        return signal.Signals(number).name
    except (ValueError, TypeError):
        return str(number)


def _read_output(path: str) -> str:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            if size <= 2 * OUTPUT_KEEP:
                data = f.read()
            else:
                head = f.read(OUTPUT_KEEP)
                f.seek(size - OUTPUT_KEEP)
                omitted = size - 2 * OUTPUT_KEEP
                data = head + f"\n[… {omitted:,} bytes of output omitted …]\n".encode() + f.read()
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="replace")


def _load_flight(path: str) -> list[tuple[str, int, str]] | None:
    import json

    try:
        with open(path, "rb") as f:
            entries = json.loads(f.read()).get("entries", [])
    except (OSError, ValueError, AttributeError):
        return None
    return [(str(e.get("profiling_name", "?")).split(":")[-1], int(e.get("collective_seq_id") or 0),
             str(e.get("state", "?"))) for e in entries]


def _load_result(path: str) -> dict | None:
    try:
        with open(path, "rb") as f:
            return cloudpickle.loads(f.read())
    except FileNotFoundError:
        return None
    except Exception as error:  # e.g. an exception class that cannot be rebuilt here
        return {"status": RAISED, "message": f"the rank's result could not be read back: {error}", "traceback": ""}


def collect(run_dir: str, world_size: int, t0: float, elapsed: float, exits: dict, stopped: set,
            pids: list[int], timeout: float, deadline: float, index: CodeIndex | None = None,
            linger: bool = False) -> "Run":
    """Build the Run from the files the ranks left in ``run_dir`` and the exit statuses."""
    ranks = []
    for rank in range(world_size):
        stem = os.path.join(run_dir, f"rank{rank}")
        data = _load_result(stem + ".result")
        code, sig = exits.get(rank, (None, None))
        events = record.read_events(stem + ".events", rank=rank, t0=t0, index=index)
        flight = record.read_flight(stem + ".events", rank, t0, index, events)
        result = RankResult(rank=rank, status=STOPPED, pid=pids[rank] if rank < len(pids) else None,
                            stdout=_read_output(stem + ".stdout"),
                            stderr=_read_output(stem + ".stderr"), exit_code=code, signal=sig, events=events,
                            flight=_load_flight(stem + ".flight") if flight is None else flight)
        if data is not None:
            result.status = data.get("status", RAISED)
            result.value = data.get("value")
            result.exception = data.get("exception")
            result.traceback = relabel_traceback(data.get("traceback", ""), index)
            result.exit_code = data.get("exit_code", code)
            result.started = data["t_start"] - t0 if "t_start" in data else None
            result.ended = data["t_end"] - t0 if "t_end" in data else None
            if data.get("send_error"):
                result.status = RAISED
                result.exception = TypeError(
                    f"rank {rank} finished, but {data['send_error']} cannot be sent back to the notebook. "
                    "Return plain data (numbers, strings, lists, dicts, tensors) instead."
                )
            elif result.exception is None and result.status in (RAISED, SETUP_FAILED):
                result.exception = RuntimeError(data.get("message", "unknown error"))
        elif rank in stopped:
            result.status = STOPPED
        elif sig is not None:
            result.status = KILLED
        else:
            result.status = EXITED
        if result.status == STOPPED or (rank in stopped and data is None):
            result.stuck = stuck_at(_read_output(stem + ".stack"), index)
        for event in result.events:
            if event.file:
                event.file = index.resolve(event.file, event.line, event.func) if index else event.file
                event.where = str(Site(event.file, event.line, event.func))
        ranks.append(result)
    return Run(world_size=world_size, ranks=ranks, elapsed=elapsed, timeout=timeout, deadline=deadline,
               hit_deadline=bool(stopped), linger=linger)


@dataclass
class Run:
    """The outcome of :func:`barrierlab.run`: ``run[r]`` is rank r's :class:`RankResult`."""

    world_size: int
    ranks: list[RankResult]
    elapsed: float
    timeout: float
    deadline: float
    hit_deadline: bool = False
    linger: bool = False

    def __getitem__(self, rank: int) -> RankResult:
        return self.ranks[rank]

    def __iter__(self):
        return iter(self.ranks)

    def __len__(self) -> int:
        return self.world_size

    @property
    def ok(self) -> bool:
        """True if every rank returned from the function."""
        return all(r.ok for r in self.ranks)

    @property
    def values(self) -> list:
        """Each rank's return value (None for a rank that did not finish)."""
        return [r.value for r in self.ranks]

    @property
    def statuses(self) -> list[str]:
        return [r.status for r in self.ranks]

    @property
    def failed(self) -> list[int]:
        return [r.rank for r in self.ranks if not r.ok]

    @property
    def stuck(self) -> dict[int, Stuck]:
        """The ranks stopped at the deadline, with where each was waiting."""
        return {r.rank: r.stuck for r in self.ranks if r.status == STOPPED and r.stuck}

    @property
    def events(self) -> list[record.Event]:
        return sorted((e for r in self.ranks for e in r.events), key=lambda e: e.start)

    def timeline(self, **options):
        """A matplotlib figure: one lane per rank, time in collectives shaded, releases drawn."""
        from barrierlab.plot import timeline

        return timeline(self, **options)

    @property
    def diagnosis(self):
        """What went wrong (or that nothing did), in words: see ``barrierlab.diagnose``."""
        from barrierlab.diagnose import diagnose

        return diagnose(self)

    def ledger(self) -> str:
        """Every rank's collective calls side by side (#1, #2, ...), with op and line."""
        from barrierlab.diagnose import ledger

        return ledger(self)

    def summary(self) -> dict:
        """Per-rank wait time, idle fraction, and the slowest rank (see ``barrierlab.plot.summary``)."""
        from barrierlab.plot import summary

        return summary(self)

    def raise_if_failed(self) -> "Run":
        """Return self if every rank finished, else raise :class:`RankFailed` naming each failure."""
        if not self.ok:
            raise RankFailed(self)
        return self

    def outputs(self) -> str:
        """Everything the ranks printed, grouped by rank (stdout, then stderr marked as such)."""
        blocks = []
        for r in self.ranks:
            if r.stdout:
                blocks.append(f"--- rank {r.rank} ---\n{r.stdout.rstrip()}")
            if r.stderr:
                blocks.append(f"--- rank {r.rank} (stderr) ---\n{r.stderr.rstrip()}")
        return "\n".join(blocks)

    def headline(self) -> str:
        counts: dict[str, int] = {}
        for r in self.ranks:
            counts[r.status] = counts.get(r.status, 0) + 1
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        return f"{self.world_size} ranks in {self.elapsed:.2f} s: {parts}"

    def __repr__(self) -> str:
        lines = [f"Run({self.headline()})"] + ["  " + r.summary() for r in self.ranks]
        outputs = self.outputs()
        return "\n".join(lines + ([outputs] if outputs else []))

    def _repr_html_(self) -> str:
        colours = {FINISHED: "#1b7837", STOPPED: "#b35806", RAISED: "#b2182b", SETUP_FAILED: "#b2182b"}
        rows = []
        for r in self.ranks:
            span = "" if r.started is None or r.ended is None else f"{r.started:.3f}–{r.ended:.3f} s"
            if r.status == FINISHED:
                detail = "" if r.value is None else _clip(repr(r.value))
            else:
                detail = r.summary().partition(": ")[2]
            output = ""
            if r.stdout or r.stderr:
                text = html.escape(r.stdout.rstrip())
                if r.stderr:
                    text += ("\n" if text else "") + f"<span style='color:#b2182b'>{html.escape(r.stderr.rstrip())}</span>"
                output = f"<pre style='margin:0;max-height:12em;overflow:auto'>{text}</pre>"
            colour = colours.get(r.status, "#b2182b")
            rows.append(
                f"<tr><td>{r.rank}</td><td style='color:{colour};font-weight:bold'>{html.escape(r.status)}</td>"
                f"<td>{span}</td><td style='text-align:left'>{html.escape(detail)}"
                f"</td><td style='text-align:left'>{output}</td></tr>"
            )
        return (
            f"<div><b>barrierlab run</b>: {html.escape(self.headline())} "
            f"<span style='color:#666'>(timeout {self.timeout:g} s, deadline {self.deadline:g} s)</span>"
            "<table><thead><tr><th>rank</th><th>status</th><th>ran (s since launch)</th>"
            "<th>returned / error / stuck at</th><th>output</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>"
        )


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
