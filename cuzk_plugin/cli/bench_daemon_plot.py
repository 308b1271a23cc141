"""PNG timeline of a `cuzk-bench batch`: one row per worker (synthesis processes, GPU worker
slots), one bar per partition stage, coloured by stage. Needs matplotlib (``pip install
cuzk-plugin[plot]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cuzk_plugin.server.batch import ProofRecord

STAGE_COLORS = {"synthesis": "#4c72b0", "srs": "#dd8452", "gpu_start": "#55a868", "gpu_finish": "#8fd19e",
                "verify": "#c44e52", "queue": "#cccccc", "upload_wait": "#f2f2f2", "upload": "#937860",
                "gpu_queue": "#e5e5e5",
                "abc_alloc": "#b07aa1", "abc": "#da8bc3", "h": "#8172b3", "msm_g1": "#64b5cd", "msm_g2_wait": "#ccb974", "release": "#9c755f",
                "assemble": "#555555"}
#: The stages of a GPU call (inside its gpu_finish): drawn on a row of their own under the lane's.
DEVICE_STAGES = {"upload_wait", "upload", "gpu_queue", "abc_alloc", "abc", "h", "msm_g1", "msm_g2_wait", "release", "assemble"}


def job_origins_ms(records: list[ProofRecord]) -> list[float]:
    """Where each job's timeline starts in batch time. A timeline counts from the daemon's
    receipt of the request, which can lag the client's send by seconds (a large body, a busy
    daemon), so the daemon's own submission clock places the jobs; the batch's zero is the
    earliest send, seen on that clock. Without it (an older daemon), the client's send times."""
    if not records or any(r.submitted_unix_ms <= 0 for r in records):
        return [r.submit_s * 1000.0 for r in records]
    zero = min(r.submitted_unix_ms - r.submit_s * 1000.0 for r in records)
    return [r.submitted_unix_ms - zero for r in records]


def timeline_bars(records: list[ProofRecord]) -> dict[str, list[tuple[float, float, str, str]]]:
    """Row name -> [(start_ms, duration_ms, stage, label)] in batch time (:func:`job_origins_ms`)."""
    rows: dict[str, list[tuple[float, float, str, str]]] = {}
    for r, base in zip(records, job_origins_ms(records), strict=True):
        for e in r.timeline:
            if e["stage"] == "queue":
                continue
            row = e["lane"] if e["lane"] and e["lane"] != "host" else f"host ({e['stage']})"
            if e["stage"] in DEVICE_STAGES:
                row += " stages"
            label = f"{r.job_id.rsplit('-', 1)[-1]}.{e['partition']}" if e["partition"] >= 0 else r.job_id.rsplit("-", 1)[-1]
            rows.setdefault(row, []).append((base + e["start_ms"], max(0.5, e["end_ms"] - e["start_ms"]), e["stage"], label))
    return rows


def plot_timeline(records: list[ProofRecord], path: str, title: str = "") -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as exc:
        raise SystemExit(f"--plot needs matplotlib: pip install 'cuzk-plugin[plot]' ({exc})") from None
    rows = timeline_bars(records)
    names = sorted(rows, key=lambda n: (not n.startswith("synth"), n))
    fig, ax = plt.subplots(figsize=(12, 1 + 0.45 * len(names)))
    for y, name in enumerate(names):
        bars = rows[name]
        ax.broken_barh([(s, d) for s, d, _, _ in bars], (y - 0.4, 0.8),
                       facecolors=[STAGE_COLORS.get(st, "#999999") for _, _, st, _ in bars], edgecolor="white", linewidth=0.3)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("ms since the batch started")
    ax.set_title(title or "cuzk batch timeline")
    ax.legend(handles=[Patch(color=c, label=s) for s, c in STAGE_COLORS.items() if s != "queue"], loc="upper right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
