"""`spotbatch policy`: the IAM policy the user who runs jobs needs, with the stack's own ARNs filled in.

Reads the stack's saved outputs (its account is in its ARNs; no AWS call is made), and prints the policy as
JSON (`--explain`: a table of every action and why; `--worker JOB`: a job's worker policy instead).
`--write-docs DIR` writes the policies with placeholders and the table (docs/aws/ is made this way).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coordinator.commands.options import Subcommands


def add_parser(commands: Subcommands) -> None:
    policy = commands.add_parser("policy", help="the IAM policy a user needs to run jobs on the stack")
    policy.add_argument(
        "--outputs", type=Path, help="the stack's saved outputs (default runs/infra/aws/outputs.json)"
    )
    policy.add_argument("--worker", metavar="JOB_ID", help="print this job's worker policy instead")
    policy.add_argument("--explain", action="store_true", help="a table of every action and why, not JSON")
    policy.add_argument("--write-docs", type=Path, metavar="DIR", help="write the policies with placeholders")
    policy.set_defaults(handler=policy_command)


def policy_command(args: argparse.Namespace) -> int:
    from coordinator.paths import runs_dir
    from coordinator.stack import permissions, policy_docs, worker_permissions
    from coordinator.stack.iam_documents import explain, render
    from coordinator.stack.outputs import StackOutputs

    if args.write_docs is not None:
        args.write_docs.mkdir(parents=True, exist_ok=True)
        for name, text in policy_docs.docs_files().items():
            (args.write_docs / name).write_text(text, encoding="utf-8")
            print(f"wrote {args.write_docs / name}")
        return 0
    stack = StackOutputs.read(args.outputs or runs_dir() / "infra" / "aws" / "outputs.json")
    account = stack.repository_arn.split(":")[4]  # the stack's own account, as its ARNs name it
    arns = permissions.arns_for(stack, account)
    statements = (
        worker_permissions.worker_job_policy(arns, args.worker)
        if args.worker
        else permissions.coordinator_policy(arns)
    )
    print(explain(statements) if args.explain else json.dumps(render(statements), indent=2))
    return 0
