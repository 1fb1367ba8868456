"""The same quick matrix on a quiet host and beside a CPU hog: paced instances cost the same either way.

    python -m bench.simulate_load [--hogs 1] [--runs on-demand=3,spot-only=3,hybrid=3,deadline=3]
                                  [--pool planned|pinned] [--keep DIR]

Baseline: the matrix on this host as it is (run first). Then the same matrix, same seed, with `--hogs`
processes spinning on the CPU at normal priority for its whole length. Per configuration: mean cost and
job time both ways, the loaded/quiet ratio, the savings against the plan's fair baseline both ways (as
`simulate`'s bar line computes them), and the runs marked distorted (workers that fell behind their
instance type's pace). Goal: every ratio within 5% of 1, and no run distorted unless the host truly could
not keep up. `--pool`: the plan's cheapest pool (default, what `make simulate` runs first) or the pinned
us-east-1 default. Needs `make model` and `make data`; ~17 minutes here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

from coordinator.commands.simulate import QUICK, measured_costs, parse_runs
from coordinator.paths import SIMULATE_POOLS, default_dataset_path, default_model_dir
from coordinator.plan.bar import Fair, fair_savings
from coordinator.sim.matrix import simulate
from coordinator.sim.planned import fair_for, in_pool, plan_for
from coordinator.sim.settings import SimulatedRun, SimulationSettings


def _spin() -> None:
    while True:
        pass


def settings_for(out: Path, runs: dict[str, int], seed: int, pool: str) -> tuple[SimulationSettings, Fair]:
    """The quick matrix in `pool`, and the fair baseline its savings are measured against."""
    settings = SimulationSettings(
        out_dir=out,
        model=default_model_dir(),
        dataset=default_dataset_path(),
        runs=runs,
        rows=int(QUICK["rows"]),
        segments=int(QUICK["segments"]),
        seed=seed,
        mlflow=False,
    )
    plan = plan_for(settings)
    settings = in_pool(settings, plan, pool, out)
    return settings, fair_for(settings, plan)


def savings(results: list[SimulatedRun], fair: Fair) -> dict[str, float]:
    """Each configuration's mean savings against the fair baseline (the bar line's figure), in %."""
    judged = fair_savings(fair, measured_costs(results)[0])
    return {c: 100 * s.mean for c, s in judged[1].items()} if judged else {}


def summary(results: list[SimulatedRun]) -> dict[str, tuple[float, float, int, str]]:
    by: dict[str, list[SimulatedRun]] = {}
    for run in results:
        by.setdefault(run.configuration, []).append(run)
    return {
        c: (
            statistics.fmean(r.cost_usd for r in rs),
            statistics.fmean(r.job_seconds for r in rs) / 60,
            sum(bool(r.pace.get("distorted")) for r in rs),
            _deadlines(rs),
        )
        for c, rs in by.items()
    }


def _deadlines(runs: list[SimulatedRun]) -> str:
    verdicts = [json.loads((r.result.run_dir / "run.json").read_text()).get("deadline_met") for r in runs]
    had = [v for v in verdicts if v is not None]
    return f"{sum(had)}/{len(had)}" if had else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hogs", type=int, default=1)
    parser.add_argument(
        "--runs", type=parse_runs, default=parse_runs("on-demand=3,spot-only=3,hybrid=3,deadline=3")
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", choices=SIMULATE_POOLS, default="planned")
    parser.add_argument("--keep", type=Path, help="keep both matrices' run folders under this folder")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        tmp = Path(args.keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="spotbatch-load-")))
        # the same folder name both times: job and attempt ids, and so every seeded draw (boots, reclaims),
        # are the same in both matrices; only the host differs
        quiet_settings, fair = settings_for(tmp / "quiet" / "simulate-load", args.runs, args.seed, args.pool)
        loaded_settings, _ = settings_for(tmp / "loaded" / "simulate-load", args.runs, args.seed, args.pool)
        started = time.monotonic()
        quiet_runs = simulate(quiet_settings)
        quiet_seconds = time.monotonic() - started
        hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.hogs)]
        for hog in hogs:
            hog.start()
        try:
            started = time.monotonic()
            loaded_runs = simulate(loaded_settings)
            loaded_seconds = time.monotonic() - started
        finally:
            for hog in hogs:
                hog.terminate()
        # read while the run folders exist (a temporary folder goes at the end of this block)
        figures = (
            summary(quiet_runs),
            summary(loaded_runs),
            savings(quiet_runs, fair),
            savings(loaded_runs, fair),
        )
    print(
        f"{args.pool} pool {quiet_settings.region} {quiet_settings.instance_type}, seed {args.seed}; quiet: "
        f"{quiet_seconds:.0f} s wall; beside {args.hogs} CPU hog(s): {loaded_seconds:.0f} s wall; savings "
        f"against the fair baseline ({fair.baseline})"
    )
    print_table(*figures)


def print_table(
    quiet: dict[str, tuple[float, float, int, str]],
    loaded: dict[str, tuple[float, float, int, str]],
    saved_quiet: dict[str, float],
    saved_loaded: dict[str, float],
) -> None:
    print(
        f"{'configuration':<14} {'cost quiet':>11} {'cost hog':>11} {'ratio':>6} {'min quiet':>10} "
        f"{'min hog':>8} {'ratio':>6} {'saved quiet':>12} {'saved hog':>10} {'ratio':>6} "
        f"{'distorted quiet/hog':>20} {'deadlines quiet/hog':>20}"
    )
    for config, (cost, minutes, distorted, met) in quiet.items():
        cost_hog, minutes_hog, distorted_hog, met_hog = loaded[config]
        if config in saved_quiet and config in saved_loaded:
            a, b = saved_quiet[config], saved_loaded[config]
            saved = f"{a:11.1f}% {b:9.1f}% {b / a if a else float('nan'):6.3f}"
        else:
            saved = f"{'-':>12} {'-':>10} {'-':>6}"
        print(
            f"{config:<14} {cost:11.4f} {cost_hog:11.4f} {cost_hog / cost:6.3f} {minutes:10.1f} "
            f"{minutes_hog:8.1f} {minutes_hog / minutes:6.3f} {saved} {f'{distorted}/{distorted_hog}':>20} "
            f"{f'{met} / {met_hog}':>20}"
        )


if __name__ == "__main__":
    main()
