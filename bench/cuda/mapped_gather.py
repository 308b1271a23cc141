"""Whether a streamed MSM should read only the points of its non-zero scalars through the mapped
address of the page-locked key instead of copying whole chunks (kernels/bench/mapped_gather.cu):
at a 24 GiB device limit a 32 GiB PoRep partition's L, A and B MSMs are bound by the link, and
~51 % of their scalars are 0. For each share of records kept, the bulk copy of all 2^LOG_N
96-byte records against the gather of the kept ones: medians of REPEAT after a warm-up, the
useful GB/s of each and the gather's time against the copy's (under 1: reading only what is
needed wins at that share):

    python bench/cuda/mapped_gather.py [LOG_N] [REPEAT] [PERMILLE ...]   (defaults 24 5 1000 740 490 30)

Then the question itself on one G1 MSM of 2^MSM_LOG_N points (env, default 26; 0 skips it) with a
PoRep partition's scalar mix (98.7 % of them 0 or 1): the points resident, streamed in chunks of
2^24 (the streamed path) and read by the MSM through the mapped address (no copy). At 0cd336f a
fourth way, `msm_mapped` (the large scalars' points gathered to the device once), was timed too:
`runs-2026-12-06-sixth/mapped-gather.txt`.
"""

import os
import statistics
import sys

from cuzk_plugin.backends.cuda.bench import CudaBench

args = [int(a) for a in sys.argv[1:]]
log_n, repeat = (args[:2] + [24, 5][len(args[:2]):])
shares = args[2:] or [1000, 740, 490, 30]
bench = CudaBench()
record = 96
print(f"2^{log_n} records of {record} bytes in page-locked host memory, median of {repeat}")
for permille in shares:
    copy, gather, kept, ok = bench.mapped_gather(log_n, permille, repeat)
    c, g = statistics.median(copy), statistics.median(gather)
    whole, part = (record << log_n) / 1e6, kept * record / 1e6
    print(f"kept {permille / 10:5.1f} % ({kept:,}): copy all {c:8.2f} ms ({min(copy):.2f}-{max(copy):.2f}, "
          f"{whole / c:.1f} GB/s), gather kept {g:8.2f} ms ({min(gather):.2f}-{max(gather):.2f}, "
          f"{part / g:.1f} GB/s useful), gather/copy {g / c:.3f}, records {'ok' if ok else 'WRONG'}")
msm_log_n = int(os.environ.get("MSM_LOG_N", "26"))
if msm_log_n:
    ways, ok = bench.msm_mapped(msm_log_n, 0.987, repeat)
    r = statistics.median(ways["resident"])
    for name, t in ways.items():
        print(f"G1 MSM 2^{msm_log_n}, 98.7 % of scalars 0/1, {name:>9}: {statistics.median(t):8.2f} ms "
              f"({min(t):.2f}-{max(t):.2f}), {statistics.median(t) / r:.3f}x resident")
    print(f"sums {'ok' if ok else 'WRONG'}")
bench.close()
