"""The project's IAM documents audited against AWS's own definitions of actions, resources and condition keys.

`parliament` (duo-labs, on PyPI) knows, from AWS's service authorization reference, which actions exist,
which resource types each takes and which condition keys each supports. `make check` runs it, from its own
venv, on the documents of docs/aws/ (placeholders filled with example names: it flags a placeholder ARN as
invalid) and on the coordinator's and the workers' policies with a customer KMS key, one statement at a
time, so that each finding names its statement. A finding fails the check unless it is argued below, by
document, statement and issue; an argument nothing needs any more fails it too.

Usage::

    python -m coordinator.stack.policy_audit --parliament-python .cache/parliament-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import replace
from typing import Any

from coordinator.paths import REPO_ROOT
from coordinator.stack.iam_documents import render
from coordinator.stack.permissions import coordinator_policy
from coordinator.stack.policy_docs import placeholder_arns
from coordinator.stack.worker_permissions import worker_job_policy

EXAMPLE_NAMES = {  # docs/aws placeholder -> a well-formed example (parliament checks ARN formats)
    "ACCOUNT_ID": "123456789012",
    "REGION": "us-east-1",
    "STACK": "spotbatch",
    "BUCKET": "spotbatch-example",
    "JOB_ID": "job-1",
    "SUFFIX": "20261205",
    "lt-SPOT": "lt-0123456789abcdef0",
    "lt-ON_DEMAND": "lt-0fedcba9876543210",
    "KEY_ID": "1234abcd-12ab-34cd-56ef-1234567890ab",
}
RUN_INSTANCES_SPLIT = (
    "RunInstances is authorized per resource: AWS checks each resource of a launch against every statement, "
    "and the two launch statements together cover the instance, volume and network interface (only from the "
    "stack's templates, by the ArnLike ec2:LaunchTemplate condition) and the template, subnet, security "
    "group, image and spot request; the condition is kept off the parts on purpose, as in AWS's example "
    "'Launch instances from a launch template'. parliament judges each statement alone."
)
ARGUED = {  # (document, statement id, parliament issue) -> why the finding stands
    ("coordinator-policy.json", "LaunchFromTheStackTemplates", "RESOURCE_MISMATCH"): RUN_INSTANCES_SPLIT,
    ("coordinator-policy.json", "LaunchWithTheStackParts", "RESOURCE_MISMATCH"): RUN_INSTANCES_SPLIT,
    ("worker-trust-policy.json", "", "MALFORMED"): (
        "a role's trust policy names a Principal and no Resource: parliament reads every document as an "
        "identity policy"
    ),
}
# run by the parliament venv's python: [(document, sid, statement)] on stdin, findings out
AUDIT = """
import json, sys
from parliament import analyze_policy_string
found = []
for document, sid, statement in json.load(sys.stdin):
    policy = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    for f in analyze_policy_string(policy).findings:
        found.append({"document": document, "sid": sid, "issue": f.issue, "detail": f.detail})
print(json.dumps(found, default=str))
"""


def documents() -> dict[str, dict[str, Any]]:
    """docs/aws/*.json with example names, and both policies with a customer KMS key."""
    docs = {}
    for path in sorted((REPO_ROOT / "docs" / "aws").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        for placeholder, example in EXAMPLE_NAMES.items():
            text = text.replace(placeholder, example)
        docs[path.name] = json.loads(text)
    keyed = replace(placeholder_arns(), kms_key_arn="arn:aws:kms:REGION:ACCOUNT_ID:key/KEY_ID")
    for name, policy in (
        ("coordinator-policy.json (KMS key)", render(coordinator_policy(keyed))),
        ("worker-policy.json (KMS key)", render(worker_job_policy(keyed, "JOB_ID"))),
    ):
        text = json.dumps(policy)
        for placeholder, example in EXAMPLE_NAMES.items():
            text = text.replace(placeholder, example)
        docs[name] = json.loads(text)
    return docs


def audit(parliament_python: str) -> list[dict[str, Any]]:
    """parliament's findings, one statement at a time."""
    statements = [
        (name, str(statement.get("Sid", "")), statement)
        for name, document in documents().items()
        for statement in document["Statement"]
    ]
    result = subprocess.run(
        [parliament_python, "-c", AUDIT],
        input=json.dumps(statements),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"parliament failed: {result.stderr.strip()[-500:]}")
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coordinator.stack.policy_audit", description=__doc__)
    parser.add_argument("--parliament-python", required=True, help="the python of a venv with parliament")
    args = parser.parse_args(argv)
    findings = audit(args.parliament_python)

    def key(finding: dict[str, Any]) -> tuple[str, str, str]:  # "x.json (KMS key)" is argued as x.json
        return finding["document"].split(" ")[0], finding["sid"], finding["issue"]

    seen = {key(f) for f in findings}
    unargued = [f for f in findings if key(f) not in ARGUED]
    for f in findings:
        verdict = "argued" if key(f) in ARGUED else "FINDING"
        print(f"{verdict:8} {f['document']} {f['sid'] or '(no Sid)'}: {f['issue']}: {f['detail']}")
    stale = sorted(set(ARGUED) - seen)
    for document, sid, issue in stale:
        print(f"STALE    {document} {sid}: {issue} is argued but no longer found: remove its argument")
    print(
        f"parliament: {len(findings)} finding(s), {len(unargued)} not argued, {len(stale)} stale argument(s)"
    )
    return 1 if unargued or stale else 0


if __name__ == "__main__":
    sys.exit(main())
