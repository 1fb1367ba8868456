"""Terraform tests need the binary and, offline, a provider mirror; without them they skip and say why."""

from __future__ import annotations

from pathlib import Path

TERRAFORM_DIR = Path(__file__).resolve().parents[2] / "terraform"
MODULES = sorted(p.name for p in (TERRAFORM_DIR / "modules").iterdir() if (p / "main.tf").is_file())
STACKS = sorted(p.name for p in (TERRAFORM_DIR / "stacks").iterdir() if (p / "main.tf").is_file())
