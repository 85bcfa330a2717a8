"""Run every Spectrum-X experiment on the twin; write a markdown table and PNG plots.

    python benchmarks/paper/run.py [--out bench_out/paper] [--scale 1.0] [--only 1 5 ...]

The table gives, per experiment and case, the paper's figure, the twin's, their ratio, whether
the twin's figure is an output of the simulation or follows from an input, whether it is within
10% of the paper's, and what it rests on or why it differs. Needs matplotlib for the plots
(`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.paper.experiments import ALL  # noqa: E402


def rows_of(r: dict) -> list[str]:
    """Markdown rows of one experiment's result."""
    out = []
    for case, twin in r["twin"].items():
        paper = r["paper"].get(case)
        ratio = "" if paper in (None, 0) else f"{twin / paper:.2f}"
        span = r.get("range", {}).get(case)  # the paper gives a range: (low, high)
        if paper is None:
            within = ""
        elif span is not None:
            within = "yes (in range)" if span[0] <= twin <= span[1] else "no"
        elif r.get("bound", {}).get(case) == "under":  # the paper gives an upper bound
            within = "yes (under)" if twin <= paper else "no"
        elif paper == 0:
            within = "yes" if abs(twin) <= 1.0 else "no"  # a change of 0%: within a point
        else:
            within = "yes" if abs(twin / paper - 1) <= 0.10 else "no"
        shown = "" if paper is None else (f"{span[0]:g}-{span[1]:g}" if span else f"{paper:g}")
        out.append(f"| {r['name']} | {case} | {shown} | {twin:.2f} | "
                   f"{ratio} | {r['kind'].get(case, '')} | {within} | {r['why'].get(case, '')} |")
    return out


def summary_of(r: dict) -> str:
    """One line: how many of the experiment's paper figures the twin meets, and as what."""
    cells = [row.split(" | ") for row in rows_of(r)]
    judged = [c for c in cells if c[2].strip()]  # a paper figure to compare with
    met = [c for c in judged if c[6].startswith("yes")]
    which = ", ".join(f"{c[1]} ({c[5]})" for c in met) or "none"
    return f"- {r['name']}: {len(met)} of {len(judged)} met: {which}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("bench_out/paper"))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", nargs="*", help="experiment numbers to run (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = ["| experiment | case | paper | twin | ratio | twin's figure is | within 10% | what it rests on, why it differs |",
            "|---|---|---|---|---|---|---|---|"]
    results = []
    for exp in ALL:
        num = exp.__name__[1]
        if args.only and num not in args.only:
            continue
        t = time.perf_counter()
        r = exp(args.scale)
        results.append(r)
        rows += rows_of(r)
        print(f"{r['name']}: paper {r['paper']} twin "
              f"{ {k: round(v, 2) for k, v in r['twin'].items()} } ({time.perf_counter() - t:.1f} s)",
              flush=True)
    summary = [f"Run: `python benchmarks/paper/run.py --scale {args.scale:g}`. Per experiment, the "
               f"paper's figures the twin meets (within 10%, in the paper's range or under its "
               f"bound) and what kind each met figure is:", ""]
    summary += [summary_of(r) for r in results]
    (args.out / "results.md").write_text("\n".join(summary + [""] + rows) + "\n")
    plot(results, args.out)
    print(f"wrote {args.out / 'results.md'} and the plots")


def _bars(ax, r: dict, cases: list[str], unit: str) -> None:
    """The paper's value beside the twin's, per case, each bar labelled with its value; where
    the paper gives a range, its bar spans it (error bar) and is labelled with it."""
    x = list(range(len(cases)))
    paper = [r["paper"].get(c, float("nan")) for c in cases]
    twin = [r["twin"][c] for c in cases]
    spans = [r.get("range", {}).get(c) for c in cases]
    err = [[0 if s is None else p - s[0] for p, s in zip(paper, spans, strict=True)],
           [0 if s is None else s[1] - p for p, s in zip(paper, spans, strict=True)]]
    bars = ax.bar([i - 0.2 for i in x], paper, 0.4, label="paper", yerr=err if any(spans) else None,
                  capsize=3)
    ax.bar_label(bars, labels=["" if v != v else (f"{s[0]:g}-{s[1]:g}" if s else f"{v:.4g}")
                               for v, s in zip(paper, spans, strict=True)], fontsize=7)
    bars = ax.bar([i + 0.2 for i in x], twin, 0.4, label="twin")
    ax.bar_label(bars, labels=[f"{v:.4g}" for v in twin], fontsize=7)
    ax.set_xticks(x, cases, fontsize=7)
    ax.set_ylabel(unit)
    ax.axhline(0, c="grey", lw=0.5)
    ax.legend(fontsize=7)


def plot(results: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for r in results:
        num = r["name"].split(".", 1)[0]
        if num == "6":
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
            ax = axes[0]
            for mode, (t, frac) in r["data"].items():
                if mode == "ports":
                    continue
                ax.plot(t * 1e3, frac * 100, drawstyle="steps-pre", label=f"{mode}: {r['twin'][mode]:.3g} ms")
            for mode, v in r["paper"].items():
                ax.axvline(10 + v, ls="--", lw=0.8, c="grey")
                ax.text(10 + v, 5, f"paper {mode}: {v:g} ms", rotation=90, fontsize=7, va="bottom")
            ax.set_xscale("log")
            ax.set_xlim(5, None)
            ax.set_xlabel("time (ms), plane 1 fails at 10 ms")
            ax.set_ylabel("transfers' goodput, % of line rate")
            ax.axhline(75, ls=":", c="grey")
            ax.legend(fontsize=7)
            ax.set_title("what the collective gets (in-order transfers)", fontsize=8)
            t, frac = r["data"]["ports"]
            axes[1].plot(t * 1e3, frac * 100, drawstyle="steps-pre")
            axes[1].axhline(75, ls=":", c="grey")
            axes[1].set_ylim(0, 105)
            axes[1].set_xlabel("time (ms), plane 1 fails at 10 ms")
            axes[1].set_ylabel("NIC ports' throughput, % of line rate")
            axes[1].set_title("what the NIC ports carry: the 3 planes left go on", fontsize=8)
            fig.suptitle(r["name"], fontsize=9)
        elif num == "5":
            # absolute values in their own panels: bandwidth (Gb/s), p99 latency (us), change (%)
            fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
            _bars(axes[0], r, ["bandwidth healthy", "bandwidth 10% down"], "Gb/s per host")
            _bars(axes[1], r, ["p99 latency healthy", "p99 latency 10% down", "full load: p99 healthy",
                               "full load: p99 10% down"], "us")
            _bars(axes[2], r, ["p99 latency change %", "full load: p99 change %"], "%")
            _bars(axes[3], r, ["p99 latency increase (us)", "p99 increase, random 10% (us)",
                               "full load: p99 increase (us)"], "us")
            for ax in axes[1:]:
                ax.tick_params(axis="x", labelrotation=15)
            fig.suptitle(r["name"] + " (75% load, and at line rate)", fontsize=9)
        elif num == "7":
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
            _bars(axes[0], r, ["10 ms", "100 ms", "300 ms"], "collective completion, change %")
            _bars(axes[1], r, ["100 ms / 10 ms", "300 ms / 10 ms"], "ratio of the penalties")
            axes[0].set_title("10 ms: the collective's length is chosen (input)", fontsize=8)
            axes[1].set_title("ratios: independent of the collective's length", fontsize=8)
            fig.suptitle(r["name"], fontsize=9)
        elif num == "2":
            fig, ax = plt.subplots(figsize=(9, 3.8))
            _bars(ax, r, list(r["twin"]), "us")
            ax.tick_params(axis="x", labelrotation=12)
            ax.set_title(r["name"], fontsize=8)
        else:
            fig, ax = plt.subplots(figsize=(6.5, 3.6))
            _bars(ax, r, list(r["twin"]), "")
            ax.set_title(r["name"], fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"experiment{num}.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main()
