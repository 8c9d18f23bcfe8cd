"""The outputs of ``qdqc bench``: the table on stdout and the PNG plot (the JSON is ``run_bench``'s dict)."""
from __future__ import annotations

import math
import sys

from . import machine_load
from .cases import FRAMEWORKS, LATENCY_ELEMENTS, VARIANTS

# Line styles by variant; colours are per series (variant and target), each series its own.
_STYLES = {"copy": "-", "oracle": ":", "tf": "-.", "tf-op": (0, (3, 1, 1, 1)), "torch": (0, (1, 1)), "torch-op": (0, (1, 2)), "api": "-", "device": (0, (4, 1))}
_TARGETLESS = ("copy", "oracle") + FRAMEWORKS
_ROOF_COLOR = "black"
_PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
            "tab:olive", "tab:cyan")


def _fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} us"


def format_table(res: dict) -> str:
    """The machine, the copy bandwidth, one line per (case, size, variant, target), and the per-call times."""
    lines = []
    m = res["machine"]
    bw = m.get("copy_gbps")
    lines.append(f"machine: {m.get('cpu', m['machine'])}, {m['cpus']} CPUs; numpy {m['numpy']}, "
                 f"IREE {m.get('iree_runtime', '?')}, TensorFlow {m.get('tensorflow') or 'not installed'}, "
                 f"PyTorch {m.get('torch') or 'not installed'}"
                 + (f" ({m['torch_threads']} threads)" if m.get("torch_threads") else ""))
    if bw:
        lines.append(f"copy bandwidth: {bw:.1f} GB/s (x.copy(), 2^{m['copy_gbps_at_log2n']} float32, read + write)")
    for t, why in res["config"].get("skipped_targets", {}).items():
        lines.append(f"skipped target {t}: {why}")
    hdr = (f"{'case':44s} {'log2n':>5s} {'variant':8s} {'target':7s} {'driver':10s} {'median':>11s} {'min':>10s} "
           f"{'p90/min':>7s} {'GB/s':>7s} {'x copy':>7s} {'exact':>5s}")
    lines += ["", hdr, "-" * len(hdr)]
    order = {v: i for i, v in enumerate(VARIANTS)}
    rows = sorted(res["results"], key=lambda r: (r["case"], r["log2n"], order.get(r["variant"], 9), r["target"]))
    prev = None
    for r in rows:
        if prev is not None and (r["case"], r["log2n"]) != prev:
            lines.append("")
        prev = (r["case"], r["log2n"])
        exact = "" if r["exact"] is None else ("yes" if r["exact"] else "NO")
        busy = "*" if (r.get("machine_load") or {}).get("busy") else " "
        spread = f"{r['p90_s'] / r['min_s']:7.2f}" if r.get("p90_s") and r.get("min_s") else f"{'-':>7s}"
        lines.append(f"{r['case']:44s} {r['log2n']:5d} {r['variant']:8s} {r['target']:7s} {r['driver'] or '-':10s} "
                     f"{_fmt_time(r['median_s']):>10s}{busy} {_fmt_time(r['min_s']):>10s} {spread} "
                     f"{r['gbps'] or 0:7.2f} {r['ratio_to_copy'] or 0:7.2f} {exact:>5s}")
    busy_cases = sorted({(r["case"], r["log2n"]) for r in rows if (r.get("machine_load") or {}).get("busy")})
    if busy_cases:
        worst = max((r["machine_load"]["others_cores"] or 0) + (r["machine_load"]["steal_cores"] or 0)
                    for r in rows if (r.get("machine_load") or {}).get("busy"))
        lines += ["", f"* timed while other processes (or the hypervisor's steal) used more than "
                      f"{machine_load.BUSY_CORES} of a core on average (up to {worst:.2f} here): "
                      f"{len(busy_cases)} case(s); their medians overstate, their minima are the kernel's"]
    lines += ["", *side_by_side(res)]
    if res.get("latency"):
        lines += ["", f"per-call time, {LATENCY_ELEMENTS} elements ({res['latency'][0]['case']}):"]
        for r in res["latency"]:
            lines.append(f"  {r['variant']:8s} {r['target']:7s} {r['median_us']:9.1f} us  (min {r['min_us']:.1f})")
    return "\n".join(lines)


def side_by_side(res: dict) -> list[str]:
    """Per case at its largest size: ours through the API on each target (and x a copy of its bytes), then
    TensorFlow and PyTorch where they ran, as times and as how many times faster ours is (same run)."""
    results = res["results"]
    targets = sorted({r["target"] for r in results if r["variant"] == "api"})
    fws = [v for v in FRAMEWORKS if any(r["variant"] == v for r in results)]
    if not targets:
        return []
    w = max([len(r["case"]) + 6 for r in results] + [20])
    hdr = f"{'case (largest size)':{w}s} " + " ".join(f"{'ours ' + t:>12s} {'x copy':>7s}" for t in targets) + \
        "".join(f" {v:>10s} {'ours faster':>11s}" for v in fws)
    lines = ["side by side (medians of one run; 'ours faster' = their time / ours on " + targets[0] + "):", hdr,
             "-" * len(hdr)]
    for case in dict.fromkeys(r["case"] for r in results):
        rows = [r for r in results if r["case"] == case]
        n = max(r["log2n"] for r in rows)
        at = {(r["variant"], r["target"]): r for r in rows if r["log2n"] == n}
        line = f"{case + f' 2^{n}':{w}s} "
        line += " ".join(f"{_fmt_time(at[('api', t)]['median_s']):>12s} {at[('api', t)]['ratio_to_copy'] or 0:7.2f}"
                         if ("api", t) in at else f"{'-':>12s} {'-':>7s}" for t in targets)
        ours = at.get(("api", targets[0]))
        for v in fws:
            theirs = at.get((v, "-"))
            if theirs is None or ours is None:
                line += f" {'-':>10s} {'-':>11s}"
            else:
                line += f" {_fmt_time(theirs['median_s']):>10s} {theirs['median_s'] / ours['median_s']:10.2f}x"
        lines.append(line)
    return lines


def _series(results: list[dict]) -> list[tuple[str, str]]:
    """Every (variant, target) present, in the table's order: copy first, then oracle/tf and per-target ones."""
    targets = sorted({r["target"] for r in results if r["target"] != "-"})
    present = {(r["variant"], r["target"]) for r in results}
    out = []
    for v in VARIANTS:
        for t in (["-"] if v in _TARGETLESS else targets):
            if (v, t) in present:
                out.append((v, t))
    return out


def _colors(series: list[tuple[str, str]], cmap) -> dict[tuple[str, str], object]:
    """One colour per series, none reused: black for the copy (the roof), then the palette (or ``cmap``)."""
    rest = [s for s in series if s[0] != "copy"]
    palette = list(_PALETTE) if len(rest) <= len(_PALETTE) else \
        [cmap(i / max(len(rest) - 1, 1)) for i in range(len(rest))]
    colors = dict(zip(rest, palette))
    colors.update({s: _ROOF_COLOR for s in series if s[0] == "copy"})
    return colors


def plot(res: dict, path: str) -> bool:
    """A PNG of GB/s against size, one panel per case. False (and a message) without matplotlib.

    The copy is drawn as the roof (a heavy line, the region above it shaded); every other series has a
    colour of its own, the same in every panel, and one legend sits right of the panels.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("qdqc bench: skipping the plot: matplotlib is not installed (pip install 'qdq-compiler[plot]')",
              file=sys.stderr)
        return False
    cases = list(dict.fromkeys(r["case"] for r in res["results"]))
    series = _series(res["results"])
    colors = _colors(series, matplotlib.colormaps["turbo"])
    ncol = 3 if len(cases) > 4 else max(1, len(cases))
    nrow = math.ceil(len(cases) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.6 * nrow), squeeze=False)
    handles = {}
    for ax, case in zip(axes.flat, cases):
        rows = [r for r in res["results"] if r["case"] == case]
        ax.set_yscale("log")
        roof = None
        for v, t in series:
            pts = sorted((r["log2n"], r["gbps"]) for r in rows if r["variant"] == v and r["target"] == t)
            if not pts:
                continue
            label = "copy (roof)" if v == "copy" else (v if t == "-" else f"{v} {t}")
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            if v == "copy":
                roof = (xs, ys)
                line, = ax.plot(xs, ys, color=colors[(v, t)], linestyle=_STYLES[v], linewidth=2.2, zorder=3,
                                marker="_", markersize=14, label=label)  # the marker: one size is a line too
            else:
                line, = ax.plot(xs, ys, color=colors[(v, t)], linestyle=_STYLES[v], marker="o", markersize=3,
                                zorder=2, label=label)
            handles.setdefault(label, line)
        if roof is not None:  # above the copy: faster than reading and writing the data once
            lo, hi = ax.get_ylim()
            ax.fill_between(roof[0], roof[1], hi, color=_ROOF_COLOR, alpha=0.07, linewidth=0, zorder=1)
            ax.set_ylim(lo, hi)
        ax.set_title(case, fontsize=9)
        ax.set_xlabel("log2(float32 elements)")
        ax.set_ylabel("GB/s")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    m = res["machine"]
    fig.suptitle(f"qdqc bench: {m.get('cpu', m['machine'])}, {m['cpus']} CPUs, copy "
                 f"{(m.get('copy_gbps') or 0):.1f} GB/s", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))  # room for the title
    fig.legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=8,
               frameon=False)
    fig.savefig(path, dpi=80, bbox_inches="tight")  # "tight": the canvas grows to hold the legend
    plt.close(fig)
    return True
