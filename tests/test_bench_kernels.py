"""`cuzk-bench kernels` without a GPU: report formatting and the unavailable-backend message."""

from __future__ import annotations

import pytest

from cuzk_plugin.cli.bench import build_parser, main
from cuzk_plugin.cli.bench_kernels import format_report


def test_report_has_median_spread_anchor_and_target():
    line = format_report("msm-g1", 24, [100.0, 110.0, 90.0], "check ok")
    assert "median 100.00 ms" in line and "spread 20.0%" in line
    assert "0.62x anchor (160.0 ms)" in line and "target 120.0 ms met" in line and line.endswith("check ok")


def test_report_without_anchor():
    line = format_report("msm-g2", 20, [5.0], "check ok")
    assert "anchor" not in line and "median 5.00 ms" in line


def test_report_of_a_bit_mix_has_no_anchor_or_target():
    """The anchors time random scalars: an MSM of mostly 0/1 scalars is not comparable."""
    line = format_report("msm-g1", 24, [50.0], "0.988 of the scalars in {0, 1}; check ok", random_scalars=False)
    assert "anchor" not in line and "target" not in line and "median 50.00 ms" in line


def test_msm_with_a_bit_mix_on_the_cpu_backend(capsys):
    assert main(["kernels", "--backend", "cpu", "--op", "msm-g1", "--log2", "6", "--repeat", "1",
                 "--frac-bits", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "0.900 of the scalars in {0, 1}; check ok" in out and "anchor" not in out


def test_kernels_parser():
    args = build_parser().parse_args(["kernels", "--op", "ntt", "--log2", "20", "--repeat", "3"])
    assert (args.backend, args.op, args.log2, args.repeat, args.profile) == ("cuda", "ntt", 20, 3, False)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["kernels", "--backend", "nonesuch", "--op", "ntt", "--log2", "4"])


@pytest.mark.parametrize("op", ["msm-g1", "msm-g2", "ntt", "ntt-inverse", "ntt-coset"])
def test_kernels_on_the_cpu_backend_check_their_results(op, capsys):
    """--backend cpu times the protocol calls on host-made inputs and checks each result."""
    assert main(["kernels", "--backend", "cpu", "--op", op, "--log2", "5", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"cpu {op} 2^5: median") and ("check ok" in out or "round trip ok" in out)


def test_host_bench_msm_check_fails_on_a_wrong_sum():
    from cuzk_plugin.backends.cpu import CpuBackend
    from cuzk_plugin.cli.bench_kernels import HostBench

    class OffByOne(CpuBackend):
        def msm_g1(self, bases, scalars):
            scalars = scalars.copy()
            scalars[0, 0] ^= 1
            return super().msm_g1(bases, scalars)

    _, ok = HostBench(OffByOne()).bench_msm(6, 1)
    assert not ok
    _, ok = HostBench(CpuBackend()).bench_msm(9, 1)  # 512 points over 256 distinct bases
    assert ok
    _, ok = HostBench(OffByOne(), seed=3).bench_msm(6, 1, frac_bits=0.5)  # scalar 0 may now be 0 or 1
    assert not ok
    _, ok = HostBench(CpuBackend()).bench_msm(9, 1, frac_bits=0.9)
    assert ok


def test_prove_on_the_cpu_backend_verifies_every_proof(capsys):
    assert main(["kernels", "--backend", "cpu", "--op", "prove", "--log2", "5", "--repeat", "2"]) == 0
    assert "proofs verified on the CPU: 2/2" in capsys.readouterr().out


def test_pipeline_is_cuda_only():
    from cuzk_plugin.backends.cpu import CpuBackend
    from cuzk_plugin.cli.bench_kernels import HostBench, measure

    with pytest.raises(SystemExit, match="cuda only"):
        measure(HostBench(CpuBackend()), "pipeline", 4, 1, 0.95)


def test_unavailable_backend_exits_with_reason(monkeypatch):
    from cuzk_plugin.backends.cuda import CudaBackend

    # Made unavailable here too where a GPU is present, so the message is checked everywhere.
    monkeypatch.setattr(CudaBackend, "probe", classmethod(lambda cls: "no CUDA device present"))
    with pytest.raises(SystemExit, match="cannot run here: no CUDA device present"):
        main(["kernels", "--backend", "cuda", "--op", "ntt", "--log2", "4"])


def test_pipeline_report_compares_overlapped_with_serial():
    from cuzk_plugin.cli.bench_kernels import measure

    class FakeBackend:
        def device_memory(self):  # marks a cuda-like bench
            return 1 << 34, 1 << 34

        def bench_pipeline(self, log_n, parts, *, overlap, frac_bits):
            stages = {"h": 1.0, "g1_msm": 2.0, "g2_wait": 0.0, "total": 4.0, "upload": 3.0, "queue": 1.0}
            return (8.0 if overlap else 10.0), [stages] * parts

    args = build_parser().parse_args(["kernels", "--op", "pipeline", "--log2", "12"])
    assert args.parts == 3
    times, note = measure(FakeBackend(), "pipeline", 12, 2, 0.95, parts=2)
    assert times == [8.0, 8.0]
    assert "serial median 10.00 ms" in note and "overlapped/serial 0.80" in note and "upload 3.0" in note
    assert "per partition 4.00 vs 5.00 ms serial" in note


class CpuBenchCircuit:
    """bench_prove as the CUDA library runs it, on the CPU at a small size (the reference
    instance of cuzk_plugin/groth16/bench_circuit.py); `corrupt` spoils the H sum."""

    def __init__(self, corrupt: bool = False):
        self.corrupt = corrupt

    def bench_prove(self, log_n, repeat, secrets, *, n_inputs=3, frac_bits=0.95):
        import dataclasses

        import numpy as np

        from cuzk_plugin.backends.cpu import CpuBackend
        from cuzk_plugin.backends.cuda.bench import BenchProveRun
        from cuzk_plugin.bls12_381.fields import R, limbs_to_ints
        from cuzk_plugin.groth16 import bench_circuit as bc

        k = bc.BenchSecrets(*limbs_to_ints(secrets))
        key, cpu = bc.proving_key(k, log_n, n_inputs), CpuBackend()
        rng = np.random.default_rng()
        runs = []
        for _ in range(repeat):
            inputs = [1] + [int(x) for x in rng.integers(1 << 62, size=n_inputs - 1)]
            aux = [int(x) for x in rng.integers(2, size=(1 << log_n) - n_inputs)]
            aux[0] = int.from_bytes(rng.bytes(31), "little")
            sums = cpu.prove_finish(cpu.prove_start(cpu.load_srs(key), bc.partition(inputs, aux)))
            if self.corrupt:
                sums = dataclasses.replace(sums, h=sums.a.copy())
            w_one = bc.w_one(k, log_n, [0] * n_inputs + [y * y % R for y in aux])
            runs.append(BenchProveRun(time_ms=1.0, sums=sums, inputs=inputs, w_one=w_one))
        return runs, {"h": 0.1, "g1_msm": 0.5, "g2_wait": 0.0, "total": 1.0}


def test_prove_report_verifies_every_proof_on_the_cpu():
    from cuzk_plugin.cli.bench_kernels import measure

    times, note = measure(CpuBenchCircuit(), "prove", 4, 2, 0.95)
    assert times == [1.0, 1.0]
    assert "proofs verified on the CPU: 2/2" in note
    times, note = measure(CpuBenchCircuit(corrupt=True), "prove", 4, 2, 0.95)
    assert "FAILED" in note and "0/2" in note


def test_r1cs_on_the_cpu_backend_checks_rows(capsys):
    assert main(["kernels", "--backend", "cpu", "--op", "r1cs", "--log2", "8", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cpu r1cs 2^8: median") and "rows ok" in out


def test_synthetic_circuit_is_filecoin_shaped_and_checkable():
    import numpy as np

    from cuzk_plugin.backends.cpu import CpuBackend
    from cuzk_plugin.cli.bench_kernels import r1cs_rows_by_integers, synthetic_circuit

    pce, z = synthetic_circuit(9, np.random.default_rng(3))
    assert pce.num_constraints == 512 and z.shape == (pce.num_vars, 4)
    ones = (pce.a.coeff_idx <= 1).mean()
    assert 0.6 < ones < 0.8  # coefficients 1 and -1 dominate
    cpu = CpuBackend()
    handle = cpu.load_circuit(pce)
    a, b, c = cpu.evaluate_r1cs(handle, z)
    rows = np.arange(0, 512, 37)
    np.testing.assert_array_equal(np.stack([a[rows], b[rows], c[rows]], axis=1), r1cs_rows_by_integers(pce, z, rows))
    wrong = z.copy()
    wrong[pce.a.cols[0]] = (2, 0, 0, 0) if wrong[pce.a.cols[0], 0] != 2 else (3, 0, 0, 0)
    assert not np.array_equal(r1cs_rows_by_integers(pce, wrong, np.array([0])), r1cs_rows_by_integers(pce, z, np.array([0])))


def test_prove_bench_plans_the_2_27_key_like_the_daemon():
    """An 80 GB card (85.0 GB free) cannot hold the 77 GB benchmark key beside a partition:
    the default plan streams part of it within the room; the H200 keeps it all."""
    from cuzk_plugin.cli.bench_kernels import plan_bench_prove

    h100 = plan_bench_prove(27, int(85.0e9), 2, 1 << 24)
    assert not h100.all_resident and h100.streamed
    assert h100.resident_bytes + h100.working_bytes + (1536 << 20) <= 85.0e9
    assert plan_bench_prove(27, int(150.1e9), 2, 1 << 24).all_resident
    assert plan_bench_prove(22, int(85.0e9), 2, 1 << 24).all_resident


def test_prove_bench_passes_the_plan_to_the_device(monkeypatch):
    """Without --resident, what the plan streams, its chunk and its partitions in flight reach
    bench_prove (counts of a 2^27 key planned against 24 GB; the proofs themselves at 2^4)."""
    from cuzk_plugin.cli import bench_kernels

    class PlannedBench(CpuBenchCircuit):
        def __init__(self, free):
            super().__init__()
            self.free, self.kwargs = free, None

        def device_memory(self):  # marks a cuda-like bench
            return self.free, self.free

        def bench_prove(self, log_n, repeat, secrets, *, frac_bits=0.95, **kwargs):
            self.kwargs = kwargs
            return super().bench_prove(log_n, repeat, secrets, frac_bits=frac_bits)

    counts_27 = bench_kernels.bench_key_counts(27)
    monkeypatch.setattr(bench_kernels, "bench_key_counts", lambda log2: counts_27)
    small = PlannedBench(int(30e9))
    _, note = bench_kernels.measure(small, "prove", 4, 1, 0.95)
    assert "proofs verified on the CPU: 1/1" in note and "plan: bench-2^4 on cuda:0: resident" in note
    assert small.kwargs["in_flight"] == 1 and len(small.kwargs["resident"]) < 5
    assert small.kwargs["stream_chunk"] <= 1 << 24 and small.kwargs["memory_limit"] == 0
    roomy = PlannedBench(int(150e9))
    bench_kernels.measure(roomy, "prove", 4, 1, 0.95)
    assert roomy.kwargs == {}  # all resident: the device's own defaults
    with pytest.raises(SystemExit, match="cannot be proved"):
        bench_kernels.measure(PlannedBench(int(4e9)), "prove", 4, 1, 0.95)
