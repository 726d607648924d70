"""Notebook 02's check_save_atomically: wrong answers (right APIs in the wrong order) must get ✗ with a reason;
right answers written differently from the model answer must get ✓."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

import _h
import torch

from barrierlab.exercises.nb02 import check_save_atomically


# (a) wrong
def w_replace_before_flush(obj, path):
    # (torch.save(obj, f) flushes f itself at its end: torch/serialization.py, _open_zipfile_writer_buffer.__exit__;
    # so the unflushed case needs writes of our own)
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    with open(path + ".tmp", "wb") as f:
        for i in range(0, len(data), 1000):
            f.write(data[i : i + 1000])
        os.replace(path + ".tmp", path)  # renamed while the last bytes still sit in Python's buffer


def w_remove_then_rename(obj, path):
    torch.save(obj, path + ".tmp")
    if os.path.exists(path):
        os.remove(path)
    os.rename(path + ".tmp", path)


def w_copy_into_place(obj, path):
    torch.save(obj, path + ".tmp")
    shutil.copyfile(path + ".tmp", path)
    os.remove(path + ".tmp")


def w_replace_then_save_again(obj, path):
    torch.save(obj, path + ".tmp")
    os.replace(path + ".tmp", path)
    torch.save(obj, path)  # "to be sure"


def w_tmp_in_tmpdir_moved(obj, path):
    fd, tmp = tempfile.mkstemp()
    with os.fdopen(fd, "wb") as f:
        torch.save(obj, f)
    shutil.move(tmp, path)


# (b) right, written differently
def r_named_temporary_file(obj, path):
    with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False) as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(f.name, path)


def r_mkstemp_pathlib(obj, path):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".part")
    with os.fdopen(fd, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    Path(tmp).replace(path)


@contextlib.contextmanager
def atomic_open(path):
    tmp = f"{path}.{os.getpid()}.tmp"
    f = open(tmp, "wb")
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
    finally:
        f.close()
    os.replace(tmp, path)


def r_context_manager(obj, path):
    with atomic_open(path) as f:
        torch.save(obj, f)


def r_buffer_then_os_write_loop(obj, path):
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = memoryview(buf.getvalue())
    tmp = path + ".new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while data:
            n = os.write(fd, data)
            data = data[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


def r_replace_inside_with_after_fsync(obj, path):
    with open(path + ".tmp", "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_replace_before_flush,
            w_remove_then_rename,
            w_copy_into_place,
            w_replace_then_save_again,
            w_tmp_in_tmpdir_moved,
            r_named_temporary_file,
            r_mkstemp_pathlib,
            r_context_manager,
            r_buffer_then_os_write_loop,
            r_replace_inside_with_after_fsync,
        ]
    ]
    sys.exit(_h.check_cases(check_save_atomically, cases, quiet=True))
