"""The documentation: a README a newcomer reads in one sitting, every page of docs/ in the site's nav, and
the parts drawn from the code (the state diagram, the folder map) drawing all of it. `make docs` builds
the site (`mkdocs build --strict`: every link checked) in `make check`."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import pytest

from coordinator.job.core.segment_states import ALLOWED_FROM, SegmentState, moves
from tests.conftest import REPO

README_MAX_LINES = 250


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_short_and_its_links_lead_somewhere() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme.count("\n") <= README_MAX_LINES
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        if not target.startswith("http"):
            assert (REPO / target).exists(), target


def test_every_page_is_in_the_sites_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert {page for page in pages if f": {page}" not in nav} == set()


def test_the_state_diagram_draws_every_allowed_move_and_says_every_state(hooks: ModuleType) -> None:
    drawn = hooks.on_page_markdown("before\n<!-- generated: segment-states -->\nafter")
    assert drawn.startswith("before\n") and drawn.endswith("\nafter")
    arrows = set(re.findall(r"^    ([A-Z_]+) --> ([A-Z_]+)$", drawn, re.M))
    assert arrows == {(old.value, new.value) for old, new in moves()}
    assert len(arrows) == sum(len(olds) for olds in ALLOWED_FROM.values())
    for state in SegmentState:  # each with the comment the code gives it: none without one
        row = next(line for line in drawn.splitlines() if line.startswith(f"| `{state.value}`"))
        assert len(row.split("|")[2].strip()) > 20, row


def test_the_folder_map_names_every_module_with_what_it_is(hooks: ModuleType) -> None:
    drawn = hooks.on_page_markdown("<!-- generated: folder-map -->")
    for root in ("coordinator", "inference", "reports", "bench"):
        for module in (REPO / root).rglob("*.py"):
            if module.name != "__init__.py":
                assert f"| `{module.name}` | " in drawn, module
    missing = [line for line in drawn.splitlines() if line.startswith("| `") and line.endswith("|  |")]
    assert missing == []  # every module says what it is


def test_an_unknown_marker_stops_the_build(hooks: ModuleType) -> None:
    with pytest.raises(ValueError, match="no-such-part -->: no such generator"):
        hooks.on_page_markdown("<!-- generated: no-such-part -->")


def test_every_generated_marker_in_the_pages_is_known(hooks: ModuleType) -> None:
    for page in (REPO / "docs").rglob("*.md"):
        for name in hooks.MARKER.findall(page.read_text(encoding="utf-8")):
            assert name in hooks.GENERATORS, (page, name)
