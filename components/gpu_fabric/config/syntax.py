"""What Kubernetes and AWS accept as names, label keys and values, taints, tags and ids.

Each check mirrors the system's own rule, so a value is refused while it is still configuration,
with its path, instead of by the API server or EC2 during ``pulumi up`` -- and so no value can carry
a ``,``, ``=`` or newline into the kubelet flags (``--node-labels``, ``--register-with-taints``) or
the TOML that the user data is made of. Every function raises ``ValueError`` with a message that
names the value; pydantic turns it into a configuration error at the field's path -- except the
``is_*`` functions, which return the API server's own list of problems in its own words
(``validation.IsDNS1123Label`` and friends), as the GPUStack operator's webhooks quote them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Mapping

from pydantic import AfterValidator, BeforeValidator

from gpu_fabric.findings.printable import quoted

# k8s.io/apimachinery/pkg/util/validation/validation.go builds its expressions from these formats
# (dns1123LabelFmt, dns1123SubdomainFmt, dns1035LabelFmt, qualifiedNameFmt, labelValueFmt), and its
# messages quote them; both the checks below and the API server's wording (``is_*``) use them.
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
DNS_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}\\Z", re.ASCII)
DNS_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}\\Z", re.ASCII)
DNS1035_LABEL = re.compile(f"^{_DNS1035_LABEL_FMT}\\Z", re.ASCII)
_QUALIFIED_NAME = re.compile(f"^{_QUALIFIED_NAME_FMT}\\Z", re.ASCII)
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}\\Z", re.ASCII)

# EKS API reference: CreateNodegroup ``nodegroupName`` and CreateCluster ``name`` patterns and lengths.
EKS_NODE_GROUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}\Z", re.ASCII)
EKS_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}\Z", re.ASCII)
# EC2 instance types: family[-variant].size, e.g. p5.48xlarge, p6e-gb200.36xlarge, u-6tb1.metal.
INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+\Z", re.ASCII)
# Region-qualified AZ names: us-east-1a, us-gov-west-1b, and Local Zones such as us-west-2-lax-1a.
AVAILABILITY_ZONE = re.compile(r"^(?P<region>[a-z]{2}(-[a-z]+)+-\d+)(?P<zone>[a-z]|-[a-z0-9]+-\d+[a-z])\Z", re.ASCII)
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+\Z", re.ASCII)
# Container image references: no whitespace or control characters (distribution/reference grammar is stricter).
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*\Z", re.ASCII)
# k8s.io/apimachinery/pkg/util/validation/validation.go: envVarNameFmt / IsEnvVarName (plus
# hasChDirPrefix: not ".", not "..", not starting with "..").
_ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*\Z", re.ASCII)


def dns_label(value: str, what: str = "name") -> str:
    """A DNS-1123 label: lowercase letters, digits and '-', at most 63 characters (namespaces, role names)."""
    if len(value) > 63 or not DNS_LABEL.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a valid DNS-1123 label (lowercase letters, digits, '-', at most 63)")
    return value


def dns_subdomain(value: str, what: str = "name") -> str:
    """A DNS-1123 subdomain: lowercase letters, digits, '-' and '.', at most 253 characters (object names)."""
    if len(value) > 253 or not DNS_SUBDOMAIN.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a valid Kubernetes name (lowercase letters, digits, '-', '.')")
    return value


def qualified_name(value: str, what: str = "key") -> str:
    """``[prefix/]name``: a DNS subdomain prefix and a name of at most 63 alphanumerics, '-', '_', '.'."""
    prefix, slash, name = value.rpartition("/")
    problem = None
    if slash and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.fullmatch(prefix)):
        problem = "its prefix must be a DNS subdomain such as example.com"
    elif not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        problem = "the name must be 1-63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"
    if problem:
        raise ValueError(f"{what} {value!r} is not a valid Kubernetes {what}: {problem}")
    return value


def label_value(value: str, what: str = "label value") -> str:
    """Empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not valid: at most 63 letters, digits, '-', '_' or '.', "
                         "starting and ending alphanumeric")
    return value


def labels(values: Mapping[str, str]) -> Mapping[str, str]:
    """Every key a qualified name and every value a label value."""
    for key, value in values.items():
        qualified_name(key, "label key")
        label_value(value, f"label {key!r} value")
    return values


def eks_labels(values: Mapping[str, str]) -> Mapping[str, str]:
    """Kubernetes labels that the EKS node-group API also takes (keys of at most 63 characters)."""
    labels(values)
    for key in values:
        if len(key) > 63:
            raise ValueError(f"label key {key!r} is longer than the 63 characters an EKS node group accepts")
    return values


def taint_key(value: str) -> str:
    """A taint key is a qualified name (core/validation: validateNodeTaints)."""
    return qualified_name(value, "taint key")


def taint_value(value: str | None) -> str | None:
    """A taint value is a label value (core/validation: validateNodeTaints)."""
    return None if value is None else label_value(value, "taint value")


def extended_resource_name(value: str) -> str:
    """A resource name such as ``nvidia.com/gpu``: a qualified name with a domain prefix."""
    qualified_name(value, "resource name")
    if "/" not in value:
        raise ValueError(f"resource name {value!r} needs a domain prefix, as in nvidia.com/gpu")
    return value


def eks_cluster_name(value: str) -> str:
    """An EKS cluster name: 1-100 letters, digits, '-' and '_', starting alphanumeric."""
    if not EKS_CLUSTER_NAME.fullmatch(value):
        raise ValueError(f"EKS cluster name {value!r} must be 1-100 letters, digits, '-' or '_', starting alphanumeric")
    return value


def instance_type(value: str) -> str:
    """An EC2 instance type name such as ``p5.48xlarge``."""
    if not INSTANCE_TYPE.fullmatch(value):
        raise ValueError(f"{value!r} is not an EC2 instance type name (such as p5.48xlarge)")
    return value


def availability_zone(value: str) -> str:
    """An AZ name such as ``us-east-1a`` (AZ ids such as ``use1-az1`` are not names)."""
    if not AVAILABILITY_ZONE.fullmatch(value):
        raise ValueError(f"{value!r} is not an availability zone name (such as us-east-1a)")
    return value


def region_of_zone(zone: str) -> str:
    """``us-east-1a`` -> ``us-east-1``; ``us-west-2-lax-1a`` -> ``us-west-2``."""
    match = AVAILABILITY_ZONE.fullmatch(zone)
    if not match:
        raise ValueError(f"{zone!r} is not an availability zone name (such as us-east-1a)")
    return match.group("region")


# pulumi/pulumi sdk/go/common/tokens/names.go, ValidateProjectName: "project names may only contain
# alphanumerics, hyphens, underscores, and periods", at most 100 characters. A project name is the
# second part of every URN (urn:pulumi:<stack>::<project>::...): a "::" in it makes URNs Pulumi refuses.
PULUMI_PROJECT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}\Z", re.ASCII)


def pulumi_project_name(value: str) -> str:
    """A Pulumi project name (``Pulumi.yaml`` ``name``): letters, digits, ``-``, ``_``, ``.``; at most 100."""
    if not PULUMI_PROJECT_NAME.match(value):
        raise ValueError(f"{value!r} is not a Pulumi project name: Pulumi takes only letters, digits, '-', '_' and '.' "
                         "(at most 100), and the name is part of every URN")
    return value


def region(value: str) -> str:
    """An AWS region name such as ``us-east-1``."""
    if not REGION.fullmatch(value):
        raise ValueError(f"{value!r} is not an AWS region name (such as us-east-1)")
    return value


def aws_tags(values: Mapping[str, str]) -> Mapping[str, str]:
    """AWS tags: keys 1-128 characters, not ``aws:``-prefixed; values at most 256 characters."""
    for key, value in values.items():
        if not 1 <= len(key) <= 128 or key.lower().startswith("aws:"):
            raise ValueError(f"tag key {key!r} must be 1-128 characters and must not start with 'aws:'")
        if len(value) > 256:
            raise ValueError(f"tag {key!r}: the value is longer than the 256 characters AWS accepts")
    return values


def image(value: str) -> str:
    """A container image reference: no whitespace, quotes or control characters.

    The API server refuses leading or trailing whitespace in a container's image
    (pkg/apis/core/validation/validation.go validateContainerCommon); whitespace inside is refused
    by the kubelet, whose reference parser (distribution/reference) rejects it as InvalidImageName,
    so such a pod never starts.
    """
    if len(value) > 512 or not _IMAGE.fullmatch(value):
        raise ValueError(f"{value!r} is not a container image reference (registry/repository:tag or @digest)")
    return value


def env_var_name(value: str) -> str:
    """An environment variable name as Kubernetes' ``IsEnvVarName`` accepts it.

    Letters, digits, '_', '-' and '.', not starting with a digit, and not '.', '..' or '..'-prefixed.
    API servers with ``RelaxedEnvironmentVariableValidation`` (beta, on by default from 1.32) also
    take other printable ASCII except '='; the strict rule is kept so the same configuration works
    on every API server gpu-fabric targets (the operator copies role env into Pods, so a name the
    server refuses fails at Pod creation, after the ModelDeployment was accepted). Values are any
    string: Kubernetes puts no rule on them.
    """
    if not _ENV_VAR_NAME.fullmatch(value) or value in (".", "..") or value.startswith(".."):
        raise ValueError(
            f"environment variable name {value!r} is not valid: letters, digits, '_', '-' and '.', not starting "
            "with a digit (Kubernetes IsEnvVarName), e.g. MY_ENV.NAME")
    return value


def no_control_characters(value: str, what: str = "value") -> str:
    """Printable text only: a newline would end the line it is written on (user data, flags)."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError(f"{what} {value!r} contains a control character such as a newline")
    return value


# -- the API server's wording: k8s.io/apimachinery/pkg/util/validation/validation.go -----------------


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """``RegexError``: the message, the examples and the expression, as the API server words them."""
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _bounded_match(value: str, compiled: re.Pattern[str], message: str, pattern: str, *examples: str,
                   part: str = "") -> list[str]:
    """The API server's two checks of a label-like value: ``MaxLenError`` past 63 characters, then ``RegexError``
    (``part``, e.g. ``"name part "``, leads each message where the value is part of a larger one)."""
    problems = []
    if len(value) > 63:
        problems.append(f"{part}must be no more than 63 characters")
    if not compiled.fullmatch(value):
        problems.append(part + _regex_error(message, pattern, *examples))
    return problems


def is_dns1123_label(value: str) -> list[str]:
    """``validation.IsDNS1123Label``: problems, empty when ``value`` is a valid label."""
    return _bounded_match(value, DNS_LABEL, "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                          "characters or '-', and must start and end with an alphanumeric character",
                          _DNS1123_LABEL_FMT, "my-name", "123-abc")


def is_dns1035_label(value: str) -> list[str]:
    """``validation.IsDNS1035Label``: problems, empty when ``value`` is a valid Service name."""
    return _bounded_match(value, DNS1035_LABEL, "a DNS-1035 label must consist of lower case alphanumeric characters "
                          "or '-', start with an alphabetic character, and end with an alphanumeric character",
                          _DNS1035_LABEL_FMT, "my-name", "abc-123")


def is_qualified_name(value: str) -> list[str]:
    """``validation.IsQualifiedName``: a label key, ``[prefix/]name``."""
    parts = value.split("/")
    if len(parts) > 2:
        return [_regex_error("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                             "start and end with an alphanumeric character", _QUALIFIED_NAME_FMT,
                             "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    problems = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not DNS_SUBDOMAIN.fullmatch(prefix):
            problems.append("prefix part " + _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                "must start and end with an alphanumeric character", _DNS1123_SUBDOMAIN_FMT, "example.com"))
    if not name:
        problems.append("name part must be non-empty")
    else:
        problems.extend(_bounded_match(name, _QUALIFIED_NAME, "must consist of alphanumeric characters, '-', '_' or "
                                       "'.', and must start and end with an alphanumeric character",
                                       _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc", part="name part "))
    return problems


def is_valid_label_value(value: str) -> list[str]:
    """``validation.IsValidLabelValue``."""
    return _bounded_match(value, _LABEL_VALUE, "a valid label must be an empty string or consist of alphanumeric "
                          "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                          _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")


# -- annotated types: the checks above as pydantic field types ------------------------------------


def pattern_validator(pattern: str, description: str) -> AfterValidator:
    """A validator that refuses a ``str`` not matching ``pattern`` (full match); the error shows ``description``."""
    compiled = re.compile(pattern, re.ASCII)  # '\d' is 0-9, as AWS and Kubernetes mean it

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{quoted(value)} is not {description}")
        return value

    return AfterValidator(check)


def matching(pattern: str, description: str) -> Any:
    """An annotated ``str`` type that must match ``pattern`` (full match); the error shows ``description``.

    Type checkers see the result as ``Any``; for a type they check, write
    ``Annotated[str, pattern_validator(pattern, description)]``.
    """
    return Annotated[str, pattern_validator(pattern, description)]


# EC2/IAM identifier shapes: the resource prefix, then lowercase letters and digits (EC2 issues 8 or
# 17 hex digits; the shape is kept loose enough for test doubles, strict enough to stop garbage).
VpcId = matching(r"vpc-[0-9a-z]{1,32}", "a VPC id (vpc-0123456789abcdef0)")
SubnetId = matching(r"subnet-[0-9a-z]{1,32}", "a subnet id (subnet-0123456789abcdef0)")
SecurityGroupId = matching(r"sg-[0-9a-z]{1,32}", "a security group id (sg-0123456789abcdef0)")
CapacityReservationId = matching(r"cr-[0-9a-z]{1,32}", "a capacity reservation id (cr-0123456789abcdef0)")
RoleArn = matching(r"arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}",
                   "an IAM role ARN (arn:aws:iam::123456789012:role/name)")
def _version_not_a_number(value: Any) -> Any:
    """A version written as a YAML number (``1.30``) reaches us as the float 1.3: name the fix, not the type."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"got the number {value!r}: an unquoted version is a YAML number (1.30 reads as 1.3); "
                         f"quote it, for example \"1.30\"")
    return value


# Bounded: a minor version is a few digits, and int() of a 5,000-digit one raises (sys.int_info.str_digits_check_threshold).
KubernetesVersion = Annotated[str, BeforeValidator(_version_not_a_number),
                              pattern_validator(r"[0-9]{1,4}\.[0-9]{1,4}", "a Kubernetes minor version such as 1.31")]

EnvVarName = Annotated[str, AfterValidator(env_var_name)]
DnsLabel = Annotated[str, AfterValidator(lambda v: dns_label(v))]
DnsSubdomain = Annotated[str, AfterValidator(lambda v: dns_subdomain(v))]
Namespace = Annotated[str, AfterValidator(lambda v: dns_label(v, "namespace"))]
Labels = Annotated[dict[str, str], AfterValidator(labels)]
EksLabels = Annotated[dict[str, str], AfterValidator(eks_labels)]
TaintKey = Annotated[str, AfterValidator(taint_key)]
TaintValue = Annotated[str, AfterValidator(taint_value)]
EksClusterName = Annotated[str, AfterValidator(eks_cluster_name)]
InstanceType = Annotated[str, AfterValidator(instance_type)]
AvailabilityZone = Annotated[str, AfterValidator(availability_zone)]
Region = Annotated[str, AfterValidator(region)]
AwsTags = Annotated[dict[str, str], AfterValidator(aws_tags)]
Image = Annotated[str, AfterValidator(image)]
PlainText = Annotated[str, AfterValidator(lambda v: no_control_characters(v))]
