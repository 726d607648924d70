"""The learner's call chain of a recorded call — from the rank function down to the line that made the call,
outermost first as in a Python traceback — and where two ranks' chains part.

The recorder keeps only the learner's own frames (:func:`barrierlab.sites.is_learners` decides), the innermost
and the outermost ones of a deep chain; this module turns them into words. A chain of one or two frames reads
as one line ("at a.py:12, in save: ..., called from a.py:40, in main: ..."); a longer one as a traceback,
cut to its first and last :data:`SHOWN_AT_EACH_END` frames, and always showing the frame where the ranks'
paths part: the line the learner must look at.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from barrierlab.events import undynamic
from barrierlab.sites import Site

#: Frames of a long chain shown at each end (the rank function's end and the call's end).
SHOWN_AT_EACH_END = 3


@dataclass(frozen=True)
class Chain:
    """A call's chain of the learner's frames, outermost first: ``frames[-1]`` is the line of the call.
    ``left_out`` frames the recorder did not keep lie after ``frames[:gap]``."""

    frames: tuple[Site, ...]
    left_out: int = 0
    gap: int = 0

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def shown(self) -> tuple[Site, ...]:
        """The frames worth showing: a script's top level (``<module>`` calling ``main()``) is left out
        unless it is all there is."""
        if len(self.frames) > 1 and self.frames[0].func == "<module>":
            return self.frames[1:]
        return self.frames


def chain_of(call) -> Chain:
    """The chain of an :class:`~barrierlab.events.Event` or a flight-recorder entry (anything with ``file``,
    ``line``, ``func``, ``callers`` innermost first, and ``left_out``). A deep chain's callers are kept as two
    halves, the innermost and the outermost; the frames left out lie between them."""
    if not getattr(call, "file", None):
        return Chain(())
    callers = list(getattr(call, "callers", None) or ())
    inner_first = undynamic([(call.file, call.line or 0, call.func or "")] + callers)
    left_out = getattr(call, "left_out", 0) or 0
    outer_half = len(callers) - len(callers) // 2 if left_out else 0
    frames = tuple(Site(file, line, func) for file, line, func in reversed(inner_first))
    return Chain(frames, left_out, outer_half)


def _key(site: Site) -> tuple:
    return site.file, site.line, site.func


def parting(chains: Iterable[Chain]) -> int | None:
    """Index (outermost first) of the first frame where the chains differ — the frame a chain that is a
    prefix of another ends at counts as differing — or None when they are the same."""
    chains = [c.frames for c in chains]
    if len(chains) < 2:
        return None
    depth = max(len(c) for c in chains)
    for i in range(depth):
        if len({_key(c[i]) if i < len(c) else None for c in chains}) > 1:
            return i
    return None


def called_from(chain: Chain, at: int | None = None) -> str:
    """What a headline adds after the call's own line: nothing for a call made in the rank function itself,
    ', called from a.py:40, in main: ...' for a call in a helper, and for a longer chain the frame ``at``
    (where the ranks' paths part; else the outermost): ', reached from a.py:40, in main: ... through 2 more
    calls'."""
    shown = chain.shown
    if len(shown) < 2:
        return ""
    if len(shown) == 2:
        return f", called from {shown[0]}"
    first = len(chain.frames) - len(shown)
    index = at - first if at is not None and first <= at < len(chain.frames) - 1 else 0
    between = len(shown) - 2 - index + (chain.left_out if index < chain.gap - first else 0)
    through = f" through {between} more call{'s' if between != 1 else ''}" if between else ""
    return f", {'called' if not between else 'reached'} from {shown[index]}{through}"


def traceback_lines(chain: Chain, mark: int | None = None, note: str = "the ranks' paths part here") -> list[str]:
    """A chain of three or more frames as a traceback, outermost first, one frame a line (its code unless the
    frame before showed the same line); at most :data:`SHOWN_AT_EACH_END` frames at each end and the frame
    ``mark`` (with ``note``), the others counted. Shorter chains: no lines (:func:`called_from` says it all)."""
    shown = chain.shown
    if len(shown) < 3:
        return []
    first = len(chain.frames) - len(shown)
    keep = set(range(SHOWN_AT_EACH_END)) | set(range(len(shown) - SHOWN_AT_EACH_END, len(shown)))
    if mark is not None and first <= mark < len(chain.frames):
        keep.add(mark - first)
    gap = chain.gap - first if chain.left_out else None
    lines, skipped, previous = [], 0, None
    for i, site in enumerate(shown):
        if gap is not None and i == gap:
            skipped += chain.left_out
        if i not in keep:
            skipped += 1
            continue
        if skipped:
            lines.append(f"… ({skipped} frame{'s' if skipped != 1 else ''} left out)")
            skipped = 0
        same_line = previous is not None and (previous.file, previous.line) == (site.file, site.line)
        text = f"{site.place}, in {site.func}" if same_line else str(site)
        if mark is not None and i == mark - first:
            text += f"   ← {note}"
        lines.append(text)
        previous = site
    return lines
