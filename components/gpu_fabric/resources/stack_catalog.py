"""Instance facts for components, from the stack's own AWS settings.

A component's EC2 questions go where its AWS resources go: the region of an explicit AWS provider
in ``opts`` (``aws.get_region`` through that provider), else the stack's ``aws:region`` and
``aws:profile``. The source is logged with ``pulumi.log``. Without AWS credentials the bundled
table answers, with a warning; with credentials present a failing call is an error, not a silent
fallback to possibly stale facts. ``gpu-fabric render`` sets the bundled table with
``catalog.selection.use_catalog``, which this honours, so a render never calls EC2.
"""

import copy
import threading
from typing import Any, Mapping, Optional, Sequence

import pulumi

from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
from gpu_fabric.aws.catalog.ec2 import Ec2InstanceCatalog
from gpu_fabric.aws.catalog.selection import explicit_catalog
from gpu_fabric.aws.catalog.table import bundled_table_origin
from gpu_fabric.aws.catalog.types import InstanceCatalog, UnknownInstanceTypeError


class InstanceFactsError(RuntimeError):
    """EC2 could not be asked although credentials are present (a broken region, endpoint or permission)."""


def aws_provider(opts: Optional[pulumi.ResourceOptions]) -> Optional[pulumi.ProviderResource]:
    """The explicit AWS provider of ``opts`` (``provider=`` or ``providers["aws"]``/a list entry), if any."""
    if opts is None:
        return None
    candidates: list[Any] = [opts.provider]
    providers = opts.providers
    if isinstance(providers, Mapping):
        candidates.append(providers.get("aws"))
    elif providers:
        candidates.extend(providers)
    for provider in candidates:
        if isinstance(provider, pulumi.ProviderResource) and getattr(provider, "package", None) == "aws":
            return provider
    return None


class StackInstanceCatalog:
    """EC2 in the stack's (or the explicit provider's) region and profile; the bundled table without credentials.

    One instance serves a whole program per (region, profile) (:func:`stack_catalog`), and it keeps
    every answer: each instance type is asked at most once per region, whichever component or
    ``Output`` resolution asks (a program re-plans its node groups when an ``Output`` resolves), and
    concurrent askers wait for the one call in flight. The bundled-table warning is logged once.
    """

    def __init__(self, region: Optional[str], profile: Optional[str], source: str) -> None:
        self.region = region
        self.profile = profile
        self.source = source
        """Where the region came from, as the log says it."""
        self._lock = threading.Lock()
        self._answers: dict[str, dict] = {}
        self._ec2: Optional[Ec2InstanceCatalog] = None
        self._credentials: Optional[bool] = None
        self._warned = False

    def _client(self) -> Ec2InstanceCatalog:
        if self._ec2 is None:
            self._ec2 = Ec2InstanceCatalog(region=self.region, profile=self.profile)
        return self._ec2

    def describe(self, instance_types: Sequence[str]) -> dict[str, dict]:
        wanted = list(dict.fromkeys(instance_types))
        with self._lock:  # held across the EC2 call: a second asker waits for this answer
            missing = [name for name in wanted if name not in self._answers]
            if missing:
                self._answers.update(self._ask(missing))
            return {name: copy.deepcopy(self._answers[name]) for name in wanted}

    def _ask(self, names: list[str]) -> dict[str, dict]:
        ec2 = self._client()
        if self._credentials is None:
            self._credentials = ec2.session.get_credentials() is not None
        if not self._credentials:
            if not self._warned:
                self._warned = True
                pulumi.log.warn(f"instance facts: no AWS credentials found, so they come from the bundled table "
                                f"({bundled_table_origin().describe()}; it may lag EC2); configure credentials to "
                                "ask EC2")
            return BundledInstanceCatalog().describe(names)
        try:
            items = ec2.describe(names)
        except UnknownInstanceTypeError:
            raise
        except Exception as error:  # noqa: BLE001 - every botocore failure means the same to the user
            raise InstanceFactsError(
                f"instance facts for {', '.join(names)}: EC2 DescribeInstanceTypes failed in region "
                f"{ec2.region or '(none)'} ({self.source}) although AWS credentials are present: "
                f"{type(error).__name__}: {error}") from None
        pulumi.log.info(f"instance facts for {', '.join(names)}: EC2 DescribeInstanceTypes in {ec2.region} "
                        f"({self.source})")
        return items


# One catalog per (region, profile) for the whole program (a Pulumi program is one process).
_catalogs: dict[tuple[Optional[str], Optional[str]], StackInstanceCatalog] = {}
_catalogs_lock = threading.Lock()


def shared_catalog(region: Optional[str], profile: Optional[str], source: str) -> StackInstanceCatalog:
    """The program's one :class:`StackInstanceCatalog` for ``region`` and ``profile`` (created on first use)."""
    with _catalogs_lock:
        catalog = _catalogs.get((region, profile))
        if catalog is None:
            catalog = _catalogs[(region, profile)] = StackInstanceCatalog(region, profile, source)
        return catalog


def forget_shared_catalogs() -> None:
    """Drop every shared catalog and its answers (tests, benchmarks: one "program" each)."""
    with _catalogs_lock:
        _catalogs.clear()


def stack_catalog(opts: Optional[pulumi.ResourceOptions] = None) -> InstanceCatalog:
    """The catalog a component uses when none is given (see the module docstring)."""
    chosen = explicit_catalog()
    if chosen is not None:
        return chosen
    config = pulumi.Config("aws")
    profile = config.get("profile")
    provider = aws_provider(opts)
    if provider is not None:
        import pulumi_aws as aws

        result = aws.get_region(opts=pulumi.InvokeOptions(provider=provider))
        return shared_catalog(result.region or result.name, profile, f"the region of AWS provider {provider._name}")
    stack_region = config.get("region")
    source = "the stack's aws:region" if stack_region else "no aws:region set; boto3's default region"
    return shared_catalog(stack_region, profile, source)
