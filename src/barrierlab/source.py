"""Show a function's source in a notebook, highlighted, so a lesson can run code it also shows."""

from __future__ import annotations

import inspect

from barrierlab.sites import short_path


class Source:
    """The source of a function: displays as highlighted code in Jupyter, as plain text elsewhere."""

    def __init__(self, fn) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be a function, class or method written in Python, not {type(fn).__name__}")
        fn = inspect.unwrap(fn)  # a decorated function (e.g. a @contextmanager) lives where it was written
        self.fn = fn
        lines, self.first_line = inspect.getsourcelines(fn)
        self.text = "".join(lines)
        self.file = inspect.getsourcefile(fn) or "<unknown>"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        formatter = HtmlFormatter(linenos="inline", linenostart=self.first_line, noclasses=True, style="default")
        return f"<div style='font-size:90%;color:#555'>{short_path(self.file)}</div>" + highlight(
            self.text, PythonLexer(), formatter
        )


def show(fn) -> Source:
    """``barrierlab.show(fn)``: the source of ``fn`` with its real line numbers (as stacks show them)."""
    return Source(fn)
