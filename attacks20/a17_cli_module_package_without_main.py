"""Promise 5 (docs/reference.md: "Every argument is checked before anything starts ... ends the command at once
with a one-line error and exit code 2"): `barrierlab run -m pkg -n 2`, where pkg is a package without a
__main__.py.

`python -m pkg` refuses it at once ("No module named pkg.__main__; 'pkg' is a package and cannot be directly
executed"). script.check_module accepts it (importlib.util.find_spec finds the package itself), the ranks are
started, and each raises that ImportError: exit 1 with a run, a diagnosis and a ledger, not exit 2 before
anything starts as for a module that does not exist."""

import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def barrierlab(folder, *args):
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "barrierlab", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=200
    )


def main():
    folder = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(folder, "pkg"))
        open(os.path.join(folder, "pkg", "__init__.py"), "w").close()
        missing = barrierlab(folder, "run", "-m", "pkg.missing", "-n", "2")
        package = barrierlab(folder, "run", "-m", "pkg", "-n", "2")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"run -m pkg.missing -> exit {missing.returncode}: {(missing.stdout + missing.stderr).strip()[:150]}")
    first = package.stdout.splitlines()[:2]
    print(f"run -m pkg (no __main__) -> exit {package.returncode}: {' | '.join(first)[:200]}")
    if package.returncode != 2:
        print("BROKEN: a package without __main__ was not refused before the ranks started")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
