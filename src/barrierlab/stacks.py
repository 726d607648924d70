"""Read the Python stacks that faulthandler writes when a rank is asked for them (``_protocol.STACK_SIGNAL``).

faulthandler runs in C, so it answers even while the rank's main thread is blocked inside a C++
collective; the stack then shows the exact line of the learner's code that is waiting, and the chain of the
learner's lines that led there, said as the diagnoses say a call's chain (:mod:`barrierlab.chains`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from barrierlab._protocol import RANK_CALLS_FN, RANK_PHASES, RANK_SOURCE
from barrierlab.chains import Chain, called_from, traceback_lines
from barrierlab.events import undynamic
from barrierlab.sites import CodeIndex, Site, is_learners

_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+)", re.I)
_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>.*)$')
_TB_FRAME = re.compile(r'^(?P<indent>\s*)File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')


def _is_torch(path: str) -> bool:
    return f"{os.sep}torch{os.sep}" in path


@dataclass(repr=False)
class Stuck:
    """Where a rank was when it was stopped: the learner's line, the torch call it is inside, and the chain
    of the learner's lines that led there (outermost first, as in a traceback)."""

    site: Site | None
    call: str | None  # e.g. "barrier", or None if the rank was not inside torch.distributed
    frames: list[Site]  # every frame of the main thread, innermost first
    phase: str | None = None  # set when the rank had not started the learner's function yet
    chain: Chain = Chain(())

    def __str__(self) -> str:
        """One line, as a diagnosis's headline names a call: 'in dist.barrier() at a.py:12, in save: ...,
        reached from a.py:40, in main: ... through 1 more call'."""
        if self.site is None:
            return self._nowhere()
        return self._at() + str(self.site) + called_from(self.chain)

    def __repr__(self) -> str:
        """The whole chain, as a diagnosis's evidence shows it: a chain of three or more frames as a
        traceback of the learner's lines, outermost first."""
        if self.site is None:
            return self._nowhere()
        lines = traceback_lines(self.chain)
        if not lines:
            return str(self)
        return f"{self._at()}{self.site.place}, through this chain (outermost first):" + "".join(
            "\n    " + line for line in lines
        )

    def _at(self) -> str:
        return f"in dist.{self.call}() at " if self.call else "at "

    def _nowhere(self) -> str:
        return f"while {self.phase}" if self.phase else "no Python frame of your code on the stack"


def parse_threads(text: str, index: CodeIndex | None = None) -> list[list[Site]]:
    """Every thread's frames, innermost first."""
    threads: list[list[Site]] = []
    for line in text.splitlines():
        if _THREAD.match(line):
            threads.append([])
        elif threads and (m := _FRAME.match(line)):
            func, line = m["func"].strip(), int(m["line"])
            file = index.resolve(m["file"], line, func) if index else m["file"]
            threads[-1].append(Site(file, line, func))
    return threads


def stuck_at(text: str, index: CodeIndex | None = None) -> Stuck | None:
    """Interpret a rank's faulthandler dump: which of the learner's lines its main thread waits on."""
    threads = parse_threads(text, index)
    main = next((t for t in threads if any(_is_rank_step(f) for f in t)), None)
    if main is None:
        main = threads[-1] if threads else None
    if not main:
        return None
    outer = next((i for i, f in enumerate(main) if _is_rank_step(f)), len(main))
    for index, frame in enumerate(main[:outer]):
        if is_learners(frame.file):
            inner = [f for f in main[:index] if _is_torch(f.file) and "distributed" in f.file]
            named = [f.func for f in inner if f.func not in ("wrapper", "recorded")]
            return Stuck(site=frame, call=named[-1] if named else None, frames=main, chain=_chain(main[index:outer]))
    phase = RANK_PHASES.get(main[outer].func) if outer < len(main) else None
    return Stuck(site=None, call=None, frames=main, phase=phase)


def _chain(frames: list[Site]) -> Chain:
    """The learner's frames among ``frames`` (innermost first, from the learner's innermost line out to the
    rank function), outermost first; code cloudpickle sent by value placed in its file."""
    learners = [(f.file, f.line, f.func) for f in frames if is_learners(f.file)]
    return Chain(tuple(Site(file, line, func) for file, line, func in reversed(undynamic(learners))))


def _is_rank_step(frame: Site) -> bool:
    """A frame of the rank's own code (``_rank.py``) that is a named step of the contract: a set-up phase,
    or the call of the learner's function. Everything inside it is torch's or the learner's."""
    return frame.file == RANK_SOURCE and (frame.func == RANK_CALLS_FN or frame.func in RANK_PHASES)


def traceback_frames(text: str) -> list[tuple[str, int, str]]:
    """(file, line, function) of every frame of a Python traceback, outermost first."""
    return [
        (m["file"], int(m["line"]), (m["func"] or "").strip()) for m in map(_TB_FRAME.match, text.splitlines()) if m
    ]


def relabel_traceback(text: str, index: CodeIndex | None = None) -> str:
    """Show traceback frames as IPython does (``Cell In[N], line L``), with the real file of code that
    cloudpickle renamed, and the source line where the rank could not show it."""
    out: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _TB_FRAME.match(line)
        if not m:
            out.append(line)
            continue
        number, func = int(m["line"]), (m["func"] or "").strip()
        site = Site(index.resolve(m["file"], number, func) if index else m["file"], number, func)
        cell = site.cell
        where = f"Cell {cell}, line {number}" if cell else f'File "{site.file}", line {number}'
        out.append(f"{m['indent']}{where}" + (f", in {func}" if func else ""))
        next_is_frame = (
            i + 1 >= len(lines) or _TB_FRAME.match(lines[i + 1]) or not lines[i + 1].startswith(m["indent"] + "  ")
        )
        if m["file"] != site.file and next_is_frame and site.code:
            out.append(f"{m['indent']}  {site.code}")
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def fold_thread_dumps(text: str) -> str:
    """A rank's stderr with each faulthandler dump (``Fatal Python error: Aborted`` when gloo aborts the
    process) cut to the learner's frames: a thread shows only the frames of the learner's code, innermost
    last as in a traceback, and a thread with none (barrierlab's watchers) is left out; one line says how
    many frames were left out. Everything else is kept as written."""
    out: list[str] = []
    dropped = 0
    kept: list[str] = []
    header: str | None = None

    def close_thread() -> None:
        nonlocal header, kept
        if header is not None and kept:
            out.append(header.replace("(most recent call first)", "(most recent call last)"))
            out.extend(reversed(kept))  # faulthandler lists the innermost frame first
        header, kept = None, []

    in_dump = outside = False
    for line in text.splitlines():
        if _THREAD.match(line):
            close_thread()
            if not in_dump and out and not out[-1].strip():
                out.pop()  # the blank line faulthandler writes before its first thread
            in_dump, outside, header = True, False, line
            continue
        frame = _FRAME.match(line) if in_dump else None
        if frame:
            if is_learners(frame["file"]) and not outside and frame["file"] != "<string>":
                kept.append(line)
            else:
                dropped += 1
            # the frames outside the learner's function: the rank's own start, the warm process
            outside = outside or (frame["file"] == RANK_SOURCE and frame["func"].strip() == RANK_CALLS_FN)
            continue
        if in_dump and not line.strip():
            continue  # the blank line between two threads
        if in_dump:
            close_thread()
            if dropped:
                out.append(f"  ({dropped} frames of torch, barrierlab and the standard library left out)")
                dropped = 0
            in_dump = False
            if line.startswith("Extension modules:"):
                continue  # the C extensions loaded: nothing the learner can act on
        out.append(line)
    close_thread()
    if dropped:
        out.append(f"  ({dropped} frames of torch, barrierlab and the standard library left out)")
    return "\n".join(out)
