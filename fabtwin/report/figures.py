"""The report's pictures, drawn with matplotlib's Agg backend into PNG bytes.

- `heatmap`: per plane, link utilization (the busier direction) leaf x spine (and agg x core in
  a 3-tier fabric) at one window, the scale stopping at a round share above nearly every link's
  load (an arrow on the colour bar when under 100%); a red cross marks a link that was down during the window, an orange box one that was
  degraded (errors, or the root of a link_degraded incident); grey cells have no cable.
- `timeline`: the load of the ports an incident involves around it (observed solid, the twin's
  expected dashed when a replay stored it), the incident window shaded, down times in red, and
  under it the counter that shows the fault (pauses, ECN marks, errors) when there is one.
"""

from __future__ import annotations

import io
from datetime import datetime

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates  # noqa: E402
import matplotlib.patheffects as patheffects  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from fabtwin.units import gbps  # noqa: E402

DPI = 100
DOWN = "#d62728"
DEGRADED = "#ff7f0e"
NO_CABLE = "#e6e6e6"


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def matrix(snap: pl.DataFrame, order: dict[str, int]) -> tuple[list[str], list[str], np.ndarray, np.ndarray,
                                                            np.ndarray]:
    """Rows (lower devices), columns (upper devices), utilization, down and degraded masks of
    one plane's tier of `snap`; parallel cables fold into one cell (busiest, down if any)."""
    cells = snap.group_by("dev_lo", "dev_hi").agg(
        pl.col("util").max(), (pl.col("down_fraction") > 0).any().alias("down"),
        pl.col("degraded").any())
    rows = sorted(cells["dev_lo"].unique().to_list(), key=lambda d: order.get(d, 0))
    cols = sorted(cells["dev_hi"].unique().to_list(), key=lambda d: order.get(d, 0))
    ri = cells["dev_lo"].replace_strict(rows, list(range(len(rows)))).to_numpy()
    ci = cells["dev_hi"].replace_strict(cols, list(range(len(cols)))).to_numpy()
    util = np.full((len(rows), len(cols)), np.nan)
    down = np.zeros(util.shape, dtype=bool)
    degraded = np.zeros(util.shape, dtype=bool)
    util[ri, ci] = cells["util"].fill_null(np.nan).to_numpy()
    down[ri, ci] = cells["down"].to_numpy()
    degraded[ri, ci] = cells["degraded"].fill_null(False).to_numpy()
    return rows, cols, util, down, degraded


def _ticks(ax, labels: list[str], axis: str, flagged: dict[int, str]) -> None:
    """At most ~32 labels, plus every flagged row or column (in its mark's colour), so the name
    of a down or degraded link's switch is always readable."""
    step = max(1, int(np.ceil(len(labels) / 32)))
    idx = [i for i in range(0, len(labels), step) if all(abs(i - f) > step // 2 for f in flagged)]
    idx = sorted(set(idx) | set(flagged))
    if axis == "x":
        ax.set_xticks(idx, [labels[i] for i in idx], rotation=90, fontsize=7)
        ticks = ax.get_xticklabels()
    else:
        ax.set_yticks(idx, [labels[i] for i in idx], fontsize=7)
        ticks = ax.get_yticklabels()
    for i, t in zip(idx, ticks, strict=True):
        if i in flagged:
            t.set_color(flagged[i])
            t.set_fontweight("bold")


def heatmap(snap: pl.DataFrame, order: dict[str, int], planes: list[str], title: str,
            tier_names: dict[int, tuple[str, str]]) -> Figure:
    """One panel per plane and switch tier of the utilization snapshot `snap` (data.Windows.snapshot)."""
    panels = [(p, t) for p in planes for t in sorted(snap.filter(pl.col("plane") == p)["tier"].unique())]
    shapes = []
    for p, t in panels:
        part = snap.filter((pl.col("plane") == p) & (pl.col("tier") == t))
        shapes.append((p, t, matrix(part, order)))
    n_tiers = len({t for _, t in panels})
    per_row = n_tiers if n_tiers > 1 else (min(len(shapes), 4) or 1)  # a 3-tier plane per row
    n_rows = int(np.ceil(len(shapes) / per_row))
    h = max((len(m[0]) for _, _, m in shapes), default=8)
    w = max((len(m[1]) for _, _, m in shapes), default=8)
    cell = 0.09 if max(h, w) > 40 else 0.28
    pw, ph = max(3.2, 1.8 + w * cell), max(2.6, 1.4 + h * cell)
    fig, axes = plt.subplots(n_rows, per_row, figsize=(max(7.0, pw * per_row + 1.0), ph * n_rows + 0.6),
                             squeeze=False, layout="constrained")
    cmap = matplotlib.colormaps["Blues"].with_extremes(bad=NO_CABLE)
    # a lightly loaded fabric on a 0-100% scale is a blank picture: the scale stops at the
    # smallest round share above nearly every link's load
    p99 = snap.select(pl.col("util").fill_nan(None).quantile(0.99)).item() or 0.0
    vmax = next(v for v in (0.05, 0.1, 0.2, 0.5, 1.0) if v >= min(p99, 1.0))
    image = None
    for ax, (plane, tier, (rows, cols, util, down, degraded)) in zip(axes.flat, shapes, strict=False):
        image = ax.imshow(np.ma.masked_invalid(util), cmap=cmap, vmin=0.0, vmax=vmax,
                          aspect="auto", interpolation="nearest")
        # a mark stays visible when cells are a few pixels wide: bigger than the cell, haloed
        marker = max(70.0, min(120.0, (72 * cell) ** 2 * 0.8))
        halo = [patheffects.withStroke(linewidth=4, foreground="white")]
        dy, dx = np.nonzero(degraded)
        ax.scatter(dx, dy, s=marker * 1.6, marker="s", facecolors="none", edgecolors=DEGRADED,
                   linewidths=2.0, path_effects=halo)
        ry, rx = np.nonzero(down)
        ax.scatter(rx, ry, s=marker, marker="x", color=DOWN, linewidths=2.5, path_effects=halo)
        rows_flagged = {**{int(i): DEGRADED for i in dy}, **{int(i): DOWN for i in ry}}
        cols_flagged = {**{int(i): DEGRADED for i in dx}, **{int(i): DOWN for i in rx}}
        lo, hi = tier_names.get(int(tier), ("lower", "upper"))
        ax.set_title(f"{plane}: {lo} x {hi}  ({len(rx)} down, {len(dx)} degraded)", fontsize=9)
        ax.set_xlabel(hi, fontsize=8)
        ax.set_ylabel(lo, fontsize=8)
        _ticks(ax, cols, "x", cols_flagged)
        _ticks(ax, rows, "y", rows_flagged)
    for ax in list(axes.flat)[len(shapes):]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, extend="max" if vmax < 1.0 else "neither",
                     label="utilization",
                     format=matplotlib.ticker.PercentFormatter(1.0))
    fig.legend(handles=[
        Line2D([], [], marker="x", color=DOWN, linestyle="none", markersize=8, markeredgewidth=2,
               label="down (some or all of the window)"),
        Line2D([], [], marker="s", markerfacecolor="none", markeredgecolor=DEGRADED, linestyle="none",
               markersize=9, markeredgewidth=1.5, label="degraded (errors)"),
        Patch(facecolor=NO_CABLE, label="no cable / no data")],
        loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    return fig


def timeline(title: str, rates: pl.DataFrame, ports: list[str], roots: set[str],
             window: tuple[datetime, datetime], downs: list[tuple[datetime, datetime]],
             expected: pl.DataFrame | None, signal: tuple[str, str] | None) -> Figure:
    """Observed tx load of `ports` over time (Gb/s), expected dashed, the incident shaded."""
    two = signal is not None
    fig, axes = plt.subplots(2 if two else 1, 1, figsize=(10, 5.6 if two else 3.8), sharex=True,
                             squeeze=False, layout="constrained",
                             height_ratios=[2, 1] if two else [1])
    load_ax = axes[0, 0]
    colors = matplotlib.colormaps["tab10"].colors
    by_port = {k[0]: g for k, g in rates.group_by("port")}
    for i, port in enumerate(ports):
        g = by_port.get(port)
        if g is None:
            continue
        color = colors[i % len(colors)]
        bold = port in roots
        load_ax.plot(g["ts"].to_list(), gbps(g["tx_bytes_per_s"]).to_numpy(), color=color,
                     linewidth=2.2 if bold else 1.2, marker="o", markersize=2.5,
                     label=f"{port} tx" + (" (root)" if bold else ""))
        if expected is not None and expected.height:
            e = expected.filter(pl.col("port") == port)
            if e.height:
                xs = [t for a, b in zip(e["window_start"], e["window_end"], strict=True) for t in (a, b)]
                ys = np.repeat(gbps(e["expected_tx_bytes_per_s"]).to_numpy(), 2)
                load_ax.plot(xs, ys, color=color, linestyle="--", linewidth=1.2)
        if two:
            axes[1, 0].plot(g["ts"].to_list(), g[signal[0]].to_numpy(), color=color,
                            linewidth=2.0 if bold else 1.0, marker="o", markersize=2.5)
    for ax in axes.flat:
        ax.axvspan(window[0], window[1], color="#f2c14e", alpha=0.18, zorder=0)
        for a, b in downs:
            ax.axvspan(a, b, color=DOWN, alpha=0.18, hatch="//", zorder=0)
        ax.grid(alpha=0.3)
    load_ax.set_ylabel("tx load (Gb/s)")
    if two:
        axes[1, 0].set_ylabel(signal[1])
    extra = [Patch(facecolor="#f2c14e", alpha=0.4, label="incident window")]
    if downs:
        extra.append(Patch(facecolor=DOWN, alpha=0.3, hatch="//", label="link down"))
    if expected is not None and expected.height:
        extra.append(Line2D([], [], color="grey", linestyle="--", label="twin's expected"))
    handles, _ = load_ax.get_legend_handles_labels()
    load_ax.legend(handles=handles + extra, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                   frameon=False)
    axes[-1, 0].xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    axes[-1, 0].set_xlabel("time (UTC)")
    fig.suptitle(title, fontsize=10)
    return fig
