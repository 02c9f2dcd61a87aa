"""Which catalog answers: EC2 first and the bundled table second, or the one set for this context.

:func:`describe_with_fallback` asks EC2 and falls back to the bundled table when no credentials (or
no region / no reachable endpoint) are available, and says which source answered
(:class:`CatalogSource`). :func:`use_catalog` sets the catalog components use in the current context
(``gpu-fabric render`` sets the bundled table, so an offline render never calls EC2).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Sequence

from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.catalog.ec2 import Ec2InstanceCatalog
from gpu_fabric.aws.catalog.types import InstanceCatalog


@dataclass(frozen=True)
class CatalogSource:
    """Which catalog answered, and why the bundled table was used when it was."""

    name: str  # "ec2" | "bundled"
    detail: str = ""

    @property
    def is_fallback(self) -> bool:
        return self.name == "bundled"

    def __str__(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name


def _fallback_errors() -> tuple[type[BaseException], ...]:
    from botocore.exceptions import (
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    return (NoCredentialsError, PartialCredentialsError, NoRegionError, EndpointConnectionError, ConnectTimeoutError)


def _fallback_reason(ec2: Ec2InstanceCatalog, error: BaseException) -> str:
    """Say in words why EC2 was not asked, keeping botocore's exception name for searching."""
    from botocore.exceptions import NoCredentialsError, NoRegionError, PartialCredentialsError

    if isinstance(error, NoCredentialsError):
        reason = "no AWS credentials found"
    elif isinstance(error, PartialCredentialsError):
        reason = f"incomplete AWS credentials ({error})"
    elif isinstance(error, NoRegionError):
        # The client is never created without a region, so credentials were not looked at yet.
        reason = "no AWS region configured"
        if ec2.session.get_credentials() is None:
            reason = "no AWS credentials found and no AWS region configured"
    else:
        reason = f"EC2 endpoint unreachable ({error})"
    return f"{reason} [{type(error).__name__}]"


def describe_with_fallback(
    instance_types: Sequence[str],
    *,
    region: str | None = None,
    profile: str | None = None,
    endpoint_url: str | None = None,
    offline: bool = False,
) -> tuple[dict[str, dict], CatalogSource]:
    """Describe ``instance_types`` through EC2, or the bundled table when EC2 cannot be asked.

    Falls back on missing/partial credentials, no configured region, or an unreachable endpoint;
    ``offline=True`` skips EC2. Unknown types raise :class:`UnknownInstanceTypeError` from
    whichever source answered; other AWS errors (e.g. AccessDenied) propagate.
    """
    bundled = BundledInstanceCatalog()
    if offline:
        return bundled.describe(instance_types), CatalogSource("bundled", "offline")
    ec2 = Ec2InstanceCatalog(region=region, profile=profile, endpoint_url=endpoint_url)
    try:
        return ec2.describe(instance_types), CatalogSource("ec2", ec2.region or "")
    except _fallback_errors() as error:
        return bundled.describe(instance_types), CatalogSource("bundled", _fallback_reason(ec2, error))


_ACTIVE_CATALOG: "contextvars.ContextVar[InstanceCatalog | None]" = contextvars.ContextVar("gpu_fabric_catalog", default=None)


def use_catalog(catalog: InstanceCatalog) -> None:
    """Make ``catalog`` the one components use in the current context (:func:`explicit_catalog`).

    ``gpu-fabric render`` sets the bundled table here so that an offline render never calls EC2,
    even on a machine that has AWS credentials; otherwise components ask EC2 with the stack's own
    settings (``gpu_fabric.resources.stack_catalog``).
    """
    _ACTIVE_CATALOG.set(catalog)


def explicit_catalog() -> InstanceCatalog | None:
    """The catalog set with :func:`use_catalog` in this context, if any."""
    return _ACTIVE_CATALOG.get()
