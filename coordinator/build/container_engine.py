"""The container engine that builds and runs the worker image: Docker where one runs, podman otherwise.

A user with Docker Desktop or a Docker daemon gets `docker`; a machine without a daemon (CI, this one) gets
podman, which builds and runs images with no daemon at all. `SPOTBATCH_CONTAINER_ENGINE=docker|podman`
chooses. The same Dockerfile serves both, and both build for `linux/amd64` (the instances' platform, what
an arm64 laptop must emulate).

podman gets the project's `containers.conf` (`$CONTAINERS_CONF`, written under the cache folder): no default
ulimits (setting RLIMIT_NOFILE is refused inside some sandboxes) and the `runc` runtime where it is
installed (crun needs a cgroup layout some hosts lack); builds use chroot isolation, which needs no
namespaces. Nothing else of podman's configuration changes.

Usage::

    engine = find_engine()                          # ConfigError naming what to install if neither works
    engine.call("image", "inspect", "--format", "{{.Id}}", "spotbatch-worker:cpu")
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.errors import ConfigError, InfraError
from coordinator.paths import cache_dir

ENGINE_ENV = "SPOTBATCH_CONTAINER_ENGINE"
PLATFORM = "linux/amd64"  # every worker type the stack takes is x86_64 (c7i, g5, ...)
PROBE_TIMEOUT_SECONDS = 20.0  # `docker info` answers in well under a second when a daemon listens
INSTALL_HINT = (
    "install Docker (and start its daemon), or podman: `make container-tools` installs podman, runc and "
    "debootstrap from Debian's packages"
)


@dataclass(frozen=True, slots=True)
class Engine:
    name: str  # "docker" or "podman"
    binary: str
    env: dict[str, str] = field(default_factory=dict)  # added to the engine's environment

    @property
    def build_options(self) -> tuple[str, ...]:
        """What this engine's `build` needs besides the Dockerfile's own arguments."""
        podman = ("--isolation", "chroot", "--network", "host") if self.name == "podman" else ()
        return ("--platform", PLATFORM, *podman)

    def command(self, *args: str) -> list[str]:
        return [self.binary, *args]

    def environment(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def call(self, *args: str, stdin: str | None = None, timeout: float | None = None) -> str:
        """Run `<engine> args...`; its stdout, or `InfraError` with the last lines it printed."""
        try:
            result = subprocess.run(
                self.command(*args),
                input=stdin,
                capture_output=True,
                text=True,
                env=self.environment(),
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise InfraError(f"{self.name} {args[0]} did not answer within {timeout:.0f} s") from None
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-10:])
            raise InfraError(f"{self.name} {' '.join(args[:2])} failed (exit {result.returncode}):\n{tail}")
        return result.stdout

    def streamed(self, *args: str) -> None:
        """Run `<engine> args...` with its output on this terminal (a build's steps); `InfraError` if it
        fails."""
        code = subprocess.run(self.command(*args), env=self.environment(), check=False).returncode
        if code != 0:
            raise InfraError(f"{self.name} {args[0]} failed (exit {code}); its output is above")

    def has_image(self, reference: str) -> bool:
        command = ["image", "exists", reference] if self.name == "podman" else ["image", "inspect", reference]
        return (
            subprocess.run(
                self.command(*command), capture_output=True, env=self.environment(), check=False
            ).returncode
            == 0
        )


def podman_conf() -> Path:
    """The project's containers.conf for podman (see the module docstring), written once."""
    path = cache_dir() / "containers.conf"
    runtime = '\n[engine]\nruntime = "runc"\n' if shutil.which("runc") else ""
    text = f"# written by spotbatch ({__name__})\n[containers]\ndefault_ulimits = []\n{runtime}"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def podman() -> Engine | None:
    binary = shutil.which("podman")
    return Engine("podman", binary, {"CONTAINERS_CONF": str(podman_conf())}) if binary else None


def docker() -> Engine | None:
    """Docker, if its daemon answers (a client alone cannot build)."""
    binary = shutil.which("docker")
    if binary is None:
        return None
    try:
        probe = subprocess.run(
            [binary, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    return Engine("docker", binary) if probe.returncode == 0 else None


def find_engine() -> Engine:
    """`$SPOTBATCH_CONTAINER_ENGINE`'s engine, else Docker with a daemon, else podman."""
    chosen = os.environ.get(ENGINE_ENV, "").strip()
    if chosen and chosen not in ("docker", "podman"):
        raise ConfigError(f"${ENGINE_ENV}={chosen!r}: use docker or podman")
    finders = {"docker": docker, "podman": podman}
    for name in [chosen] if chosen else ["docker", "podman"]:
        engine = finders[name]()
        if engine is not None:
            return engine
    what = f"{chosen} is not usable here" if chosen else "no container engine: no Docker daemon, no podman"
    raise ConfigError(f"{what}; {INSTALL_HINT}")
