"""Say where a line of code is in words a learner recognises: ``cell In[5], line 4`` or ``train.py:12``.

Code defined in a Jupyter cell is compiled from a temporary file name (``/tmp/ipykernel_123/4567.py``);
IPython keeps the map from that name to the cell's execution count, and the cell's source in
``linecache``.  Both live in the kernel, so translation happens in the parent, not in the ranks.

A site's file is a name a rank wrote (an events line, a stack, a traceback): its line of code is read only
through :func:`barrierlab._files.source_line` (a notebook cell in memory, or a regular ``*.py`` file of bounded
size, within a time budget), never through ``linecache``, which would open a FIFO or keep a file of any size.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import sysconfig
import types
from dataclasses import dataclass

from barrierlab import _files

_HERE = os.path.dirname(os.path.abspath(__file__))
#: barrierlab's own machinery: frames in these files are never "the learner's line".
MACHINERY = frozenset(os.path.join(_HERE, name) for name in ("_rank.py", "_warm.py", "record.py", "sync.py"))
#: barrierlab's lesson code: scenarios are rank functions a learner reads and runs, wherever installed.
_LESSONS = os.path.join(_HERE, "scenarios") + os.sep
_STDLIB = tuple(
    {os.path.realpath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")}
    | {sysconfig.get_paths()[key] + os.sep for key in ("stdlib", "platstdlib")}
)
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
_learners: dict[str, bool] = {}
#: Most answers kept: the paths come from what ranks wrote (frames, stack dumps in their stderr), so a rank printing
#: invented paths grew the kernel by 0.85 MB per 16-rank run, run after run (attack8 a10); beyond, it starts over.
_LEARNERS_KEPT = 4096


def is_learners(path: str | None) -> bool:
    """Whether a frame in ``path`` is the learner's own code — the one answer every reader of frames uses.

    Yes: the learner's own files, notebook cells (``/tmp/ipykernel_…/….py``), code sent by value
    (``<dynamic-code>``) and barrierlab's lesson scenarios. Never: barrierlab's own machinery, torch, the
    standard library, frozen modules and installed packages (site-packages: Lightning, accelerate,
    transformers, …) — a library's line is where the learner's call led, not the learner's line."""
    if not path:
        return False
    known = _learners.get(path)
    if known is None:
        if len(_learners) >= _LEARNERS_KEPT:
            _learners.clear()
        known = _learners[path] = _decide(path)
    return known


def _decide(path: str) -> bool:
    if path.startswith("<"):
        return not path.startswith("<frozen")
    if path.startswith(_LESSONS):
        return True
    if path.startswith(_HERE + os.sep) or path.startswith(_torch_dirs()):
        return False
    return not any(marker in path for marker in _INSTALLED) and not path.startswith(_STDLIB)


def installed_package(path: str | None) -> str | None:
    """The installed package a frame in ``path`` belongs to ("torchmetrics", "lightning"), or None: the
    learner's code, torch, barrierlab, the standard library. Where :func:`is_learners` says "not the learner's",
    this says whose library it is, for naming who made a collective."""
    if not path or path.startswith(_HERE + os.sep) or path.startswith(_torch_dirs()):
        return None
    for marker in _INSTALLED:
        if marker in path:
            return path.split(marker, 1)[1].split(os.sep, 1)[0].removesuffix(".py") or None
    return None


@functools.lru_cache(maxsize=1)
def _torch_dirs() -> tuple[str, ...]:
    """Where torch's Python files are (a source build need not be in site-packages); found, not imported."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return ()
    locations = list(spec.submodule_search_locations or ()) if spec else []
    return tuple(os.path.join(location, "") for location in locations)


@dataclass(frozen=True)
class Site:
    """A place in the learner's code."""

    file: str
    line: int
    func: str = ""

    @property
    def cell(self) -> str | None:
        """``In[5]`` if the file is a notebook cell of this kernel, else None."""
        ipython = sys.modules.get("IPython")  # a cell exists only where IPython runs: never import it (0.15 s)
        if ipython is None:
            return None
        shell = ipython.get_ipython()
        mapping = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
        count = mapping.get(self.file)
        return None if count is None else f"In[{count}]"

    @property
    def place(self) -> str:
        cell = self.cell
        if cell:
            return f"cell {cell}, line {self.line}"
        return f"{short_path(self.file)}:{self.line}"

    @property
    def in_sentence(self) -> str:
        """``cell In[5], line 4`` or ``train.py, line 12`` (the file's name only): where, inside a sentence."""
        cell = self.cell
        return f"cell {cell}, line {self.line}" if cell else f"{os.path.basename(self.file)}, line {self.line}"

    @property
    def code(self) -> str:
        """The site's line of code, stripped; "" where it may not be read (see :func:`_files.source_line`)."""
        return _files.source_line(self.file, self.line)

    def __str__(self) -> str:
        where = self.place + (f", in {self.func}" if self.func and self.func != "<module>" else "")
        code = self.code
        return f"{where}: {code}" if code else where


def short_path(path: str) -> str:
    """A path as a learner would name it: relative to the current directory when inside it, else as a
    module path relative to its entry on ``sys.path`` (``barrierlab/scenarios/x.py``), else as given."""
    import sys

    try:
        relative = os.path.relpath(path)
    except (ValueError, OSError):  # OSError: the working folder was removed
        relative = ".."
    if not relative.startswith(".."):
        return relative
    roots = [p + os.sep for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p)]
    containing = [root for root in roots if path.startswith(root)]
    if containing:
        return path[len(max(containing, key=len)) :]
    return path


DYNAMIC = "<dynamic-code>"


_PLAIN_SCALARS = frozenset({str, bytes, int, float, bool, complex, type(None)})


class CodeIndex:
    """Where the functions sent to the ranks were defined.

    cloudpickle renames the file of every function it sends by value (notebook functions) to
    ``<dynamic-code>``; the parent keeps the real names here, keyed by function name and line range.
    """

    #: Objects one index looks at, at most: a call's arguments can hold a million-entry vocabulary, whose
    #: entries hold no function (attack9 a9: 4.8-9.2 s before the ranks started, one Python call per entry).
    VISITS = 10_000

    def __init__(self) -> None:
        self._entries: list[tuple[str, int, int, str]] = []
        self._seen: set[int] = set()
        self._visits = self.VISITS

    def add(self, obj: object) -> CodeIndex:
        """Index the functions in ``obj`` (a function, a class of ``__main__``, a partial, or containers of
        them), looking at :data:`VISITS` objects at most. Any other object is passed over, whatever its
        ``__getattr__`` raises (an attribute-dict config raises KeyError for a missing attribute)."""
        if id(obj) in self._seen or self._visits <= 0 or type(obj) in _PLAIN_SCALARS:
            return self
        self._visits -= 1
        self._seen.add(id(obj))
        if isinstance(obj, (list, tuple, set, frozenset, dict)):
            for item in obj.values() if isinstance(obj, dict) else obj:
                if self._visits <= 0:
                    break
                if type(item) not in _PLAIN_SCALARS:
                    self.add(item)
                else:
                    self._visits -= 1
        elif isinstance(obj, type) and _attribute(obj, "__module__") == "__main__":
            for item in vars(obj).values():
                self.add(_attribute(item, "__func__", item))
        elif isinstance(code := _attribute(obj, "__code__"), types.CodeType):  # functions, bound methods
            self._add_code(code)
            closure = _attribute(obj, "__closure__")
            for cell in closure if isinstance(closure, tuple) else ():
                try:
                    self.add(cell.cell_contents)
                except ValueError:
                    pass
            names = _attribute(obj, "__globals__")
            for name in _names(code) if isinstance(names, dict) else ():
                value = names.get(name)
                if _attribute(value, "__module__") == "__main__":
                    self.add(value)
        elif (func := _attribute(obj, "func")) is not None:  # functools.partial
            self.add(func)
            self.add(_attribute(obj, "args"))
        return self

    def _add_code(self, code) -> None:
        lines = [line for _, _, line in code.co_lines() if line is not None] or [code.co_firstlineno]
        self._entries.append((code.co_name, code.co_firstlineno, max(lines), code.co_filename))
        for const in code.co_consts:
            if hasattr(const, "co_lines"):
                self._add_code(const)

    def resolve(self, file: str, line: int, func: str) -> str:
        """The real file name of a frame that cloudpickle renamed, else ``file`` unchanged."""
        if file != DYNAMIC:
            return file
        for name, first, last, filename in self._entries:
            if name == func and first <= line <= last:
                return filename
        return file


def _attribute(obj: object, name: str, default: object = None) -> object:
    """``getattr(obj, name, default)`` that also survives a ``__getattr__`` raising something else than
    AttributeError (the learner's objects are passed over, never a reason for ``run`` to fail)."""
    try:
        return getattr(obj, name, default)
    except Exception:  # noqa: BLE001
        return default


def _names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names
