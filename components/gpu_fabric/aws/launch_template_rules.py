"""What an EC2 launch template of a fabric node group must say, judged from its inputs (camelCase, as EC2 takes them).

* ``efa-launch-template-interfaces``: the EFA interfaces fit the instance type
  (:func:`gpu_fabric.aws.efa.validate_plan`: as many EFAs as ``EfaInfo.MaximumEfaInterfaces``, one
  primary at card 0 / device 0 that is not ``efa-only``, no EFA on a card without EFA, at most one EFA per
  card, no addresses on ``efa-only``), and every interface carries its security groups, none at template
  level (EC2 refuses both beside ``networkInterfaces``; EKS user guide, "Run machine learning training on
  Amazon EKS with Elastic Fabric Adapter");
* ``launch-template-imdsv2``: IMDSv2 is required (``metadataOptions.httpTokens: required``; EC2 User Guide,
  "Configure the instance metadata options for new instances");
* ``launch-template-ebs-encrypted``: every EBS volume is encrypted.

A value unknown at preview is not judged (:data:`gpu_fabric.config.shapes.UNKNOWN` reads as nothing a rule
wants): the rules that need it do not refuse on a guess.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.shapes import as_list, as_mapping, is_unknown, known_str, truthy
from gpu_fabric.findings import Finding, Rule

EFA_LAUNCH_TEMPLATE_INTERFACES = Rule(
    "efa-launch-template-interfaces",
    "an EFA launch template's interfaces fit its instance type and carry the security groups on every interface",
    "https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html", policy="efa-launch-template-interfaces")
LAUNCH_TEMPLATE_IMDSV2 = Rule(
    "launch-template-imdsv2", "every launch template requires IMDSv2 (metadataOptions.httpTokens: required)",
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-IMDS-new-instances.html",
    policy="launch-template-imdsv2")
LAUNCH_TEMPLATE_EBS_ENCRYPTED = Rule(
    "launch-template-ebs-encrypted", "every EBS volume a launch template maps is encrypted",
    "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-encryption.html", policy="launch-template-ebs-encrypted")

EFA_INTERFACE_TYPES = ("efa", "efa-only")
TEMPLATE_LEVEL_SECURITY_GROUP_KEYS = ("vpcSecurityGroupIds", "securityGroupNames")
"""Launch-template-level security group inputs; EC2 refuses them beside networkInterfaces."""

RULES = (EFA_LAUNCH_TEMPLATE_INTERFACES, LAUNCH_TEMPLATE_IMDSV2, LAUNCH_TEMPLATE_EBS_ENCRYPTED)


def efa_interfaces(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``networkInterfaces`` of a launch template that are EFA (``efa`` or ``efa-only``)."""
    return [interface for interface in as_list(template.get("networkInterfaces"))
            if isinstance(interface, Mapping) and interface.get("interfaceType") in EFA_INTERFACE_TYPES]


def security_group_findings(template: Mapping[str, Any]) -> list[Finding]:
    """Every EFA-relevant security-group problem of a launch template."""
    problems = []
    for position, interface in enumerate(as_list(template.get("networkInterfaces"))):
        interface = as_mapping(interface)
        groups = interface.get("securityGroups")
        if not is_unknown(groups) and not as_list(groups):
            where = f"network card {interface.get('networkCardIndex', 0)}, device {interface.get('deviceIndex', 0)}"
            problems.append(Finding.of(EFA_LAUNCH_TEMPLATE_INTERFACES, f"networkInterfaces[{position}].securityGroups", (
                f"{where}: the interface has no securityGroups; every interface of an EFA launch template needs "
                "the EFA security group (all traffic to and from itself)")))
    for key in TEMPLATE_LEVEL_SECURITY_GROUP_KEYS:
        value = template.get(key)
        if is_unknown(value) or as_list(value):
            problems.append(Finding.of(EFA_LAUNCH_TEMPLATE_INTERFACES, key, (
                f"{key} is set, but a launch template that defines networkInterfaces must put its security "
                "groups on the interfaces (EKS managed node groups reject both)")))
    return problems


def interface_findings(template: Mapping[str, Any], instance_type_info: Mapping[str, Any],
                       allow_fewer: bool = False) -> list[Finding]:
    """The template's interface plan against its instance type's ``DescribeInstanceTypes`` item.

    ``allow_fewer`` accepts a deliberate subset of the EFA cards (``efaCardIndices``): fewer EFAs than
    ``MaximumEfaInterfaces``, never more.
    """
    from gpu_fabric.aws.efa import validate_plan

    interfaces = [as_mapping(i) for i in as_list(template.get("networkInterfaces"))]
    instance_type = str(template.get("instanceType") or instance_type_info.get("InstanceType") or "")
    efa_count = None
    if allow_fewer:
        maximum = int(as_mapping(as_mapping(instance_type_info.get("NetworkInfo")).get("EfaInfo")).get("MaximumEfaInterfaces", 0))
        efa_count = min(len(efa_interfaces(template)), maximum) or None
    return [Finding.of(EFA_LAUNCH_TEMPLATE_INTERFACES, "networkInterfaces", f"{instance_type}: {problem}")
            for problem in validate_plan(instance_type_info, interfaces, efa_count=efa_count)]


def imds_findings(template: Mapping[str, Any]) -> list[Finding]:
    """IMDSv2 is required: ``metadataOptions.httpTokens`` is ``required`` (unknown at preview: not judged)."""
    tokens = as_mapping(template.get("metadataOptions")).get("httpTokens")
    if is_unknown(tokens) or known_str(tokens) == "required":
        return []
    return [Finding.of(LAUNCH_TEMPLATE_IMDSV2, "metadataOptions.httpTokens",
                       f"metadataOptions.httpTokens is {known_str(tokens) or 'unset'!s}; require IMDSv2 (httpTokens: required)")]


def ebs_findings(template: Mapping[str, Any]) -> list[Finding]:
    """Every EBS volume of ``blockDeviceMappings`` is encrypted (unknown at preview: not judged)."""
    found = []
    for position, mapping in enumerate(as_list(template.get("blockDeviceMappings"))):
        mapping = as_mapping(mapping)
        ebs = mapping.get("ebs")
        if not isinstance(ebs, dict):
            continue
        encrypted = ebs.get("encrypted")
        if not is_unknown(encrypted) and not truthy(encrypted):
            found.append(Finding.of(LAUNCH_TEMPLATE_EBS_ENCRYPTED, f"blockDeviceMappings[{position}].ebs.encrypted",
                                    f"blockDeviceMappings {mapping.get('deviceName', '?')}: the EBS volume is not encrypted"))
    return found
