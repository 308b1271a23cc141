"""What a daemon run's partitions did on the device, from its CUZK_TIMING lines and the clients'
timelines (`cuzk-bench single` JSON): per job, the medians of the device stages, how many
partitions uploaded from a pinned block and handed the upload on early, and the device's idle
gaps between one partition's device work and the next one's.

    python bench/residency/timing_summary.py DIR [DIR ...]

DIR: an e2e folder of bench/residency/porep32g_limits.sh (daemon.log, single-*.json, snap-*.json)."""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

_FIELD = re.compile(r"(\w+)=([\w./:-]+)")


def partition_lines(log: Path) -> dict[str, list[dict[str, str]]]:
    """CUZK_TIMING partition lines by job."""
    jobs: dict[str, list[dict[str, str]]] = defaultdict(list)
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("CUZK_TIMING:") and " partition=" in line:
            f = dict(_FIELD.findall(line))
            jobs[f["job"]].append(f)
    return jobs


#: A partition's device work from its first stage to its last (timelines from before
#: abc_alloc and release have neither).
FIRST_STAGES, LAST_STAGES = ("abc_alloc", "abc", "h"), ("release", "msm_g2_wait", "msm_g1")


def gaps_ms(timeline: list[dict]) -> list[float]:
    """Idle device time between a partition's device work and the next one's."""
    spans: dict[int, dict[str, tuple[float, float]]] = defaultdict(dict)
    for e in timeline:
        spans[e["partition"]][e["stage"]] = (e["start_ms"], e["end_ms"])
    work = sorted((next(s[k][0] for k in FIRST_STAGES if k in s), next(s[k][1] for k in LAST_STAGES if k in s))
                  for p, s in spans.items() if p >= 0 and "msm_g1" in s and ("abc" in s or "h" in s))
    return [max(0.0, start - end_before) for (start, _), (_, end_before) in zip(work[1:], work[:-1], strict=True)]


def _ones(parts: list[dict[str, str]], key: str, value: float = 1) -> str:
    """How many partitions say ``value`` for ``key`` ("not logged" for runs from before it existed)."""
    if not any(key in p for p in parts):
        return "not logged"
    return f"{sum(float(p.get(key, 0)) == value for p in parts)}/{len(parts)}"


def _pairs(parts: list[dict[str, str]]) -> str:
    """The partitions by how many pairs of MSMs shared the device ("not logged" before it was)."""
    if not any("device_msm_paired_ms" in p for p in parts):
        return "not logged"
    counts: dict[int, int] = {}
    for p in parts:
        n = int(float(p.get("device_msm_paired_ms", 0)))
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{n}: {k}/{len(parts)}" for n, k in sorted(counts.items()))


def summary(folder: Path) -> str:
    out = [f"# {folder}"]
    for job, parts in partition_lines(folder / "daemon.log").items():
        med = {k: statistics.median(float(p[k]) for p in parts) for k in parts[0] if k.startswith("device_")
               and k.endswith("_ms")}

        stages = ", ".join(f"{k[7:-3]} {v:.0f}" for k, v in med.items()
                           if k[7:-3] in ("upload_wait", "upload", "queue", "abc_alloc", "r1cs", "h", "h_msm", "g1_msm", "g2_wait", "total",
                                          "release"))
        shares = ",".join(p.get("synthesis_processes", "?") for p in sorted(parts, key=lambda p: int(p["partition"])))
        out.append(f"{job}: {len(parts)} partitions; witness processes by partition {shares}; device medians ms: {stages}; "
                   f"pinned blocks {_ones(parts, 'host_pinned')}; "
                   f"next upload handed on beside the H MSM {_ones(parts, 'device_upload_handed_on_ms', 2)}, "
                   f"after the G1 MSMs {_ones(parts, 'device_upload_handed_on_ms', 1)}; "
                   f"MSMs in turn {_ones(parts, 'device_msm_in_turn_ms')}, pairs {_pairs(parts)}")
    for f in sorted([*folder.glob("single-*.json"), *folder.glob("snap-*.json")]):
        try:
            d = json.loads(f.read_text())
        except ValueError:
            continue
        if d.get("timeline"):
            g = gaps_ms(d["timeline"])
            out.append(f"{f.name}: latency {d.get('latency_ms', 0) / 1e3:.2f} s; device gaps between partitions "
                       f"{sum(g):.0f} ms in all ({', '.join(f'{x:.0f}' for x in g)})")
    return "\n".join(out)


if __name__ == "__main__":
    print("\n\n".join(summary(Path(a)) for a in sys.argv[1:]))
