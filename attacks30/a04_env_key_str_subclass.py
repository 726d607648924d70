"""Promise (docs/reference.md): "Every argument is checked before anything starts, with the parameter named:
TypeError for a wrong type, ValueError for a wrong value"; "env values are str"; _check_env: "env keys must be str".
Attack: env={K("FOO"): "1"} where K is a plain subclass of str. _check_env accepts the key (isinstance) and keeps the
subclass object; the protocol refuses it only when the Launch is sent, after the warm process has been started
(seconds) and the run folder made. Does the call refuse it first, naming env?"""

from _h import run_driver, verdict

DRIVER = r"""
import time, barrierlab as bl
class K(str):
    pass
t = time.monotonic()
try:
    bl.run(lambda: 1, 2, env={K("FOO"): "1"})
    print("RESULT: accepted")
except BaseException as e:
    print(f"RESULT: {type(e).__module__}.{type(e).__name__}: {str(e)[:260]}")
print(f"after {time.monotonic() - t:.2f} s")
t = time.monotonic()
r = bl.run(lambda: 1, 2)
print(f"next run: {r!r} after {time.monotonic() - t:.2f} s")
"""

r = run_driver(DRIVER, timeout=120)
r.show()
line = next((l for l in r.out.splitlines() if l.startswith("RESULT:")), "")
named = ("TypeError" in line or "ValueError" in line) and "env" in line.split(":", 2)[-1][:80]
verdict(not named or bool(r.leftover_files), f"{line[:200]!r}; leftover files: {len(r.leftover_files)}")
