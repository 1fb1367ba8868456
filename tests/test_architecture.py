"""The house rules of ARCHITECTURE.md, checked on the code's own syntax trees.

- no import cycle, between modules or between packages (coordinator's rooms, inference, reports);
- `coordinator.sim` is imported only by commands, the simulator itself, benchmarks and tests;
- `inference` (the worker) imports nothing from `coordinator`, and has no simulator configuration (the
  simulator paces it through the host hook);
- one start/close lifecycle (`coordinator/background.py`), not one per class;
- coordinator/job's four rooms keep their import rules (the adapter never imports the loop; data imports
  neither; the core imports none of them) and are imported from outside through their `__init__`;
- a segment's moves are made by the segment table and the launcher alone, instances are terminated only
  through the attempt book, and no part of the job reaches into another object's private fields;
- no module over 300 lines and no function over 60, except where the module says why at its top;
- `ruff format` owns the layout: no marker that keeps a line from it, anywhere.

Every import counts, also one inside a function or under `if TYPE_CHECKING:`: a lazy import is still an
arrow between two rooms.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
from collections import defaultdict
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("coordinator", "inference", "reports")
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60
EXEMPTION = "longer than 300"  # a module that must be longer says so, with why, in its first lines


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(roots: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    return {module_name(p): p for root in roots for p in sorted((REPO / root).rglob("*.py"))}


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The project's modules that `path` imports (the longest known prefix of each imported name)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name not in PACKAGES:
                found.add(name)
    return found


def graph(known: dict[str, Path]) -> dict[str, set[str]]:
    return {name: imports_of(path, known) - {name} for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def room(module: str) -> str:
    """A module's room: coordinator's subpackage (or the top-level module itself), or the package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "coordinator" else parts[0]


def test_no_import_cycle_between_modules() -> None:
    assert cycles(graph(modules())) == []


def test_no_import_cycle_between_rooms() -> None:
    rooms: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph(modules()).items():
        rooms[room(source)] |= {room(t) for t in targets} - {room(source)}
    assert cycles(rooms) == [], dict(rooms)


def test_the_simulator_is_imported_only_by_commands_itself_benchmarks_and_tests() -> None:
    known = modules((*PACKAGES, "bench"))
    allowed = ("coordinator.commands", "coordinator.sim", "bench")
    leaks = {
        name: sorted(t for t in targets if t.startswith("coordinator.sim"))
        for name, targets in graph(known).items()
        if not name.startswith(allowed)
    }
    assert {k: v for k, v in leaks.items() if v} == {}


# what `spotbatch run`, `fetch`, `status` and `make apply-real` run on a user's machine against AWS
REAL_PATH = (
    "coordinator.commands.run",
    "coordinator.commands.fetch",
    "coordinator.commands.status",
    "coordinator.commands.infra_real",
    "coordinator.job",
)


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_real_path_imports_nothing_of_the_simulator() -> None:
    """A real run may talk to an emulator (`--endpoint`), but never through the simulator's code."""
    edges = graph(modules())
    starts = [name for name in edges if name.startswith(REAL_PATH)]
    leaks = {s: sorted(t for t in reachable(edges, s) if t.startswith("coordinator.sim")) for s in starts}
    assert {s: t for s, t in leaks.items() if t} == {}


def test_the_worker_imports_nothing_from_the_coordinator() -> None:
    known = modules()
    worker = {name: targets for name, targets in graph(known).items() if name.startswith("inference")}
    assert {k: sorted(v) for k, v in worker.items() if any(t.startswith("coordinator") for t in v)} == {}


def test_the_worker_has_no_simulator_configuration() -> None:
    """The simulator steps into the worker only through the host hook (`inference/host_hook.py`, installed
    by `coordinator/sim/paced_worker.py`): no configuration field or option of the worker is its."""
    from inference.config import WorkerConfig
    from inference.worker import build_parser

    fields = {f.name for f in dataclasses.fields(WorkerConfig)}
    options = {o for action in build_parser()._actions for o in action.option_strings}
    assert fields & {"pace", "ready_at", "pace_report"} == set()
    assert {o for o in options if "pace" in o or "ready" in o} == set()
    for path in (REPO / "inference").glob("*.py"):
        assert "simulator only" not in path.read_text(encoding="utf-8").lower(), path


def test_one_lifecycle_base() -> None:
    """start/close with a `with` block: written once (`coordinator/background.py`), inherited elsewhere."""
    own = [
        f"{name}.{node.name}"
        for name, path in modules().items()
        if name != "coordinator.background"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(f, ast.FunctionDef) and f.name == "__enter__" for f in node.body)
        and any(isinstance(f, ast.FunctionDef) and f.name == "start" for f in node.body)
    ]
    assert own == []


# -- coordinator/job: four rooms, and one owner of a segment's moves ----------------------------------------

JOB = "coordinator.job"
JOB_ROOMS = ("core", "aws", "data", "loop")
# room -> the rooms it must never import: the adapter never imports the loop, data neither the loop nor the
# adapter, the core none of them
JOB_NEVER = {"core": {"aws", "data", "loop"}, "aws": {"loop", "data"}, "data": {"loop", "aws"}, "loop": set()}
TRANSITIONS = {
    "set_launching",
    "set_running",
    "set_draining",
    "set_lost",
    "set_interrupted",
    "set_failed_launch",
    "set_done",
    "set_failed",
}
TERMINATIONS = {"terminate", "terminate_and_confirm", "terminate_instances"}


def job_room(module: str) -> str | None:
    """`coordinator.job.loop.controller` -> "loop"; None outside the job's rooms."""
    parts = module.split(".")
    return parts[2] if module.startswith(JOB + ".") and len(parts) > 2 and parts[2] in JOB_ROOMS else None


def calls_of(path: Path, names: set[str]) -> list[str]:
    """`x.<name>(...)` calls in the file whose name is one of `names` (a dry run does not count)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names:
            dry = any(k.arg == "DryRun" for k in node.keywords)
            if not dry:
                found.append(f"{node.lineno} {ast.unparse(node.func)}")
    return found


def test_the_job_rooms_keep_their_import_rules() -> None:
    broken = {
        f"{name} -> {target}"
        for name, targets in graph(modules()).items()
        if (own := job_room(name)) is not None
        for target in targets
        if job_room(target) in JOB_NEVER[own]
    }
    assert broken == set()


def test_outside_its_room_a_room_is_imported_through_its_surface() -> None:
    """`from coordinator.job.loop import run_job`, never `coordinator.job.loop.runner` from another room or
    package (the tests of a module import it directly)."""
    known = modules((*PACKAGES, "bench"))
    reached = {
        f"{name} -> {target}"
        for name, targets in graph(known).items()
        for target in targets
        if (room := job_room(target)) is not None and target != f"{JOB}.{room}" and job_room(name) != room
    }
    assert reached == set()


def test_a_segments_moves_are_made_by_the_segment_table_and_the_launcher() -> None:
    makers = {
        name: calls
        for name, path in modules().items()
        if name != "coordinator.job.core.state_file" and (calls := calls_of(path, TRANSITIONS))
    }
    assert set(makers) == {"coordinator.job.loop.segment_table", "coordinator.job.loop.launcher"}, makers


def test_instances_are_terminated_by_the_fleet_for_the_attempt_book_alone() -> None:
    """The fleet calls EC2 (`aws/fleet.py`, through its error sorting); of the rest of the job's code only
    the attempt book asks it to (an attempt's end, a stop, the job's sweeps)."""
    terminating = {
        name: calls
        for name, path in modules().items()
        if name.startswith(JOB) and (calls := calls_of(path, TERMINATIONS))
    }
    assert set(terminating) == {"coordinator.job.loop.attempt_book"}, terminating


def test_no_part_of_the_job_reaches_into_another_objects_fields() -> None:
    """`self._state` is the table's own; `table._state` or `book._fleet` from elsewhere would be a second
    owner (a caller asks through a verb)."""
    reached = [
        f"{name}:{node.lineno} {ast.unparse(node)}"
        for name, path in modules().items()
        if name.startswith(JOB)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert reached == []


def test_modules_and_functions_stay_small() -> None:
    big, long = [], []
    for name, path in modules((*PACKAGES, "bench")).items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES and EXEMPTION not in text[:600]:
            big.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert big == [] and long == []


def test_the_formatter_owns_the_layout() -> None:
    marker = "fmt: " + "skip"  # spelled in two parts so that this file does not count itself
    skipped = [
        str(path.relative_to(REPO))
        for root in (*PACKAGES, "bench", "tests")
        for path in (REPO / root).rglob("*.py")
        if marker in path.read_text(encoding="utf-8")
    ]
    assert skipped == []


def test_every_exception_is_in_its_packages_tree() -> None:
    """The coordinator's errors are `coordinator/errors.py`'s tree under SpotbatchError (JobInterrupted, the
    user's stop, is a KeyboardInterrupt on purpose); the worker's are under WorkerError."""
    import coordinator.errors as errors
    import inference.errors as worker_errors
    import inference.store_errors as store_errors

    builtin = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}
    roots = [  # classes whose every base is one of Python's exceptions: a tree's root
        f"{name}.{node.name}"
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.bases and {ast.unparse(b) for b in node.bases} <= builtin
    ]
    roots.remove("coordinator.errors.JobInterrupted")
    assert sorted(roots) == ["coordinator.errors.SpotbatchError", "inference.errors.WorkerError"]
    coordinator_classes = [
        c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, Exception)
    ]
    assert all(issubclass(c, errors.SpotbatchError) for c in coordinator_classes)
    assert issubclass(errors.JobInterrupted, KeyboardInterrupt)
    for module in (worker_errors, store_errors):
        found = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, BaseException)]
        assert all(issubclass(c, worker_errors.WorkerError) for c in found), found
