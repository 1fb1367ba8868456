"""A stand-in for `python:3.11-slim` made from Debian's packages, for machines that reach no image registry.

The worker image starts `FROM ${BASE_IMAGE}` (default `python:3.11-slim`, from Docker Hub). Where no
registry is reachable but Debian's package mirror is (CI sandboxes, this machine), `spotbatch image build
--base-image debian` builds this base first: `debootstrap --variant=minbase bookworm` with Python 3.11,
venv and the CA certificates, a virtual environment at `/usr/local` (so `python` and `pip` are where the
official image has them), imported into the engine as `localhost/spotbatch-python:3.11-bookworm`. It is
made once per machine (about a minute) and reused. debootstrap and chroot need root.

Usage::

    reference = ensure_debian_base(engine)    # "localhost/spotbatch-python:3.11-bookworm"
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from coordinator.build.container_engine import Engine
from coordinator.errors import ConfigError, InfraError
from coordinator.paths import cache_dir

DEBIAN_BASE = "localhost/spotbatch-python:3.11-bookworm"
SUITE = "bookworm"  # Python 3.11, the worker image's Python
PACKAGES = ("python3", "python3-venv", "ca-certificates")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
# what python:3.11-slim's configuration sets, so the Dockerfile runs the same on either base
IMAGE_CHANGES = (
    "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["python3"]',
)
DEBOOTSTRAP_TIMEOUT_SECONDS = 900.0


def apt_mirror(sources: tuple[Path, ...] = APT_SOURCES) -> str:
    """The Debian mirror apt already uses on this machine (deb822 `URIs:` or a `deb URL SUITE` line), else
    Debian's own redirector."""
    for source in sources:
        files = (
            sorted(source.glob("*.sources")) + sorted(source.glob("*.list")) if source.is_dir() else [source]
        )
        for path in files:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for match in re.finditer(r"^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text, re.M):
                uri = match.group(1)
                if uri.startswith(("http://", "https://")) and "security" not in uri:
                    return uri.rstrip("/")
    return DEFAULT_MIRROR


def _run(command: list[str], what: str) -> None:
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=DEBOOTSTRAP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise InfraError(f"{what}: no answer within {DEBOOTSTRAP_TIMEOUT_SECONDS:.0f} s") from None
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])
        raise InfraError(f"{what} failed (exit {result.returncode}):\n{tail}")


def ensure_debian_base(engine: Engine, *, mirror: str | None = None) -> str:
    """The Debian base in `engine`, built now if it is not there yet; its reference. One build at a time
    on a machine (the engine's images are the machine's): a second caller waits and finds it made."""
    if engine.has_image(DEBIAN_BASE):
        return DEBIAN_BASE
    with open(Path(tempfile.gettempdir()) / "spotbatch-debian-base.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if engine.has_image(DEBIAN_BASE):
            return DEBIAN_BASE
        return _build(engine, mirror)


def _build(engine: Engine, mirror: str | None) -> str:
    missing = [tool for tool in ("debootstrap", "chroot", "tar") if shutil.which(tool) is None]
    if missing:
        raise ConfigError(
            f"--base-image debian needs {', '.join(missing)}: `make container-tools` installs debootstrap"
        )
    if os.geteuid() != 0:
        raise ConfigError("--base-image debian runs debootstrap and chroot, which need root")
    mirror = mirror or apt_mirror()
    print(f"building {DEBIAN_BASE} from {mirror} (debootstrap {SUITE}: once per machine)", flush=True)
    cache_dir().mkdir(parents=True, exist_ok=True)
    # an image's files are read by its own user: the modes of a system's, whatever umask this process has
    # (a command that writes under runs/ sets 077; a base built after one had /usr/local/pyvenv.cfg 0600,
    # and no Python in the image started as the worker's user)
    previous = os.umask(0o022)
    try:
        _debootstrap(engine, mirror)
    finally:
        os.umask(previous)
    return DEBIAN_BASE


def _debootstrap(engine: Engine, mirror: str) -> None:
    with tempfile.TemporaryDirectory(prefix="debian-base-", dir=cache_dir()) as tmp:
        root = Path(tmp) / "root"
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(PACKAGES)}",
                SUITE,
                str(root),
                mirror,
            ],
            f"debootstrap {SUITE} from {mirror}",
        )
        _run(["chroot", str(root), "python3", "-m", "venv", "/usr/local"], "python3 -m venv /usr/local")
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (root / leftover).glob("*"):
                if path.is_file():
                    path.unlink()
        _import(engine, root)


def _import(engine: Engine, root: Path) -> None:
    """`tar -C root -c . | <engine> import --change ... - DEBIAN_BASE`."""
    changes = [arg for change in IMAGE_CHANGES for arg in ("--change", change)]
    with subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE) as tar:
        imported = subprocess.run(
            engine.command("import", *changes, "-", DEBIAN_BASE),
            stdin=tar.stdout,
            capture_output=True,
            text=True,
            env=engine.environment(),
            check=False,
        )
    if tar.returncode != 0 or imported.returncode != 0:
        raise InfraError(f"{engine.name} import of {root} failed: {imported.stderr.strip()[-500:]}")
