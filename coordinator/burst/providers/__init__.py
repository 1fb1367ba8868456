"""GPU clouds rented by the hour for a burst: one file per provider behind `GpuCloud` (base.py)."""
