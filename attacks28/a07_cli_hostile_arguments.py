"""a07 — `barrierlab run` given hostile arguments: odd -n/--timeout/--deadline spellings, --timeline naming a
symlink to /dev/full, a FIFO, a dangling link, an empty name; a script path that is a FIFO, a symlink to
/dev/zero, a folder without __main__.py, a 100 MB one-line file, a binary file.
Promise (reference, command line): every argument is checked before anything starts; a bad one ends the command
at once with a one-line error and exit code 2 (no traceback); a --timeline that names a folder, FIFO or device is
refused; the script never runs for a refused command. A script that cannot be read ends the command (never hangs)
without a traceback from barrierlab."""

import os
import shutil
import tempfile

from _h import PY, finish, run

work = tempfile.mkdtemp(prefix="a28-cli-")
broken = []
try:
    sentinel = os.path.join(work, "ran")
    good = os.path.join(work, "train.py")
    with open(good, "w") as f:
        f.write(
            "import os, torch.distributed as dist\nopen(%r, 'a').write('x')\ndist.init_process_group('gloo')\n"
            "dist.barrier()\ndist.destroy_process_group()\n" % sentinel
        )
    os.symlink("/dev/full", os.path.join(work, "full.png"))
    os.mkfifo(os.path.join(work, "fifo.png"))
    os.symlink(os.path.join(work, "nowhere", "x.png"), os.path.join(work, "dangling.png"))
    os.mkdir(os.path.join(work, "dir.png"))
    os.mkfifo(os.path.join(work, "fifo_train.py"))
    os.symlink("/dev/zero", os.path.join(work, "zero_train.py"))
    os.mkdir(os.path.join(work, "nomain"))
    with open(os.path.join(work, "nomain", "x.py"), "w") as f:
        f.write("pass\n")
    with open(os.path.join(work, "huge_train.py"), "w") as f:
        f.write("x = 1" + " + 1" * 25_000_000 + "\n")
    shutil.copy("/bin/true", os.path.join(work, "binary_train.py"))

    def base(*extra, script=good):
        return [PY, "-m", "barrierlab", "run", script, "-n", "2", "--timeout", "2", *extra]

    refused = {
        "-n 1e1": base("-n", "1e1"),
        "-n 0x4": base("-n", "0x4"),
        "-n -1": base("-n", "-1"),
        "-n 17": base("-n", "17"),
        "-n 10**20": base("-n", "1" + "0" * 20),
        "-n ''": base("-n", ""),
        "--timeout inf": base("--timeout", "inf"),
        "--timeout nan": base("--timeout", "nan"),
        "--timeout 0": base("--timeout", "0"),
        "--timeout -5": base("--timeout", "-5"),
        "--timeout 1e-300": base("--timeout", "1e-300"),
        "--timeout 1e400": base("--timeout", "1e400"),
        "--timeout 5s": base("--timeout", "5s"),
        "--deadline 3606": base("--deadline", "3606"),
        "--deadline 0x10": base("--deadline", "0x10"),
        "--timeline ->/dev/full": base("--timeline", os.path.join(work, "full.png")),
        "--timeline fifo.png": base("--timeline", os.path.join(work, "fifo.png")),
        "--timeline dangling link": base("--timeline", os.path.join(work, "dangling.png")),
        "--timeline dir.png": base("--timeline", os.path.join(work, "dir.png")),
        "--timeline ''": base("--timeline", ""),
        "--timeline x.exe": base("--timeline", os.path.join(work, "x.exe")),
        "--timeline /proc/x.png": base("--timeline", "/proc/x.png"),
        "--timeline /dev/stdout": base("--timeline", "/dev/stdout"),
        "script folder without __main__": base(script=os.path.join(work, "nomain")),
        "-m ''": [PY, "-m", "barrierlab", "run", "-m", "", "-n", "2"],
        "-m ..x": [PY, "-m", "barrierlab", "run", "-m", "..x", "-n", "2"],
    }
    unreadable = {
        "script is a FIFO": base(script=os.path.join(work, "fifo_train.py")),
        "script -> /dev/zero": base(script=os.path.join(work, "zero_train.py")),
        "script of 100 MB on one line": base(script=os.path.join(work, "huge_train.py")),
        "script is an ELF binary": base(script=os.path.join(work, "binary_train.py")),
    }
    for name, cmd in refused.items():
        if os.path.exists(sentinel):
            os.remove(sentinel)
        rc, out, err, secs = run(cmd, timeout=60, cwd=work)
        ran = os.path.exists(sentinel)
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        ok = rc == 2 and not ran and "Traceback" not in err and secs < 15
        print(("  " if ok else "XX"), f"{name}: rc={rc} {secs:.1f}s ran={ran} err={err.strip()[-230:]!r}")
        if not ok:
            broken.append(f"{name}: rc={rc} after {secs:.1f} s, script ran={ran}, stderr: {err.strip()[-400:]!r}")
    for name, cmd in unreadable.items():
        rc, out, err, secs = run(cmd, timeout=60, cwd=work)
        ok = rc not in (0, None) and "Traceback (most recent call last)" not in err.split("--- rank")[0] and secs < 40
        print(
            ("  " if ok else "XX"), f"{name}: rc={rc} {secs:.1f}s err={err.strip()[-300:]!r} out={out.strip()[-200:]!r}"
        )
        if not ok:
            broken.append(f"{name}: rc={rc} after {secs:.1f} s; stderr: {err.strip()[-500:]!r}")
finally:
    shutil.rmtree(work, ignore_errors=True)
finish(broken, "barrierlab run refuses hostile arguments first, clearly")
