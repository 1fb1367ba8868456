"""Timestamps in AWS answers, parsed without dateutil where they are ISO 8601.

botocore parses every timestamp of an answer with `dateutil.parser.parse`, about 0.17 ms each: a
`DescribeInstances` page carries four or five per instance and a heartbeat listing one per object, so at
1,000 instances dateutil alone took a third of the coordinator's CPU per cycle. `datetime.fromisoformat`
reads the ISO 8601 form the query and JSON protocols use (`2026-12-04T22:00:00.000Z`) in microseconds;
anything else (S3's RFC 822 headers, epoch numbers, an ISO string without a zone) goes to botocore's own
parser, so every answer parses to the same instant as before.

Usage::

    session = boto3.session.Session(...)
    use_fast_timestamps(session)          # before its clients are made
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.utils import parse_timestamp


def fast_timestamp(value: Any) -> datetime:
    """`value` as an aware datetime: ISO 8601 with a zone by `fromisoformat`, the rest by botocore."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None:
                return parsed
    answer: datetime = parse_timestamp(value)
    return answer


def use_fast_timestamps(session: Any) -> None:
    """Every client `session` (a boto3 session) makes from now on parses timestamps with `fast_timestamp`."""
    factory = session._session.get_component("response_parser_factory")
    factory.set_parser_defaults(timestamp_parser=fast_timestamp)
