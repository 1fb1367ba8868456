"""Simulator only: `docker`, `shutdown`, `dnf` and `systemctl` for a simulated instance, first on its PATH.

A real worker instance has Docker, systemd's shutdown and dnf; this machine has no Docker engine and must
not power itself off. The boot script Terraform rendered runs unchanged under bash, and these small
programs answer its calls by asking the simulator's host agent (`host_agent.py`, over the unix socket in
`$SPOTBATCH_SIM_SOCKET`) to do what the machine `$SPOTBATCH_SIM_MACHINE` would:

    docker info                  the daemon is up (the host agent is)
    docker pull IMAGE            fetch the image's manifest from ECR with the instance role's credentials
    docker run [OPTIONS] IMAGE   start the worker with the container's environment (-e NAME=VALUE, and
                                 -e NAME passes this shell's value if it has one, as docker does); wait
                                 for it and exit with its code; --gpus, --network, --rm, --log-driver and
                                 --log-opt are honoured (awslogs ships the output to CloudWatch Logs)
    shutdown -h +MINUTES|now     power the machine off then (which terminates the instance); -c cancels
    dnf install ...              nothing: the package is what the AMI would have installed
    systemctl start docker       nothing: the daemon (the host agent) is up

Only the standard library is imported: a stand-in starts in milliseconds, as the real programs do.

Usage (what the runtime writes into the machine's bin folder)::

    #!/bin/sh
    exec /path/to/python -m coordinator.sim.standins docker "$@"
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coordinator.errors import StandinError
from coordinator.paths import checkout_first

SOCKET_ENV = "SPOTBATCH_SIM_SOCKET"
MACHINE_ENV = "SPOTBATCH_SIM_MACHINE"
PROGRAMS = ("docker", "shutdown", "dnf", "systemctl")
DOCKER_EXIT_ERROR = 125  # docker's own code for "the daemon could not run the container"
FLAGS_WITH_VALUE = {"--network", "--gpus", "--log-driver", "--log-opt", "-e", "--env", "--name"}
FLAGS_ALONE = {"--rm", "-d", "--detach", "-i", "-t"}


def _exchange(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Send one request to the host agent; yield its answers (JSON lines) until it closes."""
    path = os.environ.get(SOCKET_ENV)
    machine = os.environ.get(MACHINE_ENV)
    if not path or not machine:
        raise StandinError(f"${SOCKET_ENV} and ${MACHINE_ENV} must be set (a simulated instance's shell)")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall(json.dumps({**request, "machine": machine}).encode() + b"\n")
        with connection.makefile("r", encoding="utf-8") as answers:
            for line in answers:
                answer = json.loads(line)
                if "error" in answer:
                    raise StandinError(str(answer["error"]))
                yield answer


def parse_run(args: list[str], environ: dict[str, str]) -> dict[str, Any]:
    """`docker run` options and image; -e NAME without a value takes this shell's value, if set."""
    env: dict[str, str] = {}
    options: dict[str, Any] = {"log_opts": {}, "gpus": "", "network": "", "log_driver": ""}
    position = 0
    while position < len(args) and args[position].startswith("-"):
        flag, _, inline = args[position].partition("=")
        if flag in FLAGS_ALONE:
            position += 1
            continue
        if flag not in FLAGS_WITH_VALUE:
            raise StandinError(f"docker run: the simulator's stand-in does not know {flag}")
        value = inline if inline else args[position + 1] if position + 1 < len(args) else ""
        position += 1 if inline else 2
        if flag in ("-e", "--env"):
            name, has_value, given = value.partition("=")
            if has_value:
                env[name] = given
            elif name in environ:
                env[name] = environ[name]
        elif flag == "--log-opt":
            key, _, option = value.partition("=")
            options["log_opts"][key] = option
        elif flag != "--name":
            options[flag.lstrip("-").replace("-", "_")] = value
    if position >= len(args):
        raise StandinError("docker run: no image given")
    return {"image": args[position], "command": args[position + 1 :], "env": env, **options}


def docker(args: list[str]) -> int:
    if args[:1] == ["info"]:  # the daemon is the host agent, up as long as the runtime is
        print("Server Version: spotbatch simulator (fork-server workers)")
        return 0
    if not args or args[0] not in ("pull", "run"):
        raise StandinError(f"docker {' '.join(args[:1])}: the simulator's stand-in runs info, pull and run")
    if args[0] == "pull":
        if len(args) != 2:
            raise StandinError("docker pull: one image")
        for answer in _exchange({"op": "pull", "image": args[1]}):
            print(answer.get("status", ""), flush=True)
        return 0
    request = {"op": "run", **parse_run(args[1:], dict(os.environ))}
    code = DOCKER_EXIT_ERROR
    for answer in _exchange(request):
        if "exit" in answer:
            code = int(answer["exit"])
    return code


def shutdown(args: list[str]) -> int:
    """`shutdown [-h|-P|-r] [TIME] [MESSAGE]`, `shutdown -c`: systemd's forms that the boot script uses."""
    flags = [a for a in args if a.startswith("-")]
    rest = [a for a in args if not a.startswith("-")]
    if "-c" in flags:
        list(_exchange({"op": "shutdown", "cancel": True}))
        return 0
    when = rest[0] if rest else "+1"  # systemd's default: a minute from now
    if when == "now":
        minutes = 0.0
    elif when.startswith("+") and when[1:].isdigit():
        minutes = float(when[1:])
    else:
        raise StandinError(f"shutdown: the simulator's stand-in takes now or +MINUTES, not {when!r}")
    list(_exchange({"op": "shutdown", "minutes": minutes, "message": " ".join(rest[1:])}))
    return 0


def systemctl(args: list[str]) -> int:
    """`systemctl start [--no-block] docker`: the daemon is the host agent (or podman), up already."""
    units = [a for a in args[1:] if not a.startswith("-")]
    if args[:1] != ["start"] or units != ["docker"]:
        raise StandinError(f"systemctl {' '.join(args)}: the simulator's stand-in only starts docker")
    return 0


def dnf(args: list[str]) -> int:
    if not args or args[0] != "install":
        raise StandinError(f"dnf {' '.join(args[:1])}: the simulator's stand-in only installs")
    return 0  # the AMI's package: nothing to fetch here


def install(bin_dir: Path, *, docker_module: str | None = None) -> Path:
    """A small script per program in `bin_dir` (first on a machine's PATH) that runs this module;
    `docker_module`: another module for `docker` (container mode: `coordinator.sim.podman_docker`)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    python_path = shlex.quote(checkout_first({})["PYTHONPATH"])  # the checkout that runs the simulator
    for program in PROGRAMS:
        path = bin_dir / program
        module, argv = "coordinator.sim.standins", f" {program}"
        if program == "docker" and docker_module:
            module, argv = docker_module, ""
        path.write_text(
            f"#!/bin/sh\nPYTHONPATH={python_path}${{PYTHONPATH:+:$PYTHONPATH}}\n"
            f'export PYTHONPATH\nexec "{sys.executable}" -m {module}{argv} "$@"\n'
        )
        path.chmod(0o755)
    return bin_dir


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in PROGRAMS:
        print(f"usage: python -m coordinator.sim.standins {{{','.join(PROGRAMS)}}} ...", file=sys.stderr)
        return 2
    program, args = argv[0], argv[1:]
    try:
        return {"docker": docker, "shutdown": shutdown, "dnf": dnf, "systemctl": systemctl}[program](args)
    except (StandinError, OSError, json.JSONDecodeError) as error:
        print(f"{program}: {error}", file=sys.stderr)
        return DOCKER_EXIT_ERROR if program == "docker" else 1


if __name__ == "__main__":
    raise SystemExit(main())
