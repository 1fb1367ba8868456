"""The report's charts (matplotlib, Agg backend): titled, labelled with units, the same bytes for the same
runs.

cost_per_run.png     cost of every run by configuration (box + the runs as points; a distorted run hollow),
                     the headline mean with its 95% interval, the model's expectation, the cost of 60%
                     savings and the price ceiling
wall_time.png        time from the first launch to the last instance's end, by configuration
hybrid_timeline.png  one hybrid run: each attempt as a bar (spot / on-demand), interruptions marked
cumulative_cost.png  spend over time, every run, coloured by configuration
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from coordinator.plan.intervals import ci95
from reports.runs import CONFIGURATIONS, Run, RunsFolder
from reports.tables import SAVINGS_TARGET_PCT, trusted

COLOURS = {
    "on-demand": "#4c72b0",
    "spot-only": "#dd8452",
    "hybrid": "#55a868",
    "deadline": "#8172b3",
    "spot": "#dd8452",
}
STYLES = {"on-demand": "-", "spot-only": "--", "hybrid": "-.", "deadline": ":"}  # told apart without colour
DPI = 110
INTERRUPTED = ("interrupted", "lost")


def _save(figure: Figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=DPI, metadata={"Software": None})  # no version stamp: same runs, same bytes
    plt.close(figure)
    return path


def _by_config(folder: RunsFolder) -> list[tuple[str, list[Run]]]:
    return [(c, folder.of(c)) for c in CONFIGURATIONS if folder.of(c)]


def cost_per_run(folder: RunsFolder, path: Path) -> Path:
    """Every run (a distorted one hollow), each configuration's headline mean with its 95% interval, the
    model's expectation, and two lines: the cost of 60% savings and the price ceiling (the job at the
    spot price throughout, against the on-demand runs)."""
    groups = _by_config(folder)
    figure, axes = plt.subplots(figsize=(7, 4.2))
    data = [[r.cost_usd for r in runs] for _, runs in groups]
    axes.boxplot(data, tick_labels=[c for c, _ in groups], widths=0.5, showfliers=False)
    predictions = folder.expected.get("predictions_with_overheads") or folder.expected.get("predictions", {})
    for i, (config, runs) in enumerate(groups, start=1):
        xs = [i + (j - (len(runs) - 1) / 2) * 0.03 for j in range(len(runs))]
        colours = ["none" if r.distorted else COLOURS[config] for r in runs]
        axes.scatter(
            xs, [r.cost_usd for r in runs], facecolors=colours, edgecolors=COLOURS[config], zorder=3, s=22
        )
        low, high = ci95([r.cost_usd for r in trusted(runs)])
        middle = (low + high) / 2
        axes.errorbar(
            i + 0.3, middle, yerr=[[middle - low], [high - middle]], fmt="D", color="black", ms=4, capsize=3
        )
        if config in predictions:
            axes.scatter(
                i + 0.38,
                predictions[config]["mean_cost_usd"],
                marker="o",
                facecolors="none",
                edgecolors="black",
                s=30,
                zorder=3,
            )
    _savings_lines(folder, axes, len(groups))
    highest = max([c for values in data for c in values] + [p["mean_cost_usd"] for p in predictions.values()])
    axes.set_title("Cost per run by configuration (hollow: a distorted run)")
    axes.set_ylabel("cost per run (USD, simulated)")
    axes.set_ylim(0, highest * 1.3)  # an interval of two runs may reach further: it is cut at the top
    axes.legend(
        handles=[
            Line2D([], [], marker="D", color="black", linestyle="", label="mean, 95% interval"),
            Line2D([], [], marker="o", color="black", markerfacecolor="none", linestyle="", label="model"),
        ],
        loc="upper right",
        fontsize=8,
    )
    axes.grid(axis="y", alpha=0.3)
    return _save(figure, path)


def _savings_lines(folder: RunsFolder, axes: Axes, groups: int) -> None:
    on_demand = trusted(folder.of("on-demand"))
    if not on_demand:
        return
    mean = sum(r.cost_usd for r in on_demand) / len(on_demand)
    target = mean * (1 - SAVINGS_TARGET_PCT / 100)
    axes.axhline(target, color="grey", linestyle="--", linewidth=1)
    axes.annotate(f"{SAVINGS_TARGET_PCT:g}% savings", (0.5, target), color="grey", fontsize=8)
    rates = {a.market: a.rate_usd_per_hour for r in folder.runs for a in r.attempts}
    if "spot" in rates and "on-demand" in rates:
        ceiling = mean * rates["spot"] / rates["on-demand"]
        axes.axhline(ceiling, color=COLOURS["spot"], linestyle=":", linewidth=1)
        axes.annotate(
            "price ceiling (all spot)",
            (groups + 0.45, ceiling),
            color=COLOURS["spot"],
            fontsize=8,
            ha="right",
        )


def wall_time(folder: RunsFolder, path: Path) -> Path:
    groups = _by_config(folder)
    figure, axes = plt.subplots(figsize=(7, 4.2))
    data = [[r.cloud_seconds / 60 for r in runs] for _, runs in groups]
    axes.boxplot(data, tick_labels=[c for c, _ in groups], widths=0.5, showfliers=False)
    for i, (config, runs) in enumerate(groups, start=1):
        xs = [i + (j - (len(runs) - 1) / 2) * 0.03 for j in range(len(runs))]
        axes.scatter(xs, [r.cloud_seconds / 60 for r in runs], color=COLOURS[config], zorder=3, s=22)
    deadline = folder.expected.get("deadline_seconds")
    if deadline and folder.of("deadline"):
        axes.axhline(deadline / 60, color=COLOURS["deadline"], linestyle=":", linewidth=1.2)
        axes.annotate(
            f"deadline {deadline / 60:.1f} min", (0.5, deadline / 60), color=COLOURS["deadline"], fontsize=8
        )
    axes.set_title("Job time by configuration (the job's start to its end)")
    axes.set_ylabel("cloud minutes")
    axes.set_ylim(bottom=0)
    axes.grid(axis="y", alpha=0.3)
    return _save(figure, path)


def pick_timeline_run(folder: RunsFolder) -> Run | None:
    """The hybrid run with the most interruptions (ties: the first by name): the most to look at."""
    hybrids = folder.of("hybrid")
    return max(hybrids, key=lambda r: (r.summary.interruptions, -hybrids.index(r))) if hybrids else None


def hybrid_timeline(run: Run, path: Path) -> Path:
    start = min(a.launched_at for a in run.attempts)
    segments = sorted({a.segment_id for a in run.attempts}, reverse=True)
    figure, axes = plt.subplots(figsize=(9, 0.45 * len(segments) + 2.0))
    for attempt in run.attempts:
        y = segments.index(attempt.segment_id)
        left, width = (attempt.launched_at - start) / 60, (attempt.ended_at - attempt.launched_at) / 60
        axes.barh(
            y,
            width,
            left=left,
            height=0.6,
            color=COLOURS["spot" if attempt.market == "spot" else "on-demand"],
        )
        if attempt.end_reason in INTERRUPTED:
            axes.plot(left + width, y, marker="x", color="#c44e52", markersize=9, mew=2.2, zorder=3)
    axes.set_yticks(range(len(segments)), segments)
    axes.set_xlabel("cloud minutes since the first launch")
    axes.set_title(f"Timeline of {run.name}: spot attempts fall back to on-demand after an interruption")
    axes.legend(
        handles=[
            Patch(color=COLOURS["spot"], label="spot attempt"),
            Patch(color=COLOURS["on-demand"], label="on-demand attempt"),
            Line2D(
                [],
                [],
                marker="x",
                color="#c44e52",
                linestyle="none",
                mew=2.2,
                label="interrupted (notice or lost)",
            ),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    axes.grid(axis="x", alpha=0.3)
    return _save(figure, path)


def spend_curve(run: Run, points: int = 120) -> tuple[list[float], list[float]]:
    """Dollars spent by each moment (cloud minutes since the run's first launch), accrued per second of each
    attempt; the last point is the billed total (billing minimums included)."""
    start = min(a.launched_at for a in run.attempts)
    end = max(a.ended_at for a in run.attempts)
    times = [start + (end - start) * i / (points - 1) for i in range(points)]
    spent = [
        sum(a.rate_usd_per_hour * max(0.0, min(t, a.ended_at) - a.launched_at) / 3600 for a in run.attempts)
        for t in times
    ]
    spent[-1] = run.cost_usd
    return [(t - start) / 60 for t in times], spent


def cumulative_cost(folder: RunsFolder, path: Path) -> Path:
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for config, runs in _by_config(folder):
        for i, run in enumerate(runs):
            xs, ys = spend_curve(run)
            axes.plot(
                xs,
                ys,
                color=COLOURS[config],
                linestyle=STYLES[config],
                alpha=0.75,
                linewidth=1.3,
                label=config if i == 0 else None,
            )
    axes.set_title("Cumulative cost over time, every run")
    axes.set_xlabel("cloud minutes since the run's first launch")
    axes.set_ylabel("USD spent (simulated)")
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend()
    return _save(figure, path)


def draw_all(folder: RunsFolder, out_dir: Path) -> dict[str, Path]:
    charts = {
        "cost_per_run": cost_per_run(folder, out_dir / "cost_per_run.png"),
        "wall_time": wall_time(folder, out_dir / "wall_time.png"),
        "cumulative_cost": cumulative_cost(folder, out_dir / "cumulative_cost.png"),
    }
    timeline_run = pick_timeline_run(folder)
    if timeline_run is not None:
        charts["hybrid_timeline"] = hybrid_timeline(timeline_run, out_dir / "hybrid_timeline.png")
    return charts
