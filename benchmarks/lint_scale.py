"""How lint's time grows with the size of a file: chains of N functions, each calling the next (the last one
calls ``dist.barrier()``), in three shapes, linted in this process and timed in CPU seconds.

    PYTHONPATH=src python benchmarks/lint_scale.py [--sizes 100 200 400 800]

Shapes: ``plain`` (``return f2(x) + 1``), ``guarded`` (the call under ``if x > i:``, a condition lint must
simulate) and ``rank`` (the call under ``if rank == 0:``: every function is a finding whose chain runs to the
end); ``method`` is the ``rank`` chain as methods of one class (``self.f2(rank)``); ``assign`` is one function of N chained assignments ``x2 = x1 + 1`` from ``x1 = rank``, the last one
tested before a barrier (the taint of a name is a closure over the assignments). Near-linear growth doubles the time when N doubles; the ``ratio`` column divides each size's time by
the previous size's. ``kB`` is the size of the file.
"""

from __future__ import annotations

import argparse
import textwrap
import time

from barrierlab.lint import lint_source

SHAPES = {
    "plain": ("def f{i}(x):\n    return f{j}(x) + 1\n", "x"),
    "guarded": ("def f{i}(x):\n    if x > {i}:\n        return f{j}(x) + 1\n    return x\n", "x"),
    "rank": ("def f{i}(rank):\n    if rank == 0:\n        return f{j}(rank) + 1\n    return rank\n", "rank"),
    "method": (
        "def f{i}(self, rank):\n    if rank == 0:\n        return self.f{j}(rank) + 1\n    return rank\n",
        "self, rank",
    ),
}


def chain(shape: str, n: int) -> str:
    if shape == "assign":
        steps = "".join(f"    x{i} = x{i - 1} + 1\n" for i in range(2, n + 1))
        return f"import torch.distributed as dist\n\n\ndef f(rank):\n    x1 = rank\n{steps}    if x{n} > 0:\n" + (
            "        dist.barrier()\n"
        )
    body, arg = SHAPES[shape]
    funcs = [body.format(i=i, j=i + 1) for i in range(1, n)]
    funcs.append(f"def f{n}({arg}):\n    dist.barrier()\n    return 0\n")
    if shape == "method":  # the same chain as methods of one class
        return "import torch.distributed as dist\n\n\nclass T:\n" + textwrap.indent("\n".join(funcs), "    ")
    return "import torch.distributed as dist\n\n\n" + "\n\n".join(funcs)


def cpu_seconds(source: str) -> float:
    start = time.process_time()
    lint_source(source, "chain.py")
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400, 800])
    args = parser.parse_args(argv)
    print(f"{'shape':<9}{'N':>6}{'kB':>7}{'CPU s':>9}{'ratio':>8}")
    for shape in (*SHAPES, "assign"):
        previous = None
        for n in args.sizes:
            source = chain(shape, n)
            seconds = cpu_seconds(source)
            ratio = f"{seconds / previous:.1f}" if previous else ""
            print(f"{shape:<9}{n:>6}{len(source) / 1000:>7.0f}{seconds:>9.2f}{ratio:>8}", flush=True)
            previous = seconds
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
