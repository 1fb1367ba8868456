"""A thin wrapper around the `terraform` binary: init, plan, apply, output, destroy, with clear errors.

Why a thin subprocess wrapper and not `python-terraform`: that package is unmaintained since 2020 and
predates Terraform 1.x's `-json` outputs; what we need is five commands, an environment and readable
errors, which fits in this module.

Offline installs: the registry may be unreachable, so the wrapper writes a CLI configuration that points
at a filesystem mirror of the providers. The mirror is found at run time, never written into the repo:
`$SPOTBATCH_TF_PLUGIN_MIRROR`, else the directory of a provider binary found under the usual plugin
locations. `$TF_CLI_CONFIG_FILE` is respected when it names a file that exists.

Usage::

    tf = Terraform.discover(Path("terraform/stacks/aws"), state_dir=Path("runs/infra/aws"))
    tf.init()                  # state in runs/infra/aws/ (the local backend), or the configured one
    tf.apply({"region": "us-east-1", "bucket_name": "my-bucket", ...})
    outputs = tf.output()
    tf.destroy()                               # with the variables of the last apply
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.errors import TerraformError

MIRROR_ENV = "SPOTBATCH_TF_PLUGIN_MIRROR"
PROVIDER_GLOB = "registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws*"
# Where Terraform's own docs say implied local mirrors live, plus the roots a machine image tends to use.
SEARCH_ROOTS = (
    "~/.terraform.d/plugins",
    "~/.local/share/terraform/plugins",
    "/usr/local/share/terraform/plugins",
    "/usr/share/terraform/plugins",
    "/opt",
    "/usr/local/lib",
)
SEARCH_DEPTH = 3  # levels under a root before registry.terraform.io: bounded, so discovery stays fast
COMMAND_TIMEOUT_SECONDS = 900  # an apply against real AWS takes minutes; a hung one must not hang us


def find_binary() -> Path:
    found = shutil.which("terraform")
    if not found:
        raise TerraformError("terraform is not on PATH; install Terraform >= 1.6")
    return Path(found)


def find_mirror() -> Path | None:
    """The filesystem mirror holding hashicorp/aws, or None (then Terraform uses the registry)."""
    configured = os.environ.get(MIRROR_ENV)
    if configured:
        path = Path(configured).expanduser()
        if not any(path.glob(PROVIDER_GLOB)):
            raise TerraformError(f"${MIRROR_ENV}={configured}: no hashicorp/aws provider under it")
        return path
    for root in SEARCH_ROOTS:
        base = Path(root).expanduser()
        if not base.is_dir():
            continue
        candidates = [base] + [
            p for depth in range(1, SEARCH_DEPTH + 1) for p in base.glob("/".join(["*"] * depth))
        ]
        for candidate in candidates:
            if candidate.is_dir() and any(candidate.glob(PROVIDER_GLOB)):
                return candidate
    return None


def cli_config_text(mirror: Path) -> str:
    return (
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{mirror}"\n'
        '    include = ["registry.terraform.io/hashicorp/*"]\n  }\n'
        '  direct {\n    exclude = ["registry.terraform.io/hashicorp/*"]\n  }\n'
        "}\n"
    )


def error_lines(output: str, most: int = 80) -> list[str]:
    """What to show of a failed command: every `Error:` block from the first (Terraform reports each
    invalid variable in one), else the last lines."""
    lines = output.strip().splitlines()
    first = next((i for i, line in enumerate(lines) if line.lstrip("│ ").startswith("Error:")), None)
    return lines[first:][:most] if first is not None else lines[-25:]


@dataclass(frozen=True, slots=True)
class CommandResult:
    args: list[str]
    seconds: float
    stdout: str


class Terraform:
    def __init__(self, binary: Path, stack_dir: Path, state_dir: Path, env: Mapping[str, str]) -> None:
        self.binary = binary
        self.stack_dir = stack_dir
        self.state_dir = state_dir
        self.env = dict(env)
        self.timings: dict[str, float] = {}

    @classmethod
    def discover(
        cls,
        stack_dir: Path,
        *,
        state_dir: Path,
        extra_env: Mapping[str, str] | None = None,
        base_env: Mapping[str, str] | None = None,
    ) -> Terraform:
        """`base_env` replaces the process environment (an emulator's target scrubs credentials from it)."""
        if not (stack_dir / "main.tf").is_file():
            raise TerraformError(f"{stack_dir}: not a Terraform stack (no main.tf)")
        state_dir.mkdir(parents=True, exist_ok=True)
        base = os.environ if base_env is None else base_env
        env = {**base, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1", **(extra_env or {})}
        env["TF_DATA_DIR"] = str((state_dir / ".terraform").resolve())
        user_config = env.get("TF_CLI_CONFIG_FILE")
        if not (user_config and Path(user_config).is_file()):
            mirror = find_mirror()
            if mirror is not None:
                config = state_dir / "terraformrc"
                config.write_text(cli_config_text(mirror.resolve()))
                env["TF_CLI_CONFIG_FILE"] = str(config.resolve())
            else:
                env.pop("TF_CLI_CONFIG_FILE", None)  # a config that does not exist only produces warnings
        return cls(find_binary(), stack_dir, state_dir, env)

    @property
    def state_file(self) -> Path:
        """Where the local backend keeps the state (`backend.tf` as shipped); a remote backend ignores it."""
        return (self.state_dir / "terraform.tfstate").resolve()

    @property
    def variables_file(self) -> Path:
        """The variables of the last plan or apply, so that a destroy needs nothing but this folder."""
        return (self.state_dir / "variables.tfvars.json").resolve()

    @property
    def local_backend(self) -> bool:
        """True unless the stack configures another backend (backend.tf replaced by backend.tf.example)."""
        texts = [path.read_text(encoding="utf-8") for path in self.stack_dir.glob("*.tf")]
        configured = [
            line for text in texts for line in text.splitlines() if line.strip().startswith("backend ")
        ]
        return not configured or all('"local"' in line for line in configured)

    def _run(self, *args: str) -> CommandResult:
        command = [str(self.binary), f"-chdir={self.stack_dir}", *args]
        started = time.monotonic()
        try:
            result = subprocess.run(
                command,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TerraformError(
                f"`terraform {args[0]}` timed out after {COMMAND_TIMEOUT_SECONDS} s"
            ) from None
        seconds = time.monotonic() - started
        self.timings[args[0]] = self.timings.get(args[0], 0.0) + seconds
        if result.returncode != 0:
            tail = "\n".join(error_lines(result.stderr or result.stdout))
            raise TerraformError(f"`terraform {' '.join(args[:1])}` in {self.stack_dir} failed:\n{tail}")
        return CommandResult(command, seconds, result.stdout)

    def _var_file(self, variables: Mapping[str, Any] | None) -> list[str]:
        """Variables go through a file of their own (0600): nothing in the process list, credentials
        included, and the same values are there for a later destroy. None: the saved file, if any."""
        if variables is not None:
            self.variables_file.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.variables_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump(dict(variables), handle, indent=2, sort_keys=True)
        return [f"-var-file={self.variables_file}"] if self.variables_file.is_file() else []

    def saved_variables(self) -> dict[str, Any]:
        if not self.variables_file.is_file():
            return {}
        return dict(json.loads(self.variables_file.read_text(encoding="utf-8")))

    def init(self) -> CommandResult:
        backend = [f"-backend-config=path={self.state_file}"] if self.local_backend else []
        return self._run("init", "-input=false", "-no-color", *backend)

    def validate(self) -> CommandResult:
        return self._run("validate", "-no-color")

    def plan(self, variables: Mapping[str, Any] | None = None, *, out: Path | None = None) -> CommandResult:
        extra = [f"-out={out.resolve()}"] if out else []
        return self._run("plan", "-input=false", "-no-color", *extra, *self._var_file(variables))

    def apply(
        self, variables: Mapping[str, Any] | None = None, *, plan_file: Path | None = None
    ) -> CommandResult:
        if plan_file is not None:  # a saved plan carries its variables
            return self._run("apply", "-input=false", "-no-color", str(plan_file.resolve()))
        return self._run("apply", "-input=false", "-no-color", "-auto-approve", *self._var_file(variables))

    def output(self) -> dict[str, Any]:
        result = self._run("output", "-json")
        raw = json.loads(result.stdout or "{}")
        return {name: item["value"] for name, item in raw.items()}

    def show_plan(self, plan_file: Path) -> dict[str, Any]:
        """The saved plan as Terraform's JSON (resource changes, planned values)."""
        result = self._run("show", "-json", "-no-color", str(plan_file.resolve()))
        return dict(json.loads(result.stdout))

    def destroy(self, variables: Mapping[str, Any] | None = None) -> CommandResult:
        return self._run("destroy", "-input=false", "-no-color", "-auto-approve", *self._var_file(variables))

    def test(self) -> CommandResult:
        return self._run("test", "-no-color")
