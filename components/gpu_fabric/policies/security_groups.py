"""Policy ``efa-security-group-self-rules``: :func:`gpu_fabric.aws.security_group_rules.self_rule_findings`
over every security group that guards EFA interfaces in a stack.

The EFA security groups are found from the EFA launch templates (those with ``efa``/``efa-only`` interfaces):

* security groups registered by the same component as the launch template (``EfaNodeGroup``
  registers the group, its two self rules and the template together);
* security groups the template's ``networkInterfaces`` depend on (property dependencies; an EFA
  domain's shared group, registered by ``EfaDomain``);
* security groups tagged ``gpu-fabric.io/efa-security-group`` (hand-written stacks).

Rules come in three forms, all supported: inline ``ingress``/``egress`` blocks with ``self: true``
on ``aws:ec2/securityGroup:SecurityGroup``; ``aws:vpc/securityGroupIngressRule`` /
``securityGroupEgressRule`` resources (``referencedSecurityGroupId``); and
``aws:ec2/securityGroupRule:SecurityGroupRule`` (``type`` ingress/egress, ``self: true`` or
``sourceSecurityGroupId``).

Preview-time limitation: a new security group's id is unknown at preview, so a rule's
``securityGroupId`` and ``referencedSecurityGroupId`` cannot be compared as values. A rule is tied
to its group by the engine's property dependencies when it sends them (``AnalyzeStack`` does), and
otherwise by being registered under the same parent as exactly one security group; two unknown ids
on such a sibling rule count as "itself". Launch templates whose groups are outside the stack
(known ``sg-...`` ids) cannot be checked here.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from pulumi_policy import EnforcementLevel, Severity, StackValidationArgs, StackValidationPolicy

from gpu_fabric.aws.security_group_rules import GroupRule, self_rule_findings
from gpu_fabric.config import constants
from gpu_fabric.config.shapes import as_list, as_mapping, is_unknown, known_str, truthy
from gpu_fabric.policies.engine_wire import stack_resources
from gpu_fabric.plan.resource_view import SECURITY_GROUP_TYPE, is_efa_launch_template, Resource, siblings
from gpu_fabric.findings import Finding
from gpu_fabric.plan.karpenter_resources import efa_node_classes, node_class_security_groups
from gpu_fabric.policies.reporting import report_finding

EFA_SECURITY_GROUP_TAG = constants.EFA_SECURITY_GROUP_TAG
INGRESS_RULE_TYPE = constants.INGRESS_RULE_TYPE
EGRESS_RULE_TYPE = constants.EGRESS_RULE_TYPE
LEGACY_RULE_TYPE = constants.LEGACY_RULE_TYPE
ALL_PROTOCOLS = ("-1", "all")


def _all_protocols(value: Any) -> bool:
    # An unknown protocol may be ``-1``: the "no all-protocols self rule" refusal waits for it.
    return is_unknown(value) or known_str(value) in ALL_PROTOCOLS or value == -1


def efa_security_groups(resources: Sequence[Resource]) -> list[Resource]:
    """The security groups that guard EFA interfaces (see the module docstring)."""
    found: dict[str, Resource] = {}
    by_urn = {r.urn: r for r in resources}
    for template in resources:
        if is_efa_launch_template(template):
            for group in siblings(template, resources, SECURITY_GROUP_TYPE):
                found[group.urn] = group
            # Groups the interfaces reference (a domain's shared group lives outside the template's component).
            for urn in template.property_dependencies.get("networkInterfaces", ()):
                if urn in by_urn and by_urn[urn].type == SECURITY_GROUP_TYPE:
                    found[urn] = by_urn[urn]
    # Karpenter pools: the groups an EFA EC2NodeClass selects.
    for node_class in efa_node_classes(resources):
        for group in node_class_security_groups(node_class, resources):
            found[group.urn] = group
    for group in resources:
        if group.type == SECURITY_GROUP_TYPE and EFA_SECURITY_GROUP_TAG in as_mapping(group.props.get("tags")):
            found[group.urn] = group
    return list(found.values())


def _target_group(rule: Resource, key: str, groups: Sequence[Resource], resources: Sequence[Resource]) -> Optional[Resource]:
    """The security group whose id the rule's input ``key`` holds."""
    dependencies = rule.property_dependencies.get(key)
    if dependencies:
        return next((g for g in groups if g.urn in dependencies), None)
    sibling_groups = [g for g in resources if g.type == SECURITY_GROUP_TYPE and g.parent and g.parent == rule.parent]
    if len(sibling_groups) == 1 and sibling_groups[0] in groups:
        return sibling_groups[0]
    return None


def _refers_to_itself(rule: Resource, own_key: str, other_key: str, group: Resource) -> bool:
    dependencies = rule.property_dependencies.get(other_key)
    if dependencies:
        return group.urn in dependencies
    own, other = rule.props.get(own_key), rule.props.get(other_key)
    if is_unknown(own) and is_unknown(other):
        return True  # both the one sibling group's unknown id (see the module docstring)
    return known_str(other) is not None and known_str(other) == known_str(own)


def _rules(group: Resource, resources: Sequence[Resource], groups: Sequence[Resource]) -> Iterable[GroupRule]:
    """Every rule of ``group``: inline blocks, then rule resources."""
    for direction in ("ingress", "egress"):
        for rule in as_list(group.props.get(direction)):
            rule = as_mapping(rule)
            cidrs = [str(c) for c in [*as_list(rule.get("cidrBlocks")), *as_list(rule.get("ipv6CidrBlocks"))] if known_str(c)]
            yield GroupRule(direction, _all_protocols(rule.get("protocol")), truthy(rule.get("self")), tuple(cidrs))
    for rule in resources:
        if rule.type in (INGRESS_RULE_TYPE, EGRESS_RULE_TYPE):
            if _target_group(rule, "securityGroupId", groups, resources) is not group:
                continue
            direction = "ingress" if rule.type == INGRESS_RULE_TYPE else "egress"
            self_rule = "referencedSecurityGroupId" in rule.props and _refers_to_itself(
                rule, "securityGroupId", "referencedSecurityGroupId", group)
            cidrs = [c for c in (known_str(rule.props.get("cidrIpv4")), known_str(rule.props.get("cidrIpv6"))) if c]
            yield GroupRule(direction, _all_protocols(rule.props.get("ipProtocol")), self_rule, tuple(cidrs))
        elif rule.type == LEGACY_RULE_TYPE:
            if _target_group(rule, "securityGroupId", groups, resources) is not group:
                continue
            self_rule = truthy(rule.props.get("self")) or (
                "sourceSecurityGroupId" in rule.props
                and _refers_to_itself(rule, "securityGroupId", "sourceSecurityGroupId", group))
            cidrs = [str(c) for c in [*as_list(rule.props.get("cidrBlocks")), *as_list(rule.props.get("ipv6CidrBlocks"))] if known_str(c)]
            yield GroupRule(known_str(rule.props.get("type")) or "ingress", _all_protocols(rule.props.get("protocol")),
                            self_rule, tuple(cidrs))


def group_findings(group: Resource, resources: Sequence[Resource], groups: Sequence[Resource]) -> list[Finding]:
    """Every problem of one EFA security group."""
    return self_rule_findings(group.name, list(_rules(group, resources, groups)))


def _validate(args: StackValidationArgs, report_violation: Any) -> None:
    resources = stack_resources(args)
    groups = efa_security_groups(resources)
    for group in groups:
        for finding in group_findings(group, resources, groups):
            report_finding(report_violation, finding, finding.message, group.urn)


efa_security_group_self_rules = StackValidationPolicy(
    name="efa-security-group-self-rules",
    display_name="EFA security groups allow all traffic to and from themselves",
    description=(
        "The security group of EFA interfaces allows all protocols inbound from itself and outbound to "
        "itself, and allows no ingress from 0.0.0.0/0 or ::/0."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["aws", "efa", "security-group", "network"],
    remediation_steps=(
        "Add two self rules to the EFA security group: an ingress and an egress rule with ipProtocol -1 whose "
        "referencedSecurityGroupId is the group itself (aws.vpc.SecurityGroupIngressRule/EgressRule), or inline "
        "ingress/egress blocks with protocol -1 and self: true. gpu_fabric.aws.node_group builds both "
        "(efa_self_ingress_rule_inputs / efa_self_egress_rule_inputs). Remove 0.0.0.0/0 ingress; reach nodes "
        "through the cluster security group instead."
    ),
    url="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security",
)
