"""A pool's name and accelerator count against the EC2 facts of the instances that provide its nodes.

GPUStack derives InstanceType names from the hardware it discovers on a node
(``gpustack--<manufacturer>-<model>-<os>-<arch>``, gpustack/gpustack-operator
``docs/modules/devices/scheduling.md``, "Naming and grouping"), so a pool
named after hardware its instances do not have names an InstanceType that never appears, and
gpu-fabric itself would assume the name's ``kubernetes.io/arch`` for those nodes
(:func:`gpu_fabric.config.pool.platform_node_labels`). ``acceleratorsPerNode`` sizes quotas and role
requests, so it must be what the instance carries.

:func:`pool_instance_findings` is the one rule: ``load_config`` runs it over the stack's pools (render
refuses, exit 2) and the ``pool-instance-facts`` policy over ``KueuePool`` inputs. Both pass the pool
as the camelCase mapping the component's ``pool`` input carries, and ``DescribeInstanceTypes`` items
as boto3 returns them (``GpuInfo.Gpus[]``, ``ProcessorInfo.SupportedArchitectures``).

Pools whose nodes the stack provisions (an ``aws:`` node group) are judged by their instance types; pools on
nodes the stack does not provision are judged when their ``nodeLabels`` pin ``node.kubernetes.io/instance-type``
(the label the ``dra`` path reads too), and there ``interfacesPerNode`` of an EFA pool against the type's EFA
interfaces as well (a node group's interfaces are the EFA planner's to judge). Other such pools have no facts.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from gpu_fabric.aws.catalog.types import GpuFacts, InstanceFacts
from gpu_fabric.config.instance_type_names import instance_type_name, manufacturer_of, parse_instance_type_name
from gpu_fabric.config.constants import INSTANCE_TYPE_LABEL
from gpu_fabric.findings import Finding, Rule

# EC2's ProcessorInfo.SupportedArchitectures -> kubernetes.io/arch (GOARCH spelling, as the kubelet
# labels nodes). i386 appears beside x86_64 on some small types and never names a node's arch.
_KUBERNETES_ARCH = {"x86_64": "amd64", "x86_64_mac": "amd64", "arm64": "arm64", "arm64_mac": "arm64"}

# Manufacturers EC2 reports under GpuInfo (NVIDIA and AMD GPUs; the bundled table holds no other).
# Accelerators EC2 reports elsewhere (Neuron, Gaudi) leave GpuInfo empty, so a count is only judged
# when the instance reports GPUs or the pool names one of these vendors.
_GPU_INFO_MANUFACTURERS = ("nvidia", "amd")

# amiType -> the CPU architecture its images are built for (EKS AMI types, AL2023_*/BOTTLEROCKET_*).
_AMI_ARCH_MARKERS = (("ARM_64", "arm64"), ("x86_64", "amd64"))


POOL_INSTANCE_FACTS = Rule(
    "pool-instance-facts",
    "a pool's InstanceType name, manufacturer, acceleratorsPerNode and AMI agree with its instance types' EC2 facts",
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html", policy="pool-instance-facts")
"""Findings name the pool's field (``name``, ``acceleratorsPerNode``, ``aws.amiType``), relative to the pool."""


def _finding(field: str, message: str) -> Finding:
    return Finding.of(POOL_INSTANCE_FACTS, field, message)


def kubernetes_arch(facts: InstanceFacts) -> str | None:
    """The ``kubernetes.io/arch`` of the instance's nodes, or ``None`` when EC2 names none we know."""
    for architecture in facts.architectures:
        if architecture in _KUBERNETES_ARCH:
            return _KUBERNETES_ARCH[architecture]
    return None


def model_slug(gpu: GpuFacts) -> str:
    """EC2's GPU name as GPUStack's model id is compared: lowercase, words joined by ``-`` (``A10G`` -> ``a10g``)."""
    return "-".join(gpu.name.lower().split())


def describe_hardware(facts: InstanceFacts) -> str:
    """``8 x NVIDIA H100, amd64`` (``no GPU, amd64`` for CPU instances)."""
    gpus = " + ".join(f"{gpu.count} x {gpu.manufacturer} {gpu.name}" for gpu in facts.gpus) or "no GPU"
    return f"{gpus}, {kubernetes_arch(facts) or '/'.join(facts.architectures) or 'unknown architecture'}"


def derived_name(facts: InstanceFacts, os_name: str = "linux") -> str | None:
    """The InstanceType name GPUStack's default naming gives the instance's nodes, when it can be told."""
    arch = kubernetes_arch(facts)
    if arch is None:
        return None
    if not facts.gpus:
        return instance_type_name(None, None, os_name, arch)
    gpu = facts.gpus[0]
    return instance_type_name(gpu.manufacturer.lower(), model_slug(gpu), os_name, arch)


def _model_matches(pool_model: str, facts: InstanceFacts) -> bool:
    # The discovered id may carry more than EC2's short name (memory size, form factor); how GPUStack
    # slugs a product name is not stated by the sources read, so a model that starts with EC2's
    # name is accepted and anything else (h200 on H100) is refused.
    return any(pool_model == model_slug(gpu) or pool_model.startswith(model_slug(gpu) + "-") for gpu in facts.gpus)


def _name_findings(name: str, facts: InstanceFacts) -> list[str]:
    parsed = parse_instance_type_name(name)
    if parsed is None:
        return []
    problems: list[str] = []
    gpu_manufacturers = {gpu.manufacturer.lower() for gpu in facts.gpus}
    named_vendor = parsed.manufacturer
    if parsed.model is None and parsed.accelerator == "generic" and facts.gpus:
        problems.append("the name is a CPU pool's (generic) but the instance has GPUs")
    elif named_vendor is not None and not facts.gpus:
        problems.append(f"the name names a {named_vendor} accelerator but the instance has no GPU")
    elif named_vendor is not None and named_vendor not in gpu_manufacturers:
        problems.append(f"the name names manufacturer {named_vendor}")
    elif parsed.model is not None and facts.gpus and not _model_matches(parsed.model, facts):
        problems.append(f"the name names model {parsed.model}")
    arch = kubernetes_arch(facts)
    if arch is not None and parsed.arch != arch:
        problems.append(f"the name names architecture {parsed.arch}")
    return problems


def pool_instance_types(pool: Mapping[str, Any]) -> list[str]:
    """The instance types a pool's nodes are: its node group's (``aws.instanceTypes``), else the one its ``nodeLabels``
    pin with ``node.kubernetes.io/instance-type`` (nodes the stack does not provision), else none."""
    aws = pool.get("aws")
    if isinstance(aws, Mapping):
        return list(_strings(aws.get("instanceTypes")))
    labels = pool.get("nodeLabels")
    pinned = labels.get(INSTANCE_TYPE_LABEL) if isinstance(labels, Mapping) else None
    return [pinned] if isinstance(pinned, str) and pinned else []


def pool_instance_findings(pool: Mapping[str, Any], items: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """Every disagreement between a pool and the facts of its instance types (:func:`pool_instance_types`).

    ``pool`` is camelCase (``name``, ``acceleratorsPerNode``, ``manufacturer``, ``aws.instanceTypes``,
    ``aws.amiType``, ``nodeLabels``); ``items`` maps instance type names to ``DescribeInstanceTypes`` items. Types
    absent from ``items`` are not judged here (the node-group planner refuses unknown types).
    """
    aws = pool.get("aws")
    provisioned = isinstance(aws, Mapping)
    if not isinstance(aws, Mapping):
        aws = {}
    instance_types = pool_instance_types(pool)
    if not instance_types:
        return []
    where = "aws.instanceTypes" if provisioned else f"nodeLabels[{INSTANCE_TYPE_LABEL}]"
    name = str(pool.get("name") or "")
    raw_manufacturer = pool.get("manufacturer")
    manufacturer = raw_manufacturer if isinstance(raw_manufacturer, str) else manufacturer_of(name)
    accelerators = pool.get("acceleratorsPerNode")
    ami_type = aws.get("amiType") if isinstance(aws.get("amiType"), str) else None
    parsed = parse_instance_type_name(name)
    findings: list[Finding] = _mixed_hardware_findings(instance_types, items)
    interfaces = pool.get("interfacesPerNode")
    for instance_type in instance_types:
        if instance_type not in items:
            continue
        facts = InstanceFacts.from_item(items[instance_type])
        has = f"{instance_type} has {describe_hardware(facts)}"
        derived = derived_name(facts, parsed.os if parsed else "linux")
        operator = f"; the operator would derive {derived}" if derived else ""
        name_problems = _name_findings(name, facts)
        if name_problems:
            findings.append(_finding("name", f"{'; '.join(name_problems)}: {has}{operator}, "
                                                        f"so InstanceType {name} would never appear"))
        vendors = {gpu.manufacturer.lower() for gpu in facts.gpus}
        if isinstance(raw_manufacturer, str) and vendors and raw_manufacturer not in vendors:
            findings.append(_finding("manufacturer", f"{raw_manufacturer}, but {has}{operator}"))
        if isinstance(accelerators, int) and not isinstance(accelerators, bool) and accelerators != facts.gpu_count \
                and (facts.gpus or (manufacturer in _GPU_INFO_MANUFACTURERS)):
            findings.append(_finding("acceleratorsPerNode", f"{accelerators} per node, but {has}"))
        arch = kubernetes_arch(facts)
        ami_arch = next((value for marker, value in _AMI_ARCH_MARKERS if ami_type and marker in ami_type), None)
        if arch is not None and ami_arch is not None and ami_arch != arch:
            findings.append(_finding("aws.amiType", f"{ami_type} is built for {ami_arch}, but {has}"))
        if not provisioned and pool.get("fabric") == "efa" and isinstance(interfaces, int) \
                and not isinstance(interfaces, bool) and facts.efa_supported and interfaces > facts.max_efa_interfaces:
            findings.append(_finding("interfacesPerNode", (
                f"{interfaces} EFA interfaces per node, but {instance_type} ({where}) has at most "
                f"{facts.max_efa_interfaces}: quotas and claims would count interfaces the nodes do not have")))
    return findings


def _mixed_hardware_findings(instance_types: Sequence[str], items: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """A pool is one GPUStack InstanceType, and GPUStack derives that name from the hardware it finds: instance
    types whose accelerator model or architecture differ would appear as several InstanceTypes, and the pool's
    name, quota and device plugins could fit only one of them."""
    derived: dict[str, list[str]] = {}
    for instance_type in dict.fromkeys(instance_types):
        if instance_type in items:
            facts = InstanceFacts.from_item(items[instance_type])
            key = derived_name(facts, "linux") or describe_hardware(facts)
            derived.setdefault(key, []).append(f"{instance_type} has {describe_hardware(facts)}")
    if len(derived) < 2:
        return []
    described = "; ".join(f"{'; '.join(facts)} (the operator would derive {name})" for name, facts in derived.items())
    return [_finding("aws.instanceTypes",
                                f"one pool's instance types must be one GPUStack InstanceType, but {described}")]


def _strings(value: Any) -> Sequence[str]:
    if not isinstance(value, (list, tuple)):
        return ()
    return [item for item in value if isinstance(item, str)]


def known_items(instance_types: Sequence[str], catalog: Any = None) -> dict[str, dict]:
    """``DescribeInstanceTypes`` items of the types ``catalog`` knows (default: the catalog set with
    :func:`gpu_fabric.aws.catalog.selection.use_catalog`, else the bundled table); unknown types are left out."""
    from gpu_fabric.aws.catalog.bundled import BundledInstanceCatalog
    from gpu_fabric.aws.catalog.selection import explicit_catalog
    from gpu_fabric.aws.catalog.types import UnknownInstanceTypeError

    source = catalog or explicit_catalog() or BundledInstanceCatalog()
    wanted = list(dict.fromkeys(instance_types))
    try:
        return source.describe(wanted)
    except UnknownInstanceTypeError as error:
        rest = [name for name in wanted if name not in error.unknown]
        return source.describe(rest) if rest else {}
