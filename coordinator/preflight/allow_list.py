"""What may be sent to a rented machine: an explicit payload folder whose every file is on an allow-list.

Refused: the current directory or an ancestor of it, the home directory, a folder holding `.env`, keys or
credentials, and any file whose name matches no allow-list pattern. The check returns every problem at
once, so a tired person fixes them in one go.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

DEFAULT_ALLOW = (
    "*.py",
    "*.json",
    "*.jsonl",
    "*.yaml",
    "*.yml",
    "*.toml",
    "*.txt",
    "*.md",
    "*.parquet",
    "*.csv",
    "*.sh",
)
SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "credentials",
    ".netrc",
    "*.p12",
)


def check_payload(
    folder: Path, allow: Sequence[str] = DEFAULT_ALLOW, *, home: Path | None = None
) -> list[str]:
    """Problems that forbid sending `folder`; an empty list means it may be sent."""
    folder = folder.expanduser()
    if not folder.is_dir():
        return [f"{folder}: not a directory"]
    resolved = folder.resolve()
    home = (home or Path.home()).resolve()
    problems = []
    if resolved == Path.cwd().resolve() or resolved in Path.cwd().resolve().parents:
        problems.append(
            f"{folder}: the current directory (or a parent of it) is never a payload; name a folder"
        )
    if resolved == home or resolved in home.parents:
        problems.append(f"{folder}: the home directory (or a parent of it) is never a payload")
    for path in sorted(p for p in resolved.rglob("*") if p.is_file() or p.is_symlink()):
        relative = path.relative_to(resolved).as_posix()
        if any(fnmatch.fnmatch(path.name, pattern) for pattern in SECRET_NAMES):
            problems.append(
                f"{relative}: looks like a secret (.env, key or credentials); remove it from the payload"
            )
        elif path.is_symlink():
            problems.append(f"{relative}: symbolic links are not sent (they can point outside the payload)")
        elif not any(fnmatch.fnmatch(path.name, pattern) for pattern in allow):
            problems.append(f"{relative}: not on the allow-list ({', '.join(allow)})")
    return problems
