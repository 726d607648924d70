"""a09 — `barrierlab lint` on hostile sources: deep ASTs that parse (a + chain of 60,000 operands, 60,000 chained calls/attributes/subscripts, 3,000 stacked decorators, nested lambdas, a
dict of 50,000 keys), odd encodings (unicode_escape, utf-16 with BOM, rot13, BOM + latin-1 declaration, NUL bytes),
hostile notebooks (JSON nested 100,000 deep, cells whose source is a number, a cell list that is a dict), FIFOs
and /dev/zero.
Promise (reference): exit 0 nothing found, 1 found, 2 a file it could not read (one line on stderr each; the
other files are still linted); its time grows about linearly with the code; no traceback."""

import json
import os
import shutil
import tempfile

from _h import PY, finish, run

HEAD = "import torch.distributed as dist\nrank = dist.get_rank()\n"
TAIL = "if rank == 0:\n    dist.barrier()\n"  # a finding, so a linted file says 1


def src(body):
    return HEAD + body + "\n" + TAIL


cases = {
    "plus_chain.py": src("x = " + " + ".join(["rank"] * 60000)),
    "call_chain.py": src("x = f" + "()" * 60000),
    "attr_chain.py": src("x = a" + ".b" * 60000),
    "subscript_chain.py": src("x = a" + "[0]" * 60000),
    "decorators.py": src("@d\n" * 3000 + "def g():\n    dist.barrier()\n"),
    "lambdas.py": src("f = " + "lambda: " * 150 + "dist.barrier()"),
    "big_dict.py": src("d = {" + ", ".join(f"'k{i}': rank" for i in range(50000)) + "}"),
    "nested_ifs.py": src("".join("    " * i + f"if rank > {i}:\n" for i in range(95)) + "    " * 95 + "dist.barrier()"),
    "unary_chain.py": src("x = " + "-" * 3000 + "rank"),
    "not_chain.py": src("x = " + "not " * 3000 + "rank"),
    "fstring_nest.py": src("x = f'{rank!r:>{rank}}' * 3"),
}
binary = {
    "unicode_escape.py": ("# -*- coding: unicode_escape -*-\n" + src("s = '\\x41'")).encode("latin-1"),
    "utf16.py": src("s = 'é'").encode("utf-16"),
    "utf16_declared.py": ("# -*- coding: utf-16 -*-\n" + src("s = 'é'")).encode("utf-16"),
    "rot13.py": ("# -*- coding: rot13 -*-\n" + src("")).encode(),
    "bom_latin1.py": b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + src("").encode(),
    "nul.py": src("s = 1").encode().replace(b"s = 1", b"s = \x00 1"),
    "surrogate_name.py": src("").encode() + b"\xed\xa0\x80 = 1\n",
    "cp1252.py": ("# -*- coding: cp1252 -*-\n" + src("s = '€'")).encode("cp1252"),
}
nb_cell = lambda s: {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
notebooks = {
    "deep.ipynb": "[" * 100000 + "]" * 100000,
    "source_number.ipynb": json.dumps({"cells": [nb_cell(12345)], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
    "cells_dict.ipynb": json.dumps(
        {"cells": {"a": nb_cell(src(""))}, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    ),
    "source_list_of_numbers.ipynb": json.dumps(
        {"cells": [nb_cell([1, 2, None])], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    ),
    "nbformat_huge.ipynb": json.dumps(
        {"cells": [nb_cell(src(""))], "metadata": {}, "nbformat": 10**400 if False else 1e308, "nbformat_minor": -1}
    ),
    "magics.ipynb": json.dumps(
        {
            "cells": [nb_cell("%%bash\nexit 1\n"), nb_cell("!rm -rf /nothing\n" + src("")), nb_cell("x = %time 1\n")],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ),
}

work = tempfile.mkdtemp(prefix="a28-lint-")
broken = []
try:
    paths = []
    for name, text in cases.items():
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        paths.append(name)
    for name, data in {**binary, **{k: v.encode() for k, v in notebooks.items()}}.items():
        with open(os.path.join(work, name), "wb") as f:
            f.write(data)
        paths.append(name)
    os.mkfifo(os.path.join(work, "fifo.py"))
    paths.append("fifo.py")
    os.symlink("/dev/zero", os.path.join(work, "zero.py"))
    paths.append("zero.py")
    for name in paths:
        rc, out, err, secs = run([PY, "-m", "barrierlab", "lint", name], timeout=90, cwd=work)
        errl = [ln for ln in err.strip().splitlines() if ln.strip()]
        ok = rc in (0, 1, 2) and "Traceback" not in err and secs < 30 and (rc != 2 or len(errl) == 1)
        print(
            ("  " if ok else "XX"), f"{name}: rc={rc} {secs:.1f}s out={out.strip()[:120]!r} err={err.strip()[-220:]!r}"
        )
        if not ok:
            broken.append(
                f"{name}: rc={rc} after {secs:.1f} s; stdout {out.strip()[:300]!r}; stderr: {err.strip()[-700:]}"
            )
    # all together: a file it cannot read does not stop the others
    rc, out, err, secs = run([PY, "-m", "barrierlab", "lint", *paths], timeout=200, cwd=work)
    print(
        f"all {len(paths)} at once: rc={rc} {secs:.1f}s, {len(out.splitlines())} stdout lines, {len(err.splitlines())} stderr lines"
    )
    if rc not in (1, 2) or "Traceback" in err:
        broken.append(f"all at once: rc={rc}; {err[-500:]}")
finally:
    shutil.rmtree(work, ignore_errors=True)
finish(broken, "barrierlab lint on hostile sources")
