"""MkDocs hook: the parts of the documentation drawn from the code at every build, so they cannot drift.

A page asks for one with a marker on a line of its own: `<!-- generated: NAME -->`, where NAME is one of
`GENERATORS` (the folder map from the modules' docstrings; the segment states and their moves from
`coordinator/job/core/segment_states.py`). `mkdocs build --strict` runs it (`make docs`, `make check`).
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)
MAP_ROOTS = ("coordinator", "inference", "reports", "bench")
STATES_FILE = REPO / "coordinator" / "job" / "core" / "segment_states.py"


def summary(path: Path) -> str:
    """The first sentence of a module's docstring ("" without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    sentence = re.split(r"(?<=[.!?])\s(?=[A-Z`])", paragraph, maxsplit=1)[0]
    return sentence.replace("|", "\\|")


def folder_map() -> str:
    """Every package of the project with its modules, each with the first sentence of its docstring."""
    out = []
    for root in MAP_ROOTS:
        top = REPO / root
        for package in [top, *sorted(p for p in top.rglob("*") if p.is_dir() and any(p.glob("*.py")))]:
            if "__pycache__" in package.parts:
                continue
            name = package.relative_to(REPO).as_posix()
            init = package / "__init__.py"
            about = summary(init) if init.exists() else ""
            out.append(f"### `{name}/`\n\n{about}\n" if about else f"### `{name}/`\n")
            out.append("| module | what it is |\n|---|---|")
            for module in sorted(package.glob("*.py")):
                if module.name != "__init__.py":
                    out.append(f"| `{module.name}` | {summary(module)} |")
            out.append("")
    return "\n".join(out)


def state_comments() -> dict[str, str]:
    """Each `SegmentState` member's comment (the lines above it in its class), by member name."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    inside = False
    with tokenize.open(STATES_FILE) as handle:
        for token in tokenize.generate_tokens(handle.readline):
            if token.type == tokenize.NAME and token.string == "SegmentState" and not inside:
                inside = token.line.startswith("class ")
            elif inside and token.type == tokenize.COMMENT:
                pending.append(token.string.lstrip("# ").strip())
            elif (
                inside and token.type == tokenize.NAME and token.line.strip().startswith(f"{token.string} =")
            ):
                comments[token.string] = " ".join(pending)
                pending = []
            elif inside and token.type == tokenize.OP and token.string == "@":
                break  # the members end where the class's methods begin
    return comments


def segment_states() -> str:
    """The states with their comments and the states each comes from, then the diagram of every move."""
    from coordinator.job.core.segment_states import ALLOWED_FROM, SegmentState, moves

    comments = state_comments()
    rows = ["| state | what it means | reached from |", "|---|---|---|"]
    for state in SegmentState:
        sources = (
            ", ".join(s.value for s in SegmentState if s in ALLOWED_FROM.get(state, ())) or "(the start)"
        )
        terminal = " **(terminal)**" if state.is_terminal else ""
        rows.append(f"| `{state.value}`{terminal} | {comments.get(state.name, '')} | {sources} |")
    diagram = ["```mermaid", "stateDiagram-v2", f"    [*] --> {SegmentState.PENDING.value}"]
    diagram += [f"    {old.value} --> {new.value}" for old, new in moves()]
    diagram += [f"    {state.value} --> [*]" for state in SegmentState if state.is_terminal]
    diagram.append("```")
    count = f"{len(moves())} moves between {len(SegmentState)} states (`ALLOWED_FROM`)."
    return "\n".join([*rows, "", count, "", *diagram, ""])


GENERATORS: dict[str, Callable[[], str]] = {"folder-map": folder_map, "segment-states": segment_states}


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs's hook: each marker replaced by what its generator draws (an unknown name stops the build)."""

    def generated(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in GENERATORS:
            raise ValueError(
                f"<!-- generated: {name} -->: no such generator (one of {', '.join(GENERATORS)})"
            )
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)
