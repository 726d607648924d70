"""Promise (docs/reference.md): "Every argument is checked before anything starts, with the parameter named";
"env values are str (or int/float, converted with str())".
Attack: env={"SEED": 10**5000} (an int, as allowed). str() of it raises Python's own ValueError (the 4,300-digit
limit of int-to-str conversion) out of bl.run. Is the error one that names env (as every other env error does)?"""

from _h import run_driver, verdict

DRIVER = r"""
import barrierlab as bl
for value in (10**5000, ):
    try:
        bl.run(lambda: 1, 2, env={"SEED": value})
        print("RESULT: accepted")
    except BaseException as e:
        print(f"RESULT: {type(e).__name__}: {str(e)[:200]}")
"""

r = run_driver(DRIVER, timeout=60)
r.show()
line = next((l for l in r.out.splitlines() if l.startswith("RESULT:")), "")
verdict("env" not in line, f"{line[:200]!r}")
