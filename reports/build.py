"""`comparison_report.md` (+ PNG charts beside it) and a self-contained `comparison_report.html`.

Both are rendered from one list of blocks (heading, paragraph, list, table, image, code), so they say the
same thing. Nothing in them depends on when the report was built: the same runs give the same bytes.

Usage::

    paths = build_report(Path("runs/simulate-20261202T161253Z"), Path("reports/out"))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coordinator.errors import ReportError
from coordinator.paths import SIMULATE_POOLS
from reports.bar_blocks import bar_blocks, pool_label
from reports.blocks import Block, money
from reports.charts import draw_all, pick_timeline_run
from reports.distorted import with_distorted
from reports.explain import first_principles_blocks, prediction_blocks
from reports.render import to_html, to_markdown
from reports.runs import RunsFolder, load_runs, pool_folders
from reports.tables import RELIABILITY_TARGET_PCT, SAVINGS_TARGET_PCT, ConfigRow, conclusions, config_rows

STATE_DIAGRAM = """PENDING -> LAUNCHING -> RUNNING -> DONE
             |            |-> DRAINING (notice) -> INTERRUPTED -> LAUNCHING (policy picks market)
             |            |-> LOST (no heartbeat / instance gone) -> INTERRUPTED
             |-> FAILED_LAUNCH (capacity, budget) -> policy decides: retry, fall back, or FAILED"""


def results_table(rows: list[ConfigRow]) -> Block:
    header = (
        "configuration",
        "runs",
        "time mean / median / p90 (cloud min)",
        "cost per run mean (95% interval of the mean; sd; min-max)",
        "cost per 1,000 rows",
        "interruptions per run",
        "rows redone",
        "segments done / total",
        "reliability (rows exactly once)",
        "savings vs on-demand runs",
        "savings vs own work at on-demand price",
        "deadlines met",
        "worker CPU avg / memory max",
    )
    body = tuple(
        (
            r.configuration,
            str(r.runs),
            f"{r.minutes_mean:.1f} / {r.minutes_median:.1f} / {r.minutes_p90:.1f}",
            f"{money(r.cost_mean)} (95%: {money(r.cost_ci95[0])}-{money(r.cost_ci95[1])}; sd "
            f"{money(r.cost_stdev)}; {money(r.cost_min)}-{money(r.cost_max)})",
            money(r.cost_per_1000_rows),
            f"{r.interruptions_per_run:.1f}",
            f"{r.rows_redone:,}",
            f"{r.segments_done} / {r.segments_total}",
            f"{r.reliability_pct:.2f}% ({r.rows_once:,}/{r.rows_total:,})",
            "baseline"
            if r.configuration == "on-demand"
            else (f"{r.savings_pct:.1f}%" if r.savings_pct is not None else "n/a"),
            f"{r.own_work_savings_pct:.1f}%",
            f"{r.deadlines_met} / {r.deadlines_total}" if r.deadlines_total else "-",
            f"{r.cpu_percent:.0f}% / {r.memory_mb or 0:,.0f} MB" if r.cpu_percent is not None else "not read",
        )
        for r in rows
    )
    return Block("table", rows=(header, *body))


def _prices(folder: RunsFolder) -> list[str]:
    seen: dict[tuple[str, str, float], str] = {}
    for run in folder.runs:
        for a in run.attempts:
            seen.setdefault((a.instance_type, a.market, a.rate_usd_per_hour), a.price_source)
    return [f"{t} {m}: ${rate:g}/h ({source})" for (t, m, rate), source in sorted(seen.items())]


def blocks(pools: list[tuple[str, RunsFolder]], charts: dict[str, Path]) -> list[Block]:
    """The report on a runs folder's matrices (`pools`: one, or the planned pool's and the pinned one's):
    the bar for each, each one's results; the rest (predictions, theory, charts) for the first."""
    (name, folder), others = pools[0], pools[1:]
    rows = config_rows(folder)
    out = [*_introduction(folder), *bar_blocks(pools)]
    out += [*_results(rows, pool_label(name, folder) if others else ""), *with_distorted(folder, rows)]
    for other_name, other in others:
        other_rows = config_rows(other)
        title = pool_label(other_name, other)
        out += [
            Block("heading", f"Results: {title}"),
            results_table(other_rows),
            *with_distorted(other, other_rows),
        ]
    if others:
        out.append(Block("paragraph", f"Below: the {pool_label(name, folder)} only."))
    out += prediction_blocks(folder)
    out += [*first_principles_blocks(folder, rows), *_charts(folder, charts)]
    out += [
        Block("heading", "Conclusions"),
        Block("bullets", items=tuple(conclusions(rows, folder.settings).lines)),
        *_caveats(folder),
        *_provenance(folder),
    ]
    if folder.missing:
        out += [Block("heading", "Missing or partial runs"), Block("bullets", items=tuple(folder.missing))]
    return out


def _introduction(folder: RunsFolder) -> list[Block]:
    s = folder.settings
    scale = s.get("time_scale", 1)
    return [
        Block("heading", f"spotbatch: {_names(folder)} compared", level=1),
        Block(
            "paragraph",
            f"Runs folder `{_shown(folder.path)}`: {len(folder.runs)} runs of {s.get('rows')} rows on "
            f"{s.get('segments')} instances each; cloud time runs {scale:g}x the wall clock (all times and "
            f"bills below are in cloud time). Interruption model: {s.get('interruption_model')}.",
        ),
        Block("heading", "How the hybrid pipeline works"),
        Block(
            "paragraph",
            "The coordinator splits the dataset into segments and launches one worker instance "
            "per segment from Terraform launch templates: in the hybrid configuration about 90% of segments "
            "start on spot and the rest on on-demand. Workers write output parts and a checkpoint every few "
            "batches and a heartbeat every second; on a spot notice a worker finishes its batch, checkpoints "
            "and stops. The coordinator sees the draining heartbeat, a stale heartbeat or the instance gone, "
            "and relaunches the segment on on-demand from its checkpoint. At the end the parts are merged "
            "and every input row must appear exactly once; every attempt is priced by the EC2 billing rule.",
        ),
        Block("code", STATE_DIAGRAM),
    ]


def _shown(path: Path) -> str:
    """A pool's matrix by its runs folder and pool (`simulate-<time>/planned`), a lone matrix by its name."""
    return f"{path.parent.name}/{path.name}" if path.name in SIMULATE_POOLS else path.name


def _names(folder: RunsFolder) -> str:
    present = [c for c in ("on-demand", "spot-only", "hybrid", "deadline") if folder.of(c)]
    return ", ".join(present[:-1]) + f" and {present[-1]}" if len(present) > 1 else present[0]


def _results(rows: list[ConfigRow], pool: str) -> list[Block]:
    return [
        Block("heading", f"Results: {pool}" if pool else "Results"),
        results_table(rows),
        Block(
            "paragraph",
            "Savings vs on-demand runs = (cost_od - cost_x) / cost_od x 100%, with cost_od the mean cost of "
            "the on-demand runs (MLflow: `savings_vs_on_demand_runs_pct`). Savings vs own work = each run "
            "against its own useful hours at the on-demand price, averaged (MLflow: "
            "`savings_vs_own_work_on_demand_pct`): it leaves out the boots an on-demand run also pays, so "
            "it reads lower. Reliability = rows predicted exactly once / rows asked for. Job time: the "
            "job's start to its end (`run.json`'s `cloud_seconds`, the figure deadlines are judged on).",
        ),
    ]


def _charts(folder: RunsFolder, charts: dict[str, Path]) -> list[Block]:
    out = [
        Block("heading", "Charts"),
        Block("image", "Cost per run by configuration", items=(charts["cost_per_run"].name,)),
        Block("image", "Job time by configuration", items=(charts["wall_time"].name,)),
    ]
    timeline = pick_timeline_run(folder)
    if "hybrid_timeline" in charts and timeline is not None:
        out.append(Block("image", f"Timeline of {timeline.name}", items=(charts["hybrid_timeline"].name,)))
    out.append(Block("image", "Cumulative cost over time", items=(charts["cumulative_cost"].name,)))
    return out


def _caveats(folder: RunsFolder) -> list[Block]:
    s = folder.settings
    scale = s.get("time_scale", 1)
    return [
        Block("heading", "Caveats"),
        Block(
            "bullets",
            items=(
                f"Simulated time: cloud time ran {scale:g}x the wall clock and ten workers shared 2 CPU "
                "cores, so a segment's minutes stand for a GPU instance's; inference, checkpoints and "
                "interruptions were real.",
                f"Interruptions came from a model ({s.get('interruption_model')}), not from the market; "
                "real spot capacity for GPUs is scarcer and burstier; `spotbatch simulate --trace` replays a "
                "recorded zone instead.",
                "Prices: " + "; ".join(_prices(folder)) + ". Refresh them before trusting the dollars.",
                "Short jobs: every relaunch pays a boot and a model load (60 s minimum billing); for jobs "
                "of a few minutes spot may not pay for its interruptions.",
                "Real-time work: interruptions add minutes of delay; use on-demand where latency matters.",
            ),
        ),
    ]


def _provenance(folder: RunsFolder) -> list[Block]:
    s = folder.settings
    keys = ("seed", "time_scale", "interruption_probability", "interruption_interval", "rows", "segments")
    flags = " ".join(f"--{k.replace('_', '-')} {s[k]}" for k in keys if k in s)
    return [
        Block("heading", "How this report was produced"),
        Block(
            "code",
            f"make simulate   # or: .venv/bin/spotbatch simulate {flags}\n"
            f"make report     # .venv/bin/spotbatch report --runs {folder.path}",
        ),
        Block(
            "paragraph",
            "Parameters: " + ", ".join(f"{k} = {s[k]}" for k in sorted(s) if k not in ("result",)),
        ),
    ]


@dataclass(frozen=True, slots=True)
class ReportPaths:
    markdown: Path
    html: Path
    charts: dict[str, Path]


def build_report(runs_folder: Path, out_dir: Path) -> ReportPaths:
    """The report on `runs_folder`: one matrix, or a `simulate` folder of one matrix per pool."""
    found = pool_folders(runs_folder)
    if not found:
        raise ReportError(
            f"{runs_folder}: no simulation.json, nor a planned/ or pinned/ matrix in it; is this a runs "
            "folder from `make simulate`?"
        )
    pools = [(name, load_runs(path)) for name, path in found]
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = draw_all(pools[0][1], out_dir)
    items = blocks(pools, charts)
    markdown = out_dir / "comparison_report.md"
    markdown.write_text(to_markdown(items), encoding="utf-8")
    page = out_dir / "comparison_report.html"
    page.write_text(to_html(items, out_dir), encoding="utf-8")
    return ReportPaths(markdown, page, charts)


__all__ = ["RELIABILITY_TARGET_PCT", "SAVINGS_TARGET_PCT", "build_report"]
