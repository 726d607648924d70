"""What a run left behind: one :class:`RankResult` per rank, gathered in a :class:`Run`."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from barrierlab import events as event_files
from barrierlab._protocol import (
    OUTCOME_UNWRITTEN,
    OUTCOME_UNWRITTEN_TEXT,
    UNSHOWN,
    Status,
    clip_text,
    error_message,
    signal_name,
    tidy,
)
from barrierlab.stacks import Stuck, fold_thread_dumps
from barrierlab.unpickle import is_shell, unpickle_isolated
from barrierlab.words import rank_list, short_repr

if TYPE_CHECKING:
    from barrierlab.waits import Waits

#: How many tracebacks :class:`RankFailed` shows in full (the others are summarised).
TRACEBACKS_SHOWN = 1


class RankFailed(RuntimeError):
    """Raised by :meth:`Run.raise_if_failed` when a rank did not finish.

    The message reads like a test report: the diagnosis headline, one line per failed rank, then the
    tracebacks grouped (ranks that raised the same error share one), the first shown in full and the
    others cut to their last lines.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        failed = [r for r in run.ranks if not r.ok]
        try:
            headline = run.diagnosis.headline
        except Exception as error:  # a diagnosis bug must not hide the failure itself
            headline = f"(no diagnosis: {type(error).__name__}: {error})"
        lines = [headline, "", f"{len(failed)} of {run.world_size} ranks did not finish:"]
        lines += ["  " + r.summary() for r in failed]
        groups: dict[tuple[str, str], list[RankResult]] = {}
        for r in failed:
            if r.traceback:
                groups.setdefault((_error_kind(r), _same_traceback(r.traceback)), []).append(r)
        for shown, ((kind, _), members) in enumerate(groups.items()):
            ranks = rank_list([m.rank for m in members])
            same = f"{ranks} raised the same {kind}" if len(members) > 1 else f"{ranks} raised {kind}"
            text = tidy(members[0].traceback).rstrip().splitlines()
            if shown < TRACEBACKS_SHOWN:
                lines += ["", f"--- {same} ---", *text]
            else:
                lines += ["", f"--- {same} (last lines; run[{members[0].rank}].traceback has all) ---", *text[-3:]]
        super().__init__("\n".join(lines))


def _error_kind(result: RankResult) -> str:
    exception = result.exception
    if exception is not None:
        return type(exception).__name__
    last = result.traceback.strip().splitlines()[-1] if result.traceback.strip() else ""
    return last.partition(":")[0] or "error"


def _same_traceback(text: str) -> str:
    """What makes two ranks' tracebacks "the same": the frames they passed through, and the last line with
    numbers (ranks, ports, sizes) and gloo's addresses taken out."""
    lines = tidy(text).strip().splitlines()
    frames = [line.strip() for line in lines if line.lstrip().startswith(("File ", "Cell "))]
    return "\n".join(frames + [re.sub(r"\d+", "N", lines[-1] if lines else "")])


#: How a rank of which no file was read is shown in place of its status (its status is LOST: not known).
NOT_RECORDED = "not recorded here"


@dataclass
class RankResult:
    """What one rank did: how it ended, what it returned or raised, what it printed, when it ran."""

    rank: int
    status: Status
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
    events: list[event_files.Event] = field(default_factory=list, repr=False)
    #: torch's flight recorder for this rank, when it could be read: (op, sequence number, state) per
    #: collective the rank issued, including those made from C++ (DDP); None if unavailable.
    flight: list[tuple[str, int, str]] | None = field(default=None, repr=False)
    #: Events of this rank not kept (the middle of a flood of events; the first and last are kept).
    events_dropped: event_files.Dropped = field(default_factory=event_files.Dropped, repr=False)
    #: Calls this rank made on a group it is not in (torch warned and returned at once, waiting for nobody):
    #: not among ``events``, which pair across ranks.
    outside: list[event_files.Event] = field(default_factory=list, repr=False)
    #: What of this rank's files was left out as it was read (lines not barrierlab's, times that are not
    #: finite, an events file cut in bytes), in words.
    record_notes: list[str] = field(default_factory=list, repr=False)
    #: Whether anything of this rank was read (False: a record folder without its files — under torchrun with a
    #: folder per machine, a rank of another machine — so what it called is not known, not empty).
    recorded: bool = True
    #: The rank returned (its value is kept, it counts as finished), then hung in torch's teardown
    #: (destroy_process_group, object destruction) and was ended by the launcher: torch's, not the learner's.
    teardown_hung: bool = False
    #: What became of the rank's events file while it ran ("removed", "replaced by another file"), as the rank
    #: saw at its end; "" if it was its own to the end. Its calls are then unknown, not none (attack28 a12).
    events_lost: str = ""
    #: The rank ran a script's or module's ``__main__`` (:func:`barrierlab.script.run_script`, ``barrierlab run
    #: SCRIPT``), not a function: finishing is running it to its end, not returning (review80d M3).
    script: bool = field(default=False, repr=False)
    #: (pickled return value, pickled exception) until :meth:`Run.unpickle` turns them into objects.
    _pickled: tuple[bytes | None, bytes | None] = field(default=(None, None), repr=False, compare=False)
    #: The exception's message as the rank itself printed it: shown when the exception sent back cannot print
    #: its own here (DCP's CheckpointException formats its ranks' tracebacks, which do not survive the trip).
    _message: str = field(default="", repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == Status.FINISHED

    def __repr__(self) -> str:
        """Bounded in depth and length whatever the rank returned (a value nested a million lists deep)."""
        shown = ("rank", "status", "pid", "value", "exception", "started", "ended", "exit_code", "signal")
        fields = [f"{name}={short_repr(getattr(self, name), 120)}" for name in shown]
        stuck = short_repr(str(self.stuck), 200) if self.stuck is not None else "None"  # one line, not the chain
        return "RankResult(" + ", ".join(fields + [f"stuck={stuck}"]) + ")"

    @property
    def error_message(self) -> str:
        """``"ValueError: bad shard"``, without gloo's build paths and peer addresses; a message longer than
        :data:`~barrierlab._protocol.OUTCOME_TEXT_KEPT` characters as its head and tail. Worked out once per
        exception (attack28 a02: an exception whose ``__str__`` builds 30 MB was asked again by every diagnosis
        rule, and tidied whole each time: the diagnosis took 26-38 s)."""
        key = (id(self.exception), self.traceback)
        cached = self.__dict__.get("_error_message_cached")
        if cached is not None and cached[0] == key:
            return cached[1]
        text = self._error_message()
        self.__dict__["_error_message_cached"] = (key, text)
        return text

    def _error_message(self) -> str:
        if self.exception is not None:
            text = clip_text(error_message(self.exception))
            if text.startswith(UNSHOWN) and self._message and not self._message.startswith(UNSHOWN):
                text = self._message  # attack24 a08: its str() ran on the rank, not after the trip here
            if isinstance(self.exception, RaisedElsewhere) and self.exception.type_name:
                kind, text = self.exception.type_name, self.exception.message
            else:
                kind = type(self.exception).__name__
            return tidy(f"{kind}: {_with_inner_errors(text)}")
        return tidy(clip_text(self.traceback.strip().splitlines()[-1])) if self.traceback.strip() else ""

    @property
    def code_word(self) -> str:
        """What the rank ran, in words: "script" under ``barrierlab run SCRIPT``, else "function"."""
        return "script" if self.script else "function"

    def summary(self) -> str:
        """One line: status and the essential detail."""
        if not self.recorded:
            return f"rank {self.rank}: {NOT_RECORDED}: no file of this rank in the record folder (another machine's?)"
        head = f"rank {self.rank}: {self.status}"
        if self.status == Status.FINISHED:
            head += f", returned {short_repr(self.value, 80)}" if self.value is not None else ""
            return head + (
                "; then hung in torch's teardown (destroy_process_group / object destruction) and was "
                "ended: torch's, not your deadlock"
                if self.teardown_hung
                else ""
            )
        if self.status in (Status.RAISED, Status.SETUP_FAILED):
            where = f" before your {self.code_word} started" if self.status == Status.SETUP_FAILED else ""
            return f"{head}{where}: {_first_line(self.error_message)}"
        if self.status == Status.STOPPED:
            return f"{head}, stuck {self.stuck}" if self.stuck else head
        if self.status == Status.KILLED:
            return f"{head} {signal_name(self.signal)}"
        if self.status == Status.EXITED:
            if self.exit_code == OUTCOME_UNWRITTEN:
                said = _unwritten_outcome(self.stderr)  # absent when the same full disk or file limit stopped it
                return f"{head} with code {OUTCOME_UNWRITTEN}: " + (
                    said
                    or "barrierlab's code for a rank whose outcome it could not write (a full disk, or a file-size "
                    f"limit set in the {self.code_word}): "
                    + ("the script may have run to its end" if self.script else "the function may have returned")
                )
            # review90d M2: a script has no function to return from
            ended = "the script ended" if self.script else "returning from the function"
            return f"{head} with code {self.exit_code} before {ended}"
        return head


def _unwritten_outcome(stderr: str) -> str | None:
    """The line a rank writes on its stderr when its outcome file could not be written, if it is there."""
    for line in reversed(stderr.splitlines()[-20:]):
        if line.startswith(OUTCOME_UNWRITTEN_TEXT):
            return _first_line(line)[:300]
    return None


class StuckRanks(dict):
    """``{rank: Stuck}`` (:attr:`Run.stuck`) that shows each rank's place as a diagnosis shows a call: the line,
    and for a call made in a helper the chain of the learner's lines that led there, outermost first."""

    def __repr__(self) -> str:
        if not self:
            return "{}"
        return "\n".join(f"rank {rank}: {stuck!r}" for rank, stuck in sorted(self.items()))

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # IPython shows a dict subclass as a dict otherwise
        printer.text(repr(self))


def _first_line(text: str, limit: int = 200) -> str:
    text = tidy(text)
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "…"


_INNER_TRACEBACK = "Traceback (most recent call last)"
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*: \S")
_STAND_IN = re.compile(r"^[A-Z]\w*(?:Exception|Error): ")


def _with_inner_errors(message: str) -> str:
    """A message that holds tracebacks of its own (DCP's CheckpointException: one per failed rank), as the
    distinct errors those tracebacks end in, then its first line; any other message as it is."""
    if _INNER_TRACEBACK not in message:
        return message
    lines = message.splitlines()
    inner: list[str] = []
    for previous, line in zip(lines, lines[1:]):
        if previous.startswith((" ", "\t")) and _ERROR_LINE.match(line) and line not in inner:
            inner.append(line)
    if not inner:
        return message
    more = "; …" if len(inner) > 3 else ""
    named = _STAND_IN.match(lines[0])  # a stand-in's "CheckpointException: ..." (the exception was not unpickled)
    head, first = (named.group(0), lines[0][named.end() :]) if named else ("", lines[0])
    return f"{head}{'; '.join(inner[:3])}{more} (where the tracebacks it holds end; it begins: {first})"


class RaisedElsewhere(RuntimeError):
    """The stand-in for an exception a rank raised whose class is not rebuilt in the notebook (one with its own
    ``__reduce__``, such as ``json.JSONDecodeError``, or one not sent): a RuntimeError whose ``type_name`` is the
    rank's exception's type, which the run's messages show (attack27 a07: "raised RuntimeError: JSONDecodeError")."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}" if type_name else message)
        self.type_name, self.message = type_name, message


def rebuild_exception(error_type: str, message: str) -> BaseException:
    """A stand-in for an exception that was not (or could not be) sent: the built-in type when it is one
    (``builtins.ValueError`` -> ValueError(message)), else a :class:`RaisedElsewhere` naming the type."""
    import builtins

    module, _, name = error_type.rpartition(".")
    kind = getattr(builtins, name, None) if module in ("builtins", "") else None
    if isinstance(kind, type) and issubclass(kind, BaseException):
        try:
            return kind(message)
        except Exception:
            pass
    return RaisedElsewhere(name, message)


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
    #: What the launcher has to say about the run itself, or "" (the warm process was killed during it).
    launcher_note: str = ""

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
    def statuses(self) -> list[Status]:
        return [r.status for r in self.ranks]

    @property
    def failed(self) -> list[int]:
        return [r.rank for r in self.ranks if not r.ok]

    @property
    def stuck(self) -> StuckRanks:
        """The ranks stopped at the deadline, with where each was waiting and the chain of the learner's lines
        that led there."""
        return StuckRanks({r.rank: r.stuck for r in self.ranks if r.status == Status.STOPPED and r.stuck})

    @property
    def events(self) -> list[event_files.Event]:
        return sorted((e for r in self.ranks for e in r.events), key=lambda e: e.start)

    @property
    def events_dropped(self) -> dict[int, event_files.Dropped]:
        """Ranks that recorded more events than are kept, and how many of theirs were dropped (from the
        middle: the first and the last are kept)."""
        return {r.rank: r.events_dropped for r in self.ranks if r.events_dropped}

    def dropped_note(self) -> str:
        """Lines saying which ranks' events were cut and what of their records was left out, or ""."""
        lines = []
        dropped = self.events_dropped
        if dropped:
            parts = ", ".join(f"rank {rank}: {count}" for rank, count in dropped.items())
            lines.append(
                f"events not kept (the first and last of each rank are; the middle was dropped to keep the "
                f"kernel fast and small): {parts}"
            )
        lines += [f"rank {r.rank}'s record: {note}" for r in self.ranks for note in r.record_notes]
        return "\n  ".join(lines)

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
        from barrierlab.calls import ledger

        return ledger(self)

    def order(self, backend: str = "gloo"):
        """What orders what in this run (:class:`barrierlab.ordering.Order`): a model of the host-side
        happens-before relation on ``backend`` ("gloo" as run here, or "nccl" as a GPU job's host sees it)."""
        from barrierlab.ordering import order

        return order(self, backend)

    def races(self, backend: str = "gloo") -> list:
        """Every read, rename or removal of a path another rank wrote that nothing ordered after the write."""
        from barrierlab.ordering import races

        return races(self, backend)

    def waits(self) -> Waits:
        """The run's numbers (:class:`barrierlab.waits.Waits`): each rank's busy and waiting seconds and idle
        fraction, the collectives' releases, and the rank that held the others up."""
        from barrierlab.waits import measure

        return measure(self)

    def summary(self) -> str:
        """One line: how the ranks ended, how long they waited, and for whom."""
        return f"{self.headline()}; {self.waits().summary()}"

    def unpickle(self, within: float | None = None) -> Run:
        """Turn the ranks' pickled return values and exceptions into objects (see
        :func:`barrierlab.unpickle.unpickle_isolated`), within about ``within`` seconds; a value that cannot be
        unpickled safely in that time makes its rank fail with an explanation."""
        jobs = [
            (r, k, blob) for r in self.ranks for k, blob in zip(("value", "exception"), r._pickled) if blob is not None
        ]
        for (r, kind, _), (ok, item) in zip(jobs, unpickle_isolated([blob for _, _, blob in jobs], within)):
            if ok and kind == "value":
                r.value = item
            elif ok and isinstance(item, BaseException) and not is_shell(item):
                r.exception = item
            elif kind == "value":
                r.status, r.value = Status.RAISED, None
                r.exception = RuntimeError(
                    f"rank {r.rank} returned a value that cannot be unpickled in the notebook: {item}"
                )
            # an exception that cannot be rebuilt keeps its stand-in (same type name and message)
        for r in self.ranks:
            r._pickled = (None, None)
        return self

    def raise_if_failed(self) -> Run:
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
                blocks.append(f"--- rank {r.rank} (stderr) ---\n{fold_thread_dumps(tidy(r.stderr)).rstrip()}")
        return "\n".join(blocks)

    def headline(self) -> str:
        counts: dict[str, int] = {}
        for r in self.ranks:
            status = r.status if r.recorded else NOT_RECORDED
            counts[status] = counts.get(status, 0) + 1
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        return f"{self.world_size} ranks in {self.elapsed:.2f} s: {parts}"

    def __repr__(self) -> str:
        lines = [f"Run({self.headline()})"] + ["  " + r.summary() for r in self.ranks]
        if self.dropped_note():
            lines.append("  " + self.dropped_note())
        if self.launcher_note:
            lines.append("  " + self.launcher_note)
        outputs = self.outputs()
        return "\n".join(lines + ([outputs] if outputs else []))

    def _repr_html_(self) -> str:
        colours = {Status.FINISHED: "#1b7837", Status.STOPPED: "#b35806"}
        rows = []
        for r in self.ranks:
            span = "" if r.started is None or r.ended is None else f"{r.started:.3f}–{r.ended:.3f} s"
            if r.status == Status.FINISHED:
                detail = "" if r.value is None else short_repr(r.value, 120)
            else:
                detail = r.summary().partition(": ")[2]
            output = ""
            if r.stdout or r.stderr:
                text = html.escape(r.stdout.rstrip())
                if r.stderr:
                    text += (
                        "\n" if text else ""
                    ) + f"<span style='color:#b2182b'>{html.escape(fold_thread_dumps(tidy(r.stderr)).rstrip())}</span>"
                output = f"<pre style='margin:0;max-height:12em;overflow:auto'>{text}</pre>"
            colour = colours.get(r.status, "#b2182b")
            rows.append(
                f"<tr><td>{r.rank}</td><td style='color:{colour};font-weight:bold'>{html.escape(r.status)}</td>"
                f"<td>{span}</td><td style='text-align:left'>{html.escape(detail)}"
                f"</td><td style='text-align:left'>{output}</td></tr>"
            )
        note = "".join(
            f"<div style='color:#b35806'>{html.escape(text)}</div>"
            for text in (self.dropped_note(), self.launcher_note)
            if text
        )
        return (
            f"<div><b>barrierlab run</b>: {html.escape(self.headline())} "
            f"<span style='color:#666'>(timeout {self.timeout:g} s, deadline {self.deadline:g} s)</span>"
            f"{note}"
            "<table><thead><tr><th>rank</th><th>status</th><th>ran (s since launch)</th>"
            "<th>returned / error / stuck at</th><th>output</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table></div>"
        )
