"""The residency plans of a 32 GiB PoRep partition at each device size (the model of
cuzk_plugin/engine/residency.py, not a measurement), as a markdown table:

    .venv/bin/python bench/residency/plan_table.py
"""

from __future__ import annotations

from cuzk_plugin.engine.residency import CircuitFootprint, DeviceMemoryTooSmall, plan_residency

#: The key's counts (tests/test_residency.py POREP_32G) and the circuit's device bytes resident
#: and streamed by rows, and the bytes its rows copy a partition streamed (the recorded
#: porep-32g circuit in the compact form of add6364 and 85e4a3a: 3 x (m + chunks) x 4 + 722.4 M
#: terms x 6 = 5.9 GB of matrices, 0.26 GB of tables and densities; 0.62 GB on the device
#: streamed, 0.8 GB in the daemon's log before).
COUNTS = {"ic": 328, "h": (1 << 27) - 1, "l": 130_169_893, "a": 129_753_292 + 328, "b_g1": 33_112_281 + 1,
          "b_g2": 33_112_281 + 1}
CIRCUIT = CircuitFootprint(6_160_000_000, 620_000_000, 5_900_000_000, 722_389_000)


def main() -> None:
    print("| device limit | in flight (lane / plan) | resident | streamed a partition | chunk | circuit | MSMs | H | working set | est. streaming |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for gib in (139, 80, 64, 48, 40, 32, 24, 16):
        for lane_flights in (2,):
            try:
                p = plan_residency("porep-32g", "cuda:0", COUNTS, available_bytes=gib << 30, in_flight=lane_flights,
                                   min_in_flight=1, circuit=CIRCUIT)
            except DeviceMemoryTooSmall as exc:
                need = str(exc).split("needs ")[1].split(" of")[0]
                print(f"| {gib} GiB | {lane_flights} / - | refused: a partition needs {need} | | | | | | | |")
                continue
            circuit = "rows streamed" if p.circuit_streamed else "on the host" if p.circuit_on_host else "resident"
            print(f"| {gib} GiB | {lane_flights} / {p.in_flight} | {'+'.join(p.resident) or 'none'} "
                  f"({p.resident_bytes / 1e9:.1f} GB) | {p.streamed_bytes / 1e9:.1f} GB | {p.stream_chunk:,} | {circuit} "
                  f"({p.circuit_bytes / 1e9:.1f} GB) | {'in turn' if p.msm_in_turn else 'side by side'} | "
                  f"{'two buffers' if p.h_lean else 'three buffers'} | "
                  f"{p.working_bytes / 1e9:.1f} GB | {p.stream_seconds:.2f} s |")


if __name__ == "__main__":
    main()
