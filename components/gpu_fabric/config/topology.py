"""A pool's kubelet TopologyManager / CPU manager settings, as the user writes them: one typed model.

A fabric pool needs accelerators and NICs aligned on NUMA nodes (seed step 2: ``restricted`` policy,
``container`` scope). :mod:`gpu_fabric.kube.topology` renders this one setting three ways (AL2023
nodeadm ``NodeConfig``, Bottlerocket settings, a KubeletConfiguration drop-in). Each rendering can be read back (``KubeletTopology.from_kubelet_config`` /
``from_bottlerocket_settings``), so a policy can check what a node will actually run with.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Mapping, Union

from pydantic import AliasChoices, Field, field_validator, model_validator

from gpu_fabric.config.base import SpecModel

TopologyManagerPolicy = Literal["none", "best-effort", "restricted", "single-numa-node"]
TopologyManagerScope = Literal["container", "pod"]
CpuManagerPolicy = Literal["none", "static"]


# kubelet topology manager options and the kind of value each takes (kubelet docs, KEP-3545, KEP-4622).
TOPOLOGY_POLICY_OPTION_KINDS: dict[str, str] = {
    "prefer-closest-numa-nodes": "bool",
    "max-allowable-numa-nodes": "int",
}
# kubelet static CPU manager options; all are booleans.
CPU_MANAGER_POLICY_OPTIONS: frozenset[str] = frozenset(
    {
        "full-pcpus-only",
        "distribute-cpus-across-numa",
        "align-by-socket",
        "distribute-cpus-across-cores",
        "strict-cpu-reservation",
        "prefer-align-cpus-by-uncorecache",
    }
)
# Static CPU manager options the kubelet refuses to combine: kubernetes/kubernetes
# pkg/kubelet/cm/cpumanager/policy_options.go, NewStaticPolicyOptions ("static policy options %s and %s
# can not be used at the same time"). The kubelet exits at start-up on such a pair.
INCOMPATIBLE_CPU_MANAGER_OPTIONS: tuple[tuple[str, str], ...] = (
    ("full-pcpus-only", "distribute-cpus-across-cores"),
    ("distribute-cpus-across-numa", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa"),
)
# CPU manager options a TopologyManager policy does not take: same file, ValidateStaticPolicyOptions
# ("Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option").
CPU_MANAGER_OPTIONS_REFUSED_BY_TOPOLOGY_POLICY: dict[str, frozenset[str]] = {
    "single-numa-node": frozenset({"align-by-socket"}),
}
# Bottlerocket's ``settings.kubernetes.cpu-manager-policy-options`` list accepts only these names
# (bottlerocket-core-kit migrations); the kubelet's alpha options have no Bottlerocket setting.
BOTTLEROCKET_CPU_MANAGER_POLICY_OPTIONS: frozenset[str] = frozenset(
    {"full-pcpus-only", "strict-cpu-reservation", "distribute-cpus-across-numa", "prefer-align-cpus-by-uncorecache"}
)
# ``settings.kubernetes.topology-manager-policy-options.<name>`` exists for these names.
BOTTLEROCKET_TOPOLOGY_POLICY_OPTIONS: frozenset[str] = frozenset(TOPOLOGY_POLICY_OPTION_KINDS)

_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*\Z", re.ASCII)


class TopologyRenderError(ValueError):
    """A setting has no equivalent in the requested rendering (it is never dropped silently)."""


def bottlerocket_problems(policy_options: Mapping[str, Any], cpu_manager_policy_options: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(field, message)`` for each setting Bottlerocket has no key for (the rendering refuses them).

    The one rule for both the Bottlerocket rendering (``gpu_fabric.kube.topology``) and the pool
    spec, which refuses such a pool at its configuration path before anything renders.
    """
    problems = []
    unsupported_cpu = sorted(set(cpu_manager_policy_options) - BOTTLEROCKET_CPU_MANAGER_POLICY_OPTIONS)
    if unsupported_cpu:
        problems.append(("cpuManagerPolicyOptions",
                         f"cpuManagerPolicyOptions {unsupported_cpu} have no Bottlerocket setting "
                         f"(settings.kubernetes.cpu-manager-policy-options accepts {sorted(BOTTLEROCKET_CPU_MANAGER_POLICY_OPTIONS)})"))
    unsupported_topology = sorted(set(policy_options) - BOTTLEROCKET_TOPOLOGY_POLICY_OPTIONS)
    if unsupported_topology:
        problems.append(("policyOptions", f"policyOptions {unsupported_topology} have no Bottlerocket setting "
                                          f"(settings.kubernetes.topology-manager-policy-options accepts "
                                          f"{sorted(BOTTLEROCKET_TOPOLOGY_POLICY_OPTIONS)})"))
    return problems


def _option_text(value: Any) -> Any:
    # YAML turns `true` and `8` into bool/int; kubelet option maps are string-valued.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return value


def _canonical_options(options: dict[str, str], kinds: Mapping[str, str], field: str, manager: str) -> dict[str, str]:
    """A kubelet ``*PolicyOptions`` map checked against its table of known options, in canonical form: a ``bool``
    option is ``'true'`` or ``'false'`` and kept only when true (false is the kubelet's default, so equal meanings
    compare equal); any other is a positive integer, without leading zeros."""
    canonical: dict[str, str] = {}
    for name, value in sorted(options.items()):
        kind = kinds.get(name)
        if kind is None:
            known = ", ".join(sorted(kinds))
            raise ValueError(f"{field}: unknown {manager} option {name!r} (known: {known})")
        if kind == "bool":
            if value not in ("true", "false"):
                raise ValueError(f"{field}.{name} must be 'true' or 'false', not {value!r}")
            if value == "true":
                canonical[name] = value
        else:
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"{field}.{name} must be a positive integer, not {value!r}")
            canonical[name] = str(int(value))
    return canonical


class KubeletTopology(SpecModel):
    """NUMA alignment settings of a node pool's kubelet.

    Defaults are the fabric defaults (``restricted`` / ``container``, CPU manager ``none``), not the
    kubelet's (``none``), because a pool that carries EFA/RDMA NICs exists to get aligned devices.
    Boolean options set to ``false`` equal the kubelet default and are dropped, so equal meanings
    compare equal.
    """

    policy: TopologyManagerPolicy = "restricted"
    """TopologyManager policy (``topologyManagerPolicy``)."""
    scope: TopologyManagerScope = "container"
    """TopologyManager scope (``topologyManagerScope``)."""
    cpu_manager_policy: CpuManagerPolicy = "none"
    """CPU manager policy; ``static`` pins exclusive CPUs for Guaranteed pods."""
    reserved_system_cpus: str | None = Field(
        default=None,
        validation_alias=AliasChoices("reservedSystemCPUs", "reservedSystemCpus", "reserved_system_cpus"),
        serialization_alias="reservedSystemCPUs",
    )
    """CPUs kept for the OS and kubelet, as a cpuset list such as ``"0-1"``."""
    policy_options: dict[str, str] = Field(default_factory=dict)
    """TopologyManager policy options, e.g. ``{"prefer-closest-numa-nodes": "true"}``."""
    cpu_manager_policy_options: dict[str, str] = Field(default_factory=dict)
    """Static CPU manager options, e.g. ``{"full-pcpus-only": "true"}``."""

    @classmethod
    def fabric_default(cls) -> "KubeletTopology":
        """The setting a fabric pool gets when it says nothing: restricted policy, container scope."""
        return cls()

    # json_schema_input_type: the JSON Schema shows what this validator accepts (YAML booleans and integers too).
    @field_validator("policy_options", "cpu_manager_policy_options", mode="before",
                     json_schema_input_type=dict[str, Union[str, bool, int]])
    @classmethod
    def _options_as_text(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: _option_text(option) for key, option in value.items()}
        return value

    @field_validator("reserved_system_cpus")
    @classmethod
    def _cpu_list(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not _CPU_LIST.match(value):
            raise ValueError(f"reservedSystemCPUs {value!r} is not a cpuset list such as '0-1' or '0,2-3'")
        for part in value.split(","):
            first, _, last = part.partition("-")
            if last and int(last) < int(first):
                raise ValueError(f"reservedSystemCPUs range {part!r} runs backwards")
        return value

    @field_validator("policy_options")
    @classmethod
    def _known_topology_options(cls, options: dict[str, str]) -> dict[str, str]:
        return _canonical_options(options, TOPOLOGY_POLICY_OPTION_KINDS, "policyOptions", "topology manager")

    @field_validator("cpu_manager_policy_options")
    @classmethod
    def _known_cpu_options(cls, options: dict[str, str]) -> dict[str, str]:
        return _canonical_options(options, dict.fromkeys(CPU_MANAGER_POLICY_OPTIONS, "bool"), "cpuManagerPolicyOptions",
                                  "CPU manager")

    @model_validator(mode="after")
    def _static_needs_reserved_cpus(self) -> "KubeletTopology":
        if self.cpu_manager_policy == "static" and not self.reserved_system_cpus:
            raise ValueError(
                "reservedSystemCPUs is required when cpuManagerPolicy is 'static': the static policy needs a "
                "non-zero CPU reservation for system daemons (for example reservedSystemCPUs: '0-1')"
            )
        if self.cpu_manager_policy_options and self.cpu_manager_policy != "static":
            # kubelet: cpumanager.NewNonePolicy refuses any option ("None policy: received unsupported options").
            raise ValueError("cpuManagerPolicyOptions apply only to cpuManagerPolicy 'static'")
        enabled = set(self.cpu_manager_policy_options)  # only "true" options survive canonicalisation
        for first, second in INCOMPATIBLE_CPU_MANAGER_OPTIONS:
            if {first, second} <= enabled:
                raise ValueError(
                    f"cpuManagerPolicyOptions {first} and {second} cannot be used together: the kubelet refuses the "
                    "pair at start-up"
                )
        refused = sorted(enabled & CPU_MANAGER_OPTIONS_REFUSED_BY_TOPOLOGY_POLICY.get(self.policy, frozenset()))
        if refused:
            raise ValueError(
                f"cpuManagerPolicyOptions {', '.join(refused)} is refused by the kubelet with TopologyManager policy "
                f"{self.policy!r}"
            )
        return self

    # -- reading renderings back -------------------------------------------------------------------

    @classmethod
    def from_kubelet_config(cls, config: Mapping[str, Any]) -> "KubeletTopology":
        """Read the topology keys of a KubeletConfiguration (or nodeadm ``kubelet.config``) mapping.

        Absent keys mean the kubelet defaults (``none`` / ``container`` / ``none``).
        """
        return cls.model_validate(
            {
                "policy": config.get("topologyManagerPolicy", "none"),
                "scope": config.get("topologyManagerScope", "container"),
                "cpuManagerPolicy": config.get("cpuManagerPolicy", "none"),
                "reservedSystemCPUs": config.get("reservedSystemCPUs"),
                "policyOptions": dict(config.get("topologyManagerPolicyOptions") or {}),
                "cpuManagerPolicyOptions": dict(config.get("cpuManagerPolicyOptions") or {}),
            }
        )

    @classmethod
    def from_bottlerocket_settings(cls, settings: Mapping[str, Any]) -> "KubeletTopology":
        """Read ``settings.kubernetes.*`` of Bottlerocket user data (the parsed TOML document)."""
        kubernetes = settings.get("settings", {}).get("kubernetes", {})
        return cls.model_validate(
            {
                "policy": kubernetes.get("topology-manager-policy", "none"),
                "scope": kubernetes.get("topology-manager-scope", "container"),
                "cpuManagerPolicy": kubernetes.get("cpu-manager-policy", "none"),
                "reservedSystemCPUs": kubernetes.get("reserved-cpus"),
                "policyOptions": dict(kubernetes.get("topology-manager-policy-options") or {}),
                "cpuManagerPolicyOptions": {name: "true" for name in kubernetes.get("cpu-manager-policy-options") or []},
            }
        )
