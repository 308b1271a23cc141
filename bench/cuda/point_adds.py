"""Whether a batch-affine bucket loop can beat the mixed XYZZ one (issue 27, item 1), before any
MSM is rewritten: G1 additions a second as a bucket loop makes them, XYZZ (batch 0) against
affine additions in batches of 8-64 sharing one inversion (kernels/bench/point_adds.cu), each
checked against (sum of the points' discrete logarithms) G. Medians of REPEAT runs after a
warm-up, and each batch's ratio to XYZZ:

    python bench/cuda/point_adds.py [LOG_N] [LOG_ADDS] [REPEAT]     (defaults 20 28 5)
"""

import statistics
import sys

from cuzk_plugin.backends.cuda.bench import CudaBench

log_n, log_adds, repeat = ([int(a) for a in sys.argv[1:4]] + [20, 28, 5][len(sys.argv[1:4]):])
bench = CudaBench()
base = None
print(f"2^{log_adds} G1 additions over 2^{log_n} random points, median of {repeat}")
for batch in (0, 8, 16, 32, 64):
    times, ok = bench.point_adds(batch, log_n, log_adds, repeat)
    med = statistics.median(times)
    base = base or med
    rate = (1 << log_adds) / (med / 1e3)
    print(f"{'xyzz' if batch == 0 else f'affine x{batch}':>10}: {med:9.2f} ms ({min(times):.2f}-{max(times):.2f}), "
          f"{rate / 1e9:.3f}e9 additions/s, {med / base:.3f}x XYZZ's time, sum {'ok' if ok else 'WRONG'}")
bench.close()
