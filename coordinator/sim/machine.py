"""Simulator only: what a simulated machine has of its own: its image's files, its role, its pulls.

- `MachineImage`: what the worker image holds that this host provides instead (the model, built here) and
  the worker's share of this host's cores.
- `SimulatedInstance`: one machine's state as the instance runtime keeps it (its processes, its pulls).
- `RoleSession`: the instance role, as EC2 hands it to an instance: temporary credentials from STS (the
  simulator's own identity assumes the role, as the EC2 service does), refreshed before they expire.
- `pull_image`: `docker pull` of an ECR image with those credentials (login, then the manifest).
- `container_env`: the worker's environment: the image's `ENV`, the `-e` values, paths into the image
  mapped to this host's.

Usage::

    role = RoleSession.of_instance(admin_target, ec2, "i-0abc")     # None without an instance profile
    pull_image(role, "1234.dkr.ecr.us-east-1.amazonaws.com/w@sha256:...")
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coordinator.sim.image import IMAGE_ENV, MANIFEST_TYPE
from coordinator.sim.lifeline import wait_for_group
from coordinator.sim.paced_worker import PACE_ENV, PACE_REPORT_ENV, READY_AT_ENV
from coordinator.sim.standins import MACHINE_ENV, SOCKET_ENV
from coordinator.stack.target import AwsTarget

if TYPE_CHECKING:
    from coordinator.sim.worker_boot import WorkerHandle

REFRESH_BEFORE = timedelta(minutes=5)
THREADS_ENV = "SPOTBATCH_THREADS"
PACE_REPORT = "pace.json"  # in the machine's folder: how far its worker fell behind the pace
LAUNCH_REPORT = "launch.json"  # in the machine's folder: its drawn launch-to-ready time, cloud seconds
# How long a power-off waits for the boot script's processes after SIGTERM (systemd waits up to 90 s for a
# unit; Docker gives a container 10 s): time for the EXIT trap's boot-log ship and the shim's last one.
SHUTDOWN_GRACE_SECONDS = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class MachineImage:
    files: dict[str, str]  # a path in the image -> the path on this host that stands for it
    threads: int = 1  # each simulated machine gets a share of the host's cores, not all of them
    extra_env: dict[str, str] = field(default_factory=dict)
    # instance type -> the worker's pace on a machine of that type (`paced_worker.PACE_ENV`), over extra_env's
    pace_by_type: dict[str, str] = field(default_factory=dict)


def _mapped(value: str, files: dict[str, str]) -> str:
    for inside, here in files.items():
        if value == inside or value.startswith(inside.rstrip("/") + "/"):
            return here + value[len(inside.rstrip("/")) :]
    return value


def container_env(
    image: MachineImage,
    request: dict[str, Any],
    *,
    home: str,
    hostname: str,
    ready_at: float | None = None,
    instance_type: str = "",
) -> dict[str, str]:
    """The worker's environment: what Docker sets (PATH, HOME, HOSTNAME), the image's ENV, then the `-e`
    values; nothing else of this host's (no credentials: the worker finds the role's through the
    metadata service, as on EC2)."""
    given = {str(k): _mapped(str(v), image.files) for k, v in dict(request.get("env", {})).items()}
    docker = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": home,
        "HOSTNAME": hostname,
    }
    paced = {READY_AT_ENV: f"{ready_at:.3f}", PACE_REPORT_ENV: f"{home}/{PACE_REPORT}"} if ready_at else {}
    if instance_type in image.pace_by_type:  # the machine works at its own type's speed
        paced[PACE_ENV] = image.pace_by_type[instance_type]
    return {**docker, **IMAGE_ENV, THREADS_ENV: str(image.threads), **given, **image.extra_env, **paced}


@dataclass(slots=True)
class SimulatedInstance:
    instance_id: str
    tags: dict[str, str]
    booted_at: float  # wall clock
    role: RoleSession | None
    script: subprocess.Popen[bytes] | None = None
    worker: WorkerHandle | None = None
    pulled: set[str] = field(default_factory=set)
    exit_code: int | None = None  # the worker's
    killed: str = ""  # "", "SIGTERM", "SIGKILL"
    power_off: threading.Timer | None = None
    shutdowns: list[float] = field(default_factory=list)  # `shutdown` calls, minutes from then (0: now)
    gone: bool = False
    ready_at: float | None = None  # wall clock: the end of its modelled launch, when its worker may start
    launch_seconds: float | None = None  # cloud: its drawn launch-to-ready time (`LAUNCH_REPORT`)
    instance_type: str = ""  # EC2's answer: which pool it landed in


def stop_processes(instance: SimulatedInstance, *, hard: bool, grace: float) -> None:
    """A machine powered off: its worker gets SIGKILL (`hard`) or SIGTERM then SIGKILL after `grace`; then
    its boot script's process group: SIGKILL (`hard`), or SIGTERM, and SIGKILL only to what still runs
    after the shutdown's grace. An OS shutdown waits for every process of the boot script, not only for
    bash (which ends at once on SIGTERM, running its EXIT trap, while the docker shim it waited on still
    ships its last lines), as systemd waits for a unit's whole cgroup and lets Docker flush awslogs."""
    if instance.power_off is not None:
        instance.power_off.cancel()
    worker = instance.worker
    if worker is not None and worker.exit_code() is None:
        worker.signal(signal.SIGKILL if hard else signal.SIGTERM)
        instance.killed = "SIGKILL" if hard else "SIGTERM"
        if not hard and worker.wait(grace) is None:
            worker.signal(signal.SIGKILL)
            instance.killed = "SIGKILL"
        code = worker.wait(grace)
        instance.exit_code = code if code is not None else -9
    script = instance.script
    if script is None or script.poll() is not None:
        return
    if not hard:  # an OS shutdown: every process of the boot script's group finishes (logs shipped)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(script.pid, signal.SIGTERM)
        wait_for_group(script.pid, max(grace, SHUTDOWN_GRACE_SECONDS))
    with contextlib.suppress(ProcessLookupError):
        os.killpg(script.pid, signal.SIGKILL)
    script.wait(grace)


def script_env(
    bin_dir: Path, home: Path, *, imds: str, agent: Path, machine: str, endpoint: str | None
) -> dict[str, str]:
    """The boot script's environment: the stand-ins first on PATH, the metadata service, the host agent."""
    return {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds,
        SOCKET_ENV: str(agent),
        MACHINE_ENV: machine,
        **({"AWS_ENDPOINT_URL": endpoint} if endpoint else {}),
    }


class RoleSession:
    """`sts`, `iam`: the simulator's own clients, made once per runtime (a boto3 client costs 10-70 ms of
    CPU, and ten machines booting at once ask for several each)."""

    def __init__(self, target: AwsTarget, role_arn: str, session_name: str, sts: Any = None) -> None:
        self.target, self.arn, self.session_name = target, role_arn, session_name
        self.name = role_arn.rsplit("/", 1)[-1]
        self._sts = sts
        self._cached: dict[str, Any] = {}
        self._clients: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def of_instance(
        cls, target: AwsTarget, ec2: Any, instance_id: str, *, iam: Any = None, sts: Any = None
    ) -> RoleSession | None:
        described = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        profile = described.get("IamInstanceProfile", {}).get("Arn")
        if not profile:
            return None
        name = profile.rsplit("/", 1)[-1]
        iam = iam or target.client("iam")
        roles = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]["Roles"]
        return cls(target, str(roles[0]["Arn"]), instance_id, sts=sts) if roles else None

    def credentials(self) -> dict[str, Any]:
        """STS credentials of the role (AccessKeyId, SecretAccessKey, SessionToken, Expiration)."""
        with self._lock:
            expiration = self._cached.get("Expiration")
            if expiration is None or expiration - datetime.now(UTC) < REFRESH_BEFORE:
                sts = self._sts or self.target.client("sts")
                answer = sts.assume_role(
                    RoleArn=self.arn, RoleSessionName=self.session_name, DurationSeconds=3600
                )
                self._cached = dict(answer["Credentials"])
            return dict(self._cached)

    def client(self, service: str, region: str | None = None) -> Any:
        """A client with the role's current credentials, made once per credentials, service and region."""
        creds = self.credentials()
        key = (service, region or self.target.region, str(creds["AccessKeyId"]))
        with self._lock:
            if key not in self._clients:
                self._clients[key] = _shared_session().client(
                    service,
                    region_name=key[1],
                    endpoint_url=self.target.endpoint,
                    aws_access_key_id=creds["AccessKeyId"],
                    aws_secret_access_key=creds["SecretAccessKey"],
                    aws_session_token=creds["SessionToken"],
                )
            return self._clients[key]


_SESSION: list[Any] = []
_SESSION_LOCK = threading.Lock()


def _shared_session() -> Any:
    """One boto3 session for every role's clients (its loaded service models are what is slow to make);
    the credentials are each client's own."""
    import boto3

    with _SESSION_LOCK:
        if not _SESSION:
            _SESSION.append(boto3.session.Session())
        return _SESSION[0]


def pull_image(role: RoleSession, image: str) -> str:
    """`docker pull` from ECR with the role's credentials: the ECR credential helper's login, then the
    manifest. Any refusal is the daemon's error line."""
    registry, _, rest = image.partition("/")
    if ".dkr.ecr." not in registry:
        raise RuntimeError(f"pull {image}: only ECR images can be pulled here")
    region = registry.split(".dkr.ecr.")[1].split(".")[0]
    repository, at, digest = rest.partition("@")
    if not at:
        repository, _, tag = rest.partition(":")
        image_id = {"imageTag": tag or "latest"}
    else:
        image_id = {"imageDigest": digest}
    ecr = role.client("ecr", region)
    try:
        ecr.get_authorization_token()
        answer = ecr.batch_get_image(
            repositoryName=repository, imageIds=[image_id], acceptedMediaTypes=[MANIFEST_TYPE]
        )
    except Exception as error:
        raise RuntimeError(f"Error response from daemon: pull access denied for {image}: {error}") from None
    if not answer.get("images"):
        raise RuntimeError(f"Error response from daemon: manifest for {image} not found")
    return f"Status: Downloaded newer image for {image}"
