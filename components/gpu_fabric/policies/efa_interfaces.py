"""Policy ``efa-launch-template-interfaces``: :mod:`gpu_fabric.aws.launch_template_rules` over each EFA launch template.

Facts come from the bundled ``DescribeInstanceTypes`` table
(:class:`gpu_fabric.aws.catalog.bundled.BundledInstanceCatalog`): policies run offline and never call AWS.
A launch template that names no ``instanceType`` (several types, listed on the node group) is checked for
the type-independent rules only, and says so.
"""

from __future__ import annotations

from typing import Any, Mapping

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from gpu_fabric.aws.launch_template_rules import efa_interfaces, interface_findings, security_group_findings
from gpu_fabric.findings import Finding
from gpu_fabric.config.shapes import known_str, unknown_paths
from gpu_fabric.policies.engine_wire import resource_of
from gpu_fabric.plan.resource_view import LAUNCH_TEMPLATE_TYPE
from gpu_fabric.policies.reporting import at_path, report_finding

ALLOW_FEWER_EFA_INTERFACES: dict[str, Any] = {
    "allowFewerEfaInterfaces": {
        "type": "boolean",
        "default": False,
        "description": "Accept fewer EFAs than MaximumEfaInterfaces (launch templates and NodeClasses that "
                       "deliberately use a subset of the EFA cards, efaCardIndices).",
    },
}
"""The pack setting both EFA layout policies take (efa-launch-template-interfaces, karpenter-efa-pool)."""


def allows_fewer_efa_interfaces(args: Any) -> bool:
    """The ``allowFewerEfaInterfaces`` setting of the policy being run (default ``False``)."""
    return bool(args.get_config().get("allowFewerEfaInterfaces", False))


def template_findings(props: Mapping[str, Any], allow_fewer: bool = False) -> tuple[list[Finding], str | None]:
    """``(findings, not-applicable reason)`` of the interface plan against the instance type (bundled facts)."""
    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError

    instance_type = known_str(props.get("instanceType"))
    if instance_type is None:
        return [], "the launch template names no instanceType; the instance-type rules cannot be checked here"
    try:
        info = BundledInstanceCatalog().describe([instance_type])[instance_type]
    except UnknownInstanceTypeError:
        return [], f"{instance_type} is not in the bundled instance table"
    return interface_findings(props, info, allow_fewer), None


def _validate(args: ResourceValidationArgs, report_violation: Any) -> None:
    if args.resource_type != LAUNCH_TEMPLATE_TYPE:
        return
    resource = resource_of(args)
    if not efa_interfaces(resource.props):
        return
    # The plan decides every rule below: while part of it is unknown (an Output not yet known at
    # preview), the rules wait for it rather than count a guess.
    waiting = [path for key in ("networkInterfaces", "instanceType") for path in unknown_paths(resource.props.get(key), key)
               if not path.endswith(".securityGroups") and ".securityGroups[" not in path]
    if waiting:
        args.not_applicable(f"the interface plan is not known at preview ({', '.join(waiting[:3])} unknown)")
        return
    # A template without a known instance type is checked for the type-independent rules only,
    # and says so: the type-dependent rules are not applicable, never silently passed.
    findings, skipped = template_findings(resource.props, allows_fewer_efa_interfaces(args))
    findings = [*findings, *security_group_findings(resource.props)]
    for finding in findings:
        report_finding(report_violation, finding, at_path(finding))
    if skipped and not findings:
        args.not_applicable(f"instance-type rules not checked: {skipped}")


efa_launch_template_interfaces = ResourceValidationPolicy(
    name="efa-launch-template-interfaces",
    display_name="EFA launch template interfaces fit the instance type",
    description=(
        "An EFA launch template carries exactly as many EFAs as the instance type's "
        "EfaInfo.MaximumEfaInterfaces, one primary interface at card 0 / device 0 that is not efa-only, no EFA "
        "on a network card without EFA support, at most one EFA per card, no addresses on efa-only "
        "interfaces, and security groups on every interface."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["aws", "efa", "launch-template"],
    config_schema=PolicyConfigSchema(properties=ALLOW_FEWER_EFA_INTERFACES),
    remediation_steps=(
        "Plan the interfaces from the instance facts instead of the network card count: "
        "`gpu-fabric efa-info <type>` prints the plan, and gpu_fabric.aws.node_group.launch_template_inputs "
        "builds it. Card 0 of p6-b300 has no EFA: keep it a plain 'interface' and put 'efa-only' on cards "
        "1-16. Remove address settings from efa-only interfaces, attach the EFA security group to every "
        "interface, and drop vpcSecurityGroupIds from the template."
    ),
    url="https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html",
)
