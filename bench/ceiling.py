"""The budget ceiling against actual spend, with workers slower than planned and workers that stall.

    python -m bench.ceiling [--share 1.25] [--runs spot-only,on-demand] [--stall-share 0.3] [--keep DIR]

A launch reserves its estimate with the budget guard; an attempt that runs past it (a slow host, a stalled
worker that still beats) used to pass the ceiling though every reservation fitted ($0.0821 spent under a
$0.07 ceiling). The spend watch (`coordinator/job/loop/spend_watch.py`) grows a running attempt's reservation
before it outruns it and stops the attempt when the guard will hold no more.

Every run is the quick job of `make simulate` on the embedded AWS (moto + the stack), with real workers
paced by the simulator and its random interruptions. First a calibration run: on-demand, workers at their
profile's speed, no ceiling to speak of; its actual cost C sets every other run's ceiling at `--share` x C,
enough for the job as planned. Then, for each scenario (steady workers; a host 1.6x slower than the profile
the coordinator plans with; `--stall-share` of attempts stalled for 15 cloud minutes a third into their
segment, beating all the while) and each configuration, two runs under that ceiling, each with its own
spend log:

- baseline: the launch reservations alone (the watch's check replaced by a no-op in this process: the
  guard as it was before the watch);
- watch: the coordinator as it ships.

Printed: each run's actual spend (the spend log's actuals), its ratio to the ceiling, rows done, and the
worst ratio of each mode. Goal: the watch's worst ratio at most 1.00; the baseline shows what it prevents.
Needs `make model`; about 15 minutes here. A ratio is a ratio of simulated dollars, which the pace fixes:
it does not depend on how busy the host is (runs whose workers fell behind their pace are marked).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from unittest import mock

from coordinator.commands.simulate import QUICK
from coordinator.cost.budget import CEILING_ENV, BudgetGuard
from coordinator.errors import SpotbatchError
from coordinator.job.loop import SpendWatch
from coordinator.paths import default_dataset_path, default_model_dir
from coordinator.sim.emulator_stack import SIMULATOR_BUCKET, emulator_infrastructure
from coordinator.sim.matrix import open_lab
from coordinator.sim.one_run import Lab, one_run
from coordinator.sim.settings import SimulationSettings
from coordinator.stack.deployment import StackSettings

SCENARIOS = {"steady": {}, "slow host": {"slowdown": 1.6}, "stalled": {"stall_seconds": 900.0}}
MODES = ("baseline", "watch")


@dataclass(frozen=True, slots=True)
class Measured:
    scenario: str
    configuration: str
    mode: str
    ceiling: float
    spent: float
    rows_done: str
    distorted: bool

    @property
    def ratio(self) -> float:
        return self.spent / self.ceiling


@contextlib.contextmanager
def lab_for(settings: SimulationSettings) -> Iterator[Lab]:
    """The emulator and the stack once, shared by every run (each run gets its own guard)."""
    stack = StackSettings(bucket_name=SIMULATOR_BUCKET, instance_type=settings.instance_type)
    state = settings.out_dir / "terraform"
    with (
        emulator_infrastructure(state, settings=stack, time_scale=settings.time_scale) as infra,
        open_lab(settings, infra, BudgetGuard(1e9, settings.out_dir / "unused.jsonl")) as lab,
    ):
        yield lab


def measure(lab: Lab, name: str, config: str, ceiling: float, *, watch: bool) -> tuple[float, str, bool]:
    """One run under `ceiling` with its own spend log: (actual spend, rows done of the job, distorted)."""
    guard = BudgetGuard(ceiling, lab.settings.out_dir / name / "spend_log.jsonl")
    run_lab = replace(lab, guard=guard)
    with contextlib.ExitStack() as stack:
        if not watch:
            stack.enter_context(mock.patch.object(SpendWatch, "check", lambda self: None))
        try:
            run = one_run(run_lab, name, config, on_cycle=None)
        except SpotbatchError as error:  # what a guard refusal or a stop ends in is still measured below
            print(f"  {name}: {type(error).__name__}: {str(error)[:160]}")
            return guard.state().spent, "-", False
    outcome = run.result.outcome
    done = f"{outcome.segments_done}/{outcome.segments_total} segments"
    return guard.state().spent, done, bool(run.pace.get("distorted"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--share", type=float, default=1.25, help="each ceiling, as a share of the calibration"
    )
    parser.add_argument("--runs", default="on-demand,spot-only", help="configurations, comma-separated")
    parser.add_argument("--stall-share", type=float, default=0.3, help="share of attempts that stall")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="keep the run folders under this folder")
    args = parser.parse_args()
    configs = [c.strip() for c in args.runs.split(",") if c.strip()]
    if os.environ.pop(CEILING_ENV, None) is not None:  # it would replace every ceiling the bench sets
        print(f"{CEILING_ENV} is set: ignored by this bench")
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        out = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="spotbatch-ceiling-")))
        base = SimulationSettings(
            out_dir=Path(out).absolute(),
            model=default_model_dir(),
            dataset=default_dataset_path(),
            rows=int(QUICK["rows"]),
            segments=int(QUICK["segments"]),
            seed=args.seed,
            mlflow=False,
        )
        with lab_for(base) as lab:
            calibration, _, _ = measure(lab, "calibration", "on-demand", 1_000.0, watch=True)
            ceiling = round(args.share * calibration, 6)
            print(
                f"calibration: on-demand at the profile's speed: ${calibration:.4f}; ceiling ${ceiling:.4f}"
            )
            results = []
            for scenario, changes in SCENARIOS.items():
                stall = {"stall_share": args.stall_share} if "stall_seconds" in changes else {}
                settings = replace(base, **changes, **stall)  # type: ignore[arg-type]
                for config in configs:
                    for mode in MODES:
                        name = f"{scenario.replace(' ', '-')}-{config}-{mode}"
                        spent, rows, distorted = measure(
                            replace(lab, settings=settings), name, config, ceiling, watch=mode == "watch"
                        )
                        results.append(Measured(scenario, config, mode, ceiling, spent, rows, distorted))
                        print(f"  {name}: ${spent:.4f} ({spent / ceiling:.2f} of the ceiling), {rows}")
    print_table(results, time.monotonic() - started)


def print_table(results: list[Measured], wall: float) -> None:
    print(
        f"\n{'scenario':<10} {'configuration':<13} {'mode':<9} {'spent':>8} {'ceiling':>8} {'ratio':>6}  done"
    )
    for r in results:
        mark = "  (workers fell behind their pace)" if r.distorted else ""
        print(
            f"{r.scenario:<10} {r.configuration:<13} {r.mode:<9} {r.spent:>8.4f} {r.ceiling:>8.4f} "
            f"{r.ratio:>6.2f}  {r.rows_done}{mark}"
        )
    for mode in MODES:
        worst = max((r for r in results if r.mode == mode), key=lambda r: r.ratio)
        print(f"worst actual/ceiling, {mode}: {worst.ratio:.3f} ({worst.scenario}, {worst.configuration})")
    watch = max(r.ratio for r in results if r.mode == "watch")
    print(f"ceiling held with the watch: {'yes' if watch <= 1.0 else 'NO'}; {wall / 60:.1f} wall minutes")


if __name__ == "__main__":
    main()
