"""The embedded AWS's VPC endpoints: EC2 deletes a gateway endpoint whose route is gone already; moto
raised InvalidRoute.NotFound (its delete removes each route it made, and fails on one that is missing),
and a stack's `terraform destroy` failed with it once in a CI run. Installed by `moto_main.py`.
"""

from __future__ import annotations

import contextlib
from typing import Any


def install_endpoint_deletes_without_their_routes() -> None:
    """EC2 deletes a gateway endpoint whose route is gone already; moto failed with InvalidRoute.NotFound,
    and a stack's `terraform destroy` with it, once in a CI run."""
    from moto.ec2.exceptions import InvalidRouteError, InvalidRouteTableIdError
    from moto.ec2.models.vpcs import VPCBackend

    delete = VPCBackend.delete_vpc_endpoints

    def without_missing_routes(self: Any, vpce_ids: list[str] | None = None) -> None:
        for vpce_id in vpce_ids or []:
            endpoint = self.vpc_end_points.get(vpce_id)
            if endpoint is None or endpoint.vpc_endpoint_type.lower() == "interface":
                continue
            for route_table_id in endpoint.route_table_ids:
                # its route, or its route table, may be gone already: nothing to undo then
                with contextlib.suppress(InvalidRouteError, InvalidRouteTableIdError):
                    self.delete_route(route_table_id, endpoint.destination_prefix_list_id)
            endpoint.route_table_ids = []
        delete(self, vpce_ids)

    setattr(VPCBackend, "delete_vpc_endpoints", without_missing_routes)  # noqa: B010
