"""nb02's check on six correct atomic saves written other ways than the model answer: NamedTemporaryFile with
torch.save into the file object and os.replace inside the `with`, mkstemp + an os.write loop + os.rename,
pathlib write_bytes + Path.replace, os.fdopen, a mkdtemp subfolder, os.replace with dir_fd. Promise: any
temporary file in the same directory, written completely and renamed onto the path, passes. Held if all pass."""

import io
import os
import pathlib
import tempfile

import _common  # noqa: F401
import torch

from barrierlab.exercises.nb02 import check_save_atomically


def named_temporary_file(obj, path):
    with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False, suffix=".tmp") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
        os.replace(f.name, path)


def mkstemp_write_loop(obj, path):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    buf = io.BytesIO()
    torch.save(obj, buf)
    view = memoryview(buf.getvalue())
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, path)


def pathlib_replace(obj, path):
    tmp = pathlib.Path(path).with_suffix(".tmp")
    buf = io.BytesIO()
    torch.save(obj, buf)
    tmp.write_bytes(buf.getvalue())
    tmp.replace(path)


def fdopen(obj, path):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def mkdtemp_subfolder(obj, path):
    d = tempfile.mkdtemp(dir=os.path.dirname(path))
    tmp = os.path.join(d, "x.pt")
    torch.save(obj, tmp)
    os.replace(tmp, path)
    os.rmdir(d)


def dir_fd(obj, path):
    d = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        torch.save(obj, path + ".tmp")
        os.replace(os.path.basename(path) + ".tmp", os.path.basename(path), src_dir_fd=d, dst_dir_fd=d)
        os.fsync(d)
    finally:
        os.close(d)


refused = []
for save in (named_temporary_file, mkstemp_write_loop, pathlib_replace, fdopen, mkdtemp_subfolder, dir_fd):
    v = check_save_atomically(save, quiet=True)
    print(f"{'✓' if v.ok else '✗'} {save.__name__}: {v.message[:200]}", flush=True)
    if not v.ok:
        refused.append(save.__name__)
_common.finish(bool(refused), f"refused: {refused}" if refused else "all six atomic saves pass")
