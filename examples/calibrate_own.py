"""Calibrate gpusizer on your own benchmarks: three rows in, every later estimate follows them.

The workflow (``docs/calibration.md``): shortlist with the analytical model, benchmark two or three
candidates, feed the numbers back, trust the calibrated model for the rest.

THE THREE "MEASUREMENTS" BELOW ARE SYNTHETIC. They are invented for this example (about 12 % slower
than the shipped constants predict) for an imaginary deployment, SGLang serving Qwen3-8B on L40S
cards at 1, 16 and 64 concurrent users. They were never measured on any machine; do not quote them.
Replace them with your own rows, or read your tool's output with ``gpusizer.readers.read``.
"""

# %%
import tempfile
from pathlib import Path

import gpusizer
from gpusizer import calibration
from gpusizer.readers import Measurement

# %% Three benchmark rows (SYNTHETIC numbers, see above)
common = dict(model="qwen3-8b", gpu="l40s", engine="sglang", source="synthetic example, not measured")
rows = [
    Measurement(id="single-stream", metric="decode", value=38.5, unit="tok/s", prompt=1000, output=500, **common),
    Measurement(id="16-users", metric="tpot", value=31.0, unit="ms", prompt=1000, output=500, concurrency=16,
                **common),
    Measurement(id="64-users", metric="tpot", value=49.5, unit="ms", prompt=1000, output=500, concurrency=64,
                **common),
]

# %% Calibrate: one fit per engine class x GPU class in the data (here sglang on GDDR cards)
own = gpusizer.calibrate(rows)
print(calibration.error_table(own))
# The table shows medians; look at the worst row too. A row still far off after fitting (tens of per cent)
# is one the model cannot follow with these constants (another regime, a setting the row does not state,
# a bad measurement): check it before trusting the calibration, and leave it out if it is wrong.
worst = max(own.errors, key=lambda r: abs(r.after / r.measured - 1))
print(f"worst row after fitting: {worst.id} ({worst.metric}), {abs(worst.after / worst.measured - 1):.1%} off "
      f"(leave-one-out {abs(worst.loo / worst.measured - 1):.1%})")
print()
for p in own.scopes[0].parameters:
    if p.informed:
        print(f"  {p.entry:28} {p.name:16} {p.prior:10.4g} -> {p.value:10.4g}")

# %% The effect on a model that was never benchmarked, on the same cards and engine
# The decode band now comes from the three rows' leave-one-out residuals (a regime needs three rows
# for a band of its own); prefill was not measured, so its constants and band stay the shipped ones.
print()
for label, chosen in (("shipped constants", None), ("your calibration", own)):
    e = gpusizer.estimate("qwen3-14b", "l40s", engine="sglang", context=2048, concurrency=8, calibration=chosen)
    d = e.decode
    print(f"{label:18} decode {d.expected_tokens_per_second:5.1f} tok/s per user "
          f"(p10-p90 {d.band[0]:.1f}-{d.band[1]:.1f}), constants {d.constants}")

# %% Save it for later runs: gpusizer fit qwen3-14b l40s --engine sglang --calibration my.toml
with tempfile.TemporaryDirectory() as folder:
    path = calibration.save(own, Path(folder) / "my.toml")
    again = calibration.load(path)
    print(f"\nsaved and read back {path.name}: {len(again.measurements)} rows, identical: {again == own}")
