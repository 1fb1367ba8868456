"""Every error spotbatch raises on purpose, and the exit code it ends a command with.

The command line (`coordinator/cli.py`) is the one place that maps them: it prints one line and exits with
the error's `exit_code`. Anything else that escapes is a bug: exit 1 with its traceback. This module is
longer than 300 lines on purpose: the whole tree in one place (ARCHITECTURE.md), a short class per error.

    SpotbatchError                          2  the base
    ├── DoNotRetry                          2  the same call fails the same way again: fix the input or setup
    │   ├── ConfigError                     2  a flag, setting or file the command cannot use
    │   │   ├── BudgetConfigError              a ceiling, estimate, currency or spend-log line
    │   │   ├── DataError                      a dataset to prepare (names the file, column and row)
    │   │   ├── PriceError                     a price table row, or a price the table lacks
    │   │   ├── TraceError                     an availability trace
    │   │   ├── WhatIfError                    a what-if job
    │   │   ├── UnknownPolicy                  a policy name or option
    │   │   ├── DeadlineRequired               a deadline policy without a deadline
    │   │   ├── PayloadError                   a burst payload
    │   │   ├── BurstCostError                 a burst's times or rates
    │   │   └── StackOutputsError              saved stack outputs without what a run needs
    │   ├── UntrustedInput (ValueError)        a document from a worker or a user that is not what it says
    │   ├── JobLeaseHeld                    2  another coordinator runs the job (named)
    │   ├── BudgetGuardExceeded             3  the budget guard refused: a decision, not a failure
    │   ├── PreflightFailed                 4  a pre-flight check failed and was not overridden
    │   ├── Declined                        5  the user did not confirm at a prompt
    │   └── AwsSetupError                   2  the account refuses the job; it stops at once
    │       ├── PermissionDenied               an action the credentials may not call (named)
    │       │   └── TeardownRefused            the job's first instance launched, but may not be terminated
    │       ├── QuotaExceeded                  a vCPU (or other) quota of the account is used up
    │       └── BootFailing                    no instance of the job ever started its worker
    ├── Retryable                           2  the same call may work later
    ├── LaunchError                         2  an EC2 launch failed; carries the failed calls
    │   ├── CapacityError (Retryable)          no capacity, price or limit in this market now
    │   └── ThrottledError (Retryable)         still throttled (or 5xx) after the client's retries
    ├── ProviderError                       2  the GPU cloud refused or failed a call
    │   ├── NoCapacity (Retryable)             no capacity for the type in the region
    │   ├── RateLimited (Retryable)            still throttled after the retries
    │   ├── ProviderQuotaExceeded              a quota of the GPU cloud account (no retry helps)
    │   └── LaunchUnconfirmed                  a launch failed after the box may have been created
    ├── JobLeaseLost                        2  another coordinator took the job over: this one stops
    ├── InvalidTransition                   2  a state change the segment state machine does not allow
    ├── RunStorageError                     2  the run folder cannot be written (read-only, disk full)
    ├── TerraformError                      2  Terraform is missing or a command failed
    ├── InfraError                          2  the stack could not be brought up, confirmed or torn down
    ├── RemoteError                         2  a command on a rented box failed
    ├── EmulatorError                       2  the embedded AWS did not start, or an endpoint is not loopback
    ├── SshdUnavailable                     2  the local sshd stand-in cannot run here
    ├── StandinError                        2  a simulated machine's stand-in (its docker) refused a call
    ├── ReportError                         2  no runs to report on, or a run file that does not parse
    ├── JobFailed                           1  some segments could not be finished
    ├── MergeError                          1  the outputs are not the input rows exactly once
    ├── LeakError                           1  instances of a job are alive after it ended
    ├── SimulationError                     1  a run of the matrix did not finish cleanly
    └── BurstFailed                         1  a burst step failed after launch (the box is gone)
        └── ParityMismatch                     the box's software differs from this machine's

    KeyboardInterrupt
    └── JobInterrupted                    130  Ctrl-C or SIGTERM stopped a job cleanly, with its cut outcome

`JobInterrupted` is the one class outside `SpotbatchError`, on purpose: it is the user's stop, and must pass
every `except Exception` on its way out as Ctrl-C does (`tests/test_architecture.py` holds that every other
exception class of the coordinator is in this tree, and every one of the worker in its own).

The worker (`python -m inference.worker`) is a program of its own and imports nothing from here; its errors
(`inference/errors.py`) use the same exit codes, plus `EXIT_SUPERSEDED` for an attempt a newer one replaced.
Both tables are in the README ("Exit codes").
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1  # the job (or a burst, or the matrix) ran and did not finish its work
EXIT_BAD_INPUT = 2  # bad input or configuration, or an error of a part this command relies on
EXIT_BUDGET_REFUSED = 3
EXIT_PREFLIGHT_FAILED = 4
EXIT_DECLINED = 5
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM: 128 + SIGINT, as shells report it


class SpotbatchError(Exception):
    """Base of every error this project raises on purpose."""

    exit_code = EXIT_BAD_INPUT


class DoNotRetry(SpotbatchError):
    """Repeating the same call cannot help: the input, the configuration or a decision stands in the way."""


class Retryable(SpotbatchError):
    """The same call may succeed later (capacity comes back, throttling ends)."""


class ConfigError(DoNotRetry):
    """A flag, setting or file the command cannot use; the message names it and its value."""


class BudgetConfigError(ConfigError):
    """A ceiling, estimate, currency or log line that the budget guard cannot trust."""


class DataError(ConfigError):
    """A dataset to prepare is unusable; the message says where (file, column, row) and why."""


class PriceError(ConfigError):
    """A price table that does not parse, or a price that is not in it."""


class TraceError(ConfigError):
    """An availability trace that does not parse; the message names the file and the field."""


class WhatIfError(ConfigError):
    """Inputs the what-if mode cannot run: names the field and the value."""


class UnknownPolicy(ConfigError):
    """A policy name that is not registered, or an option it does not take; lists the valid ones."""


class DeadlineRequired(ConfigError):
    """A deadline policy was given no deadline."""


class PayloadError(ConfigError):
    """A burst payload cannot be built or read (names the file)."""


class BurstCostError(ConfigError):
    """Timestamps or rates of a burst that cannot be priced (names the field and value)."""


class StackOutputsError(ConfigError):
    """Saved stack outputs (`terraform output -json`) that lack what a run needs."""


class BudgetGuardExceeded(DoNotRetry):
    """Authorizing the operation could make spending pass the ceiling."""

    exit_code = EXIT_BUDGET_REFUSED


class PreflightFailed(DoNotRetry):
    """A pre-flight check failed and was not overridden."""

    exit_code = EXIT_PREFLIGHT_FAILED


class Declined(DoNotRetry):
    """The user did not confirm an action that costs money or destroys something."""

    exit_code = EXIT_DECLINED


class AwsSetupError(DoNotRetry):
    """The account refuses what the job needs: retrying, elsewhere or later, will not help; fix and rerun."""


class PermissionDenied(AwsSetupError):
    """The credentials may not call an action; the message names it and where to grant it."""

    def __init__(self, message: str, action: str) -> None:
        super().__init__(message)
        self.action = action


class TeardownRefused(PermissionDenied):
    """`TerminateInstances` is refused on the job's first instance, launched just before: the job stops,
    and the instance (`instance_id`) is recorded, since nothing here can end it but itself."""

    def __init__(self, message: str, instance_id: str, instance_type: str, zone: str) -> None:
        super().__init__(message, "ec2:TerminateInstances")
        self.instance_id, self.instance_type, self.zone = instance_id, instance_type, zone


class QuotaExceeded(AwsSetupError):
    """A quota of the account (vCPUs of a family and market, roles) is used up."""


class BootFailing(AwsSetupError):
    """Every instance of the job ended before its worker's first heartbeat: the image, the registry or the
    boot script fails on each; another launch would fail and bill alike. Fix it, and the job id resumes."""


class LaunchError(SpotbatchError):
    """An EC2 launch (or terminate) that failed; `history` lists the failed calls before it."""

    def __init__(self, message: str, history: list[str] | None = None) -> None:
        super().__init__(message)
        self.history = history or []


class CapacityError(LaunchError, Retryable):
    """No capacity (or price, or limit) for this market now: the policy decides what next."""


class ThrottledError(LaunchError, Retryable):
    """AWS kept throttling (or answering 5xx) past the client's adaptive retries: no verdict on the call;
    it is made again later, never a reason to give a segment up."""


class ProviderError(SpotbatchError):
    """The GPU cloud refused or failed a call; the message has its error code and what was asked."""


class NoCapacity(ProviderError, Retryable):
    """No capacity for the instance type in the region."""


class RateLimited(ProviderError, Retryable):
    """Too many requests, still, after the retries."""


class ProviderQuotaExceeded(ProviderError, DoNotRetry):
    """The GPU cloud account's quota is used up (Lambda: `global/quota-exceeded`); ask the provider."""


class LaunchUnconfirmed(ProviderError):
    """The launch call failed after the provider may have created the instance: look it up by name."""


class InvalidTransition(SpotbatchError):
    """A transition from a state that does not allow it (a bug, or another coordinator at work)."""


class RunStorageError(SpotbatchError):
    """A run's own files (state, logs, records) cannot be written: a read-only folder, a full disk."""


class TerraformError(SpotbatchError):
    """Terraform is missing, or a command failed; the message carries the command and its last lines."""


class InfraError(SpotbatchError):
    """The infrastructure could not be brought up, confirmed or torn down."""


class RemoteError(SpotbatchError):
    """A remote command or transfer failed; the message has the command and the end of its output."""


class EmulatorError(SpotbatchError):
    """The emulator did not start, or an endpoint is not a loopback one."""


class SshdUnavailable(SpotbatchError):
    """sshd cannot run here; the message says why (tests skip with it)."""


class ReportError(SpotbatchError):
    """No runs to report on, or a run folder whose files do not parse (the message names the file)."""


class JobFailed(SpotbatchError):
    """Some segments could not be finished (the policy gave up, the budget refused, the worker failed)."""

    exit_code = EXIT_FAILED


class MergeError(SpotbatchError):
    """The segments' outputs are not exactly the input rows, once each."""

    exit_code = EXIT_FAILED


class LeakError(SpotbatchError):
    """Instances of the job are still alive after the job ended and they were terminated."""

    exit_code = EXIT_FAILED


class SimulationError(SpotbatchError):
    """The matrix could not run (a run failed to finish cleanly, or instances were left alive)."""

    exit_code = EXIT_FAILED


class BurstFailed(SpotbatchError):
    """A step failed after launch; the box was terminated and confirmed gone before this was raised."""

    exit_code = EXIT_FAILED


class ParityMismatch(BurstFailed):
    """The box's software differs from this machine's; the message lists the fields."""


class JobInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a job cleanly (its instances ended): `outcome` is the cut job's, for its
    records; the command still ends with exit 130."""

    def __init__(self, outcome: object) -> None:
        super().__init__("interrupted")
        self.outcome = outcome


class UntrustedInput(DoNotRetry, ValueError):
    """A document that is not the JSON it should be (`coordinator/untrusted.py`): whoever may write it (a
    worker, a user, anything sending to the events queue) is not believed; the message names it. A
    ValueError too, as a parser's refusal."""


class StandinError(SpotbatchError):
    """A simulated machine's stand-in (its `docker`) refused or failed a call; it says so as Docker would."""


class JobLeaseHeld(DoNotRetry):
    """Another coordinator holds the job's lease: the message names it and until when."""


class JobLeaseLost(SpotbatchError):
    """Another coordinator took the job's lease over: this one stops, leaving the instances to it."""
