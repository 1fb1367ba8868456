"""Which AWS the commands talk to: real AWS (the usual credential chain) or a local emulator (its own fake
credentials, on a loopback endpoint only).

Credentials must never reach an endpoint they do not belong to. An emulator endpoint is parsed with the
parser of the HTTP client that will connect to it (urllib3, under botocore) and must be a plain
`http://HOST:PORT` whose host is a loopback address or `localhost`: no user info, no path, no query, no
fragment, no backslash. Against an emulator only `EMULATOR_CREDENTIALS` are used, never the environment's
or a profile's. The region is the flag, else `$AWS_REGION`, else `$AWS_DEFAULT_REGION`, else the profile's;
without any, the command says how to give one.

Usage::

    target = AwsTarget.real(region_flag)                      # or AwsTarget.emulator(endpoint, region)
    target = AwsTarget.chosen(args.region, args.endpoint)     # a command's --region / --endpoint
    ec2 = target.client("ec2")                                # adaptive retries, the right endpoint
    target.env()                                              # for Terraform and child processes
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from coordinator.errors import ConfigError, EmulatorError
from coordinator.stack.endpoint_rules import aws_endpoint_from_environment, is_loopback
from coordinator.stack.timestamps import use_fast_timestamps

EMULATOR_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
EMULATOR_REGION = "us-east-1"
# botocore's adaptive mode: client-side rate limiting on top of standard retries (throttling, 5xx); the
# attempts include the first call. A call that still fails after these is the caller's to handle.
MAX_ATTEMPTS = 8
REGION_HINT = "give --region, or set AWS_REGION (or AWS_DEFAULT_REGION), or a region in your AWS profile"
# where credentials can come from besides the ones we pass: none of these may reach an emulator's process
CREDENTIAL_SOURCES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CREDENTIAL_EXPIRATION",
)


def require_loopback(endpoint: str) -> str:
    """The endpoint, if it is a plain `http(s)://HOST:PORT` on this machine; else `EmulatorError`."""
    refused = EmulatorError(
        f"refusing emulator endpoint {endpoint!r}: only http://HOST:PORT with HOST 127.0.0.0/8, ::1 or "
        "localhost, nothing else in the URL (emulator credentials never leave this machine)"
    )
    if (
        not isinstance(endpoint, str)
        or any(c in endpoint for c in "\\@ \t\r\n")
        or endpoint != endpoint.strip()
    ):
        raise refused
    try:
        url = parse_url(endpoint)
    except (LocationParseError, ValueError):
        raise refused from None
    if url.scheme not in ("http", "https") or url.auth or url.query or url.fragment or url.port is None:
        raise refused
    if url.path not in (None, "", "/"):
        raise refused
    if not is_loopback(url.host or ""):
        raise refused
    return endpoint.rstrip("/")


def resolve_region(flag: str | None) -> str:
    """The flag, else the environment, else the profile's region; `ConfigError` without any."""
    region = flag or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        import boto3

        region = boto3.session.Session().region_name
    if not region:
        raise ConfigError(f"no AWS region: {REGION_HINT}")
    return region


def region_or_emulators(flag: str | None) -> str:
    """`resolve_region`, else the emulator's region: for what needs no AWS configuration (an emulator,
    a price look-up)."""
    try:
        return resolve_region(flag)
    except ConfigError:
        return EMULATOR_REGION


@dataclass(frozen=True, slots=True)
class AwsTarget:
    region: str
    endpoint: str | None = None  # None: real AWS (botocore's own endpoint rules, $AWS_ENDPOINT_URL included)
    # an emulator's access key and secret: the fake pair, or a user the simulator made in the emulator
    credentials: tuple[str, str] = (
        EMULATOR_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        EMULATOR_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )

    @classmethod
    def real(cls, region_flag: str | None = None) -> AwsTarget:
        """AWS through the credential chain; an `$AWS_ENDPOINT_URL*` there is checked first (HTTPS, or this
        machine: `endpoint_rules.py`), since botocore sends the real credentials to it."""
        aws_endpoint_from_environment()
        return cls(resolve_region(region_flag))

    @classmethod
    def chosen(cls, region_flag: str | None, endpoint: str | None) -> AwsTarget:
        """What a command's `--region` and `--endpoint` name: AWS through the credential chain, or a local
        emulator as the user whose keys are in `$SPOTBATCH_EMULATOR_ACCESS_KEY_ID` and
        `$SPOTBATCH_EMULATOR_SECRET_ACCESS_KEY` (a user made in that emulator), else as the emulator's own
        fake pair. Never the `AWS_*` keys: those may be real ones."""
        if endpoint is None:
            return cls.real(region_flag)
        region = region_or_emulators(region_flag)
        key, secret = (
            os.environ.get(f"SPOTBATCH_EMULATOR_{n}") for n in ("ACCESS_KEY_ID", "SECRET_ACCESS_KEY")
        )
        return cls.emulator(endpoint, region, (key, secret) if key and secret else None)

    @classmethod
    def emulator(
        cls, endpoint: str, region: str = EMULATOR_REGION, credentials: tuple[str, str] | None = None
    ) -> AwsTarget:
        if credentials is None:
            return cls(region, require_loopback(endpoint))
        return cls(region, require_loopback(endpoint), credentials)

    def in_region(self, region: str) -> AwsTarget:
        """The same AWS (or emulator, with its keys) in another region: the Price List API's, say."""
        return AwsTarget(region, self.endpoint, self.credentials)

    def with_credentials(self, access_key: str, secret_key: str) -> AwsTarget:
        """The same emulator as another of its users (real AWS: refused, credentials come from the chain)."""
        if self.endpoint is None:
            raise ConfigError(
                "credentials are only given for an emulator; real AWS uses the credential chain"
            )
        return AwsTarget(self.region, self.endpoint, (access_key, secret_key))

    @property
    def is_emulator(self) -> bool:
        return self.endpoint is not None

    def session(self) -> Any:
        """A boto3 session of this target whose clients parse timestamps fast (`timestamps.py`)."""
        import boto3

        if self.endpoint is None:
            session = boto3.session.Session(region_name=self.region)
        else:
            session = boto3.session.Session(
                aws_access_key_id=self.credentials[0],
                aws_secret_access_key=self.credentials[1],
                region_name=self.region,
            )
        use_fast_timestamps(session)
        return session

    @property
    def describe(self) -> str:
        """What the commands talk to: the emulator, the endpoint the environment names, or AWS."""
        if self.endpoint:
            return f"emulator at {self.endpoint} ({self.region})"
        named = aws_endpoint_from_environment()
        return f"endpoint {named} ({self.region})" if named else f"AWS {self.region}"

    def client(self, service: str, *, max_attempts: int = MAX_ATTEMPTS, **config: Any) -> Any:
        """A client of `service` on this target: adaptive retries; path-style S3 only on an emulator."""
        from botocore.config import Config

        options: dict[str, Any] = {
            "retries": {"mode": "adaptive", "total_max_attempts": max_attempts},
            **config,
        }
        if service == "s3" and self.endpoint is not None:
            options["s3"] = {"addressing_style": "path"}
        return self.session().client(service, endpoint_url=self.endpoint, config=Config(**options))

    def env(self) -> dict[str, str]:
        """What Terraform and child processes add to their environment: the region, and for an emulator its
        endpoint and fake credentials."""
        env = {"AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region}
        if self.endpoint is not None:
            env |= {
                "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_ACCESS_KEY_ID": self.credentials[0],
                "AWS_SECRET_ACCESS_KEY": self.credentials[1],
            }
        return env

    def terraform_variables(self) -> dict[str, object]:
        """The stack's `endpoint` and `emulator_credentials` for an emulator; nothing for real AWS."""
        if self.endpoint is None:
            return {}
        access_key, secret_key = self.credentials
        return {
            "endpoint": self.endpoint,
            "emulator_credentials": {"access_key": access_key, "secret_key": secret_key},
        }

    def process_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (the current environment) for a child process: against an emulator every other source of
        credentials is removed first, so that a real key or profile cannot be used on its endpoint."""
        env = dict(os.environ if base is None else base)
        if self.endpoint is not None:
            for name in CREDENTIAL_SOURCES:
                env.pop(name, None)
        return env | self.env()
