"""Policy b: an EFA launch template's interfaces fit its instance type.

Facts come from the bundled ``DescribeInstanceTypes`` table (:class:`gpu_fabric.aws.catalog.bundled.BundledInstanceCatalog`):
policies run offline and never call AWS. The interface rules themselves are
:func:`gpu_fabric.aws.efa.validate_plan` -- EFA count from ``EfaInfo.MaximumEfaInterfaces`` (never
``MaximumNetworkCards``), exactly one primary at card 0 / device 0 that is not ``efa-only``, no EFA
on a card without EFA, at most one EFA per card, valid indices, no addresses on ``efa-only`` -- and
this module adds what an EKS managed node group needs of the template: security groups on every
interface and none at template level.

A launch template that names no ``instanceType`` (several types, listed on the node group) is
checked for the type-independent rules only.
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

from gpu_fabric.policies._props import (
    LAUNCH_TEMPLATE_TYPE,
    as_list,
    as_mapping,
    efa_interfaces,
    is_unknown,
    known_str,
    resource_of,
    unknown_paths,
)

# Launch-template-level security group inputs; EC2 refuses them beside networkInterfaces.
TEMPLATE_LEVEL_SECURITY_GROUP_KEYS = ("vpcSecurityGroupIds", "securityGroupNames")


def security_group_findings(props: Mapping[str, Any]) -> list[str]:
    """Every EFA-relevant security-group problem of a launch template's props."""
    problems = []
    for position, interface in enumerate(as_list(props.get("networkInterfaces"))):
        interface = as_mapping(interface)
        groups = interface.get("securityGroups")
        if not is_unknown(groups) and not as_list(groups):
            where = f"network card {interface.get('networkCardIndex', 0)}, device {interface.get('deviceIndex', 0)}"
            problems.append(
                f"{where}: the interface has no securityGroups; every interface of an EFA launch template needs "
                "the EFA security group (all traffic to and from itself)"
            )
    for key in TEMPLATE_LEVEL_SECURITY_GROUP_KEYS:
        value = props.get(key)
        if is_unknown(value) or as_list(value):
            problems.append(
                f"{key} is set, but a launch template that defines networkInterfaces must put its security "
                "groups on the interfaces (EKS managed node groups reject both)"
            )
    return problems


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


def interface_findings(props: Mapping[str, Any], allow_fewer: bool = False) -> tuple[list[str], str | None]:
    """``(problems, not-applicable reason)`` of the interface plan against the instance type."""
    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError
    from gpu_fabric.aws.efa import validate_plan

    interfaces = [as_mapping(i) for i in as_list(props.get("networkInterfaces"))]
    instance_type = known_str(props.get("instanceType"))
    if instance_type is None:
        return [], "the launch template names no instanceType; the instance-type rules cannot be checked here"
    try:
        info = BundledInstanceCatalog().describe([instance_type])[instance_type]
    except UnknownInstanceTypeError:
        return [], f"{instance_type} is not in the bundled instance table"
    efa_count = None
    if allow_fewer:
        efa_count = min(len(efa_interfaces(props)), int(((info.get("NetworkInfo") or {}).get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0))) or None
    return [f"{instance_type}: {problem}" for problem in validate_plan(info, interfaces, efa_count=efa_count)], None


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
    allow_fewer = allows_fewer_efa_interfaces(args)
    # A template without a known instance type is checked for the type-independent rules only,
    # and says so: the type-dependent rules are not applicable, never silently passed.
    problems, skipped = interface_findings(resource.props, allow_fewer)
    problems = [*problems, *security_group_findings(resource.props)]
    for problem in problems:
        report_violation(problem, None)
    if skipped and not problems:
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
