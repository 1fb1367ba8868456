"""Where credentials may go: this machine, or another host over HTTPS only.

botocore sends the access key id, the session token and a signature of every request to whatever
`$AWS_ENDPOINT_URL` (or `$AWS_ENDPOINT_URL_<SERVICE>`) names, and the Lambda client sends its API key, a
bearer token that can launch, list and terminate GPU machines, to `$LAMBDA_API_URL`. Such an endpoint is
honoured when it is on this machine (a loopback address or `localhost`: an emulator, a stand-in; HTTP or
HTTPS) or HTTPS to any other host; plain HTTP to another host would hand the credentials to anyone on the
path, and is refused in one line that names the variable and the value. A URL with user information is
refused too (a second credential in a URL ends up in logs).

Usage::

    check_credential_endpoint(url, "$LAMBDA_API_URL")        # the URL, or ConfigError
    aws_endpoint_from_environment()                          # the named AWS endpoint, checked; None
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from coordinator.errors import ConfigError

AWS_ENDPOINT_ENV = "AWS_ENDPOINT_URL"  # and AWS_ENDPOINT_URL_<SERVICE>, which botocore reads as well


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_credential_endpoint(url: str, what: str) -> str:
    """`url` if credentials may be sent there (see the module docstring); else `ConfigError` naming `what`."""
    try:
        parsed = parse_url(url.strip())
    except (LocationParseError, ValueError):
        raise ConfigError(f"{what}={url}: not a URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"{what}={url}: use https://HOST (or http:// to this machine)")
    if parsed.auth:
        raise ConfigError(f"{what}={url}: remove the user information from the URL")
    if parsed.scheme == "http" and not is_loopback(parsed.host):
        raise ConfigError(
            f"{what}={url}: plain HTTP to another host would carry the credentials in clear text; "
            "use https://, or an endpoint on this machine (127.0.0.1, ::1, localhost)"
        )
    return url.strip().rstrip("/")


def aws_endpoint_from_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """Every `AWS_ENDPOINT_URL*` variable checked; the general one (else the first per-service one) that
    the commands then talk to instead of AWS, or None."""
    environ = os.environ if environ is None else environ
    named = {k: v for k, v in sorted(environ.items()) if k.startswith(AWS_ENDPOINT_ENV) and v.strip()}
    for name, url in named.items():
        check_credential_endpoint(url, f"${name}")
    if not named:
        return None
    return named.get(AWS_ENDPOINT_ENV, next(iter(named.values()))).strip().rstrip("/")
