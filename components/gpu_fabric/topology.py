"""kubelet TopologyManager / CPU manager settings, rendered three ways with one meaning.

A fabric pool needs accelerators and NICs aligned on NUMA nodes (seed step 2: ``restricted`` policy,
``container`` scope). The same typed setting is rendered for

* AL2023 nodes: a nodeadm ``NodeConfig`` whose ``spec.kubelet.config`` is merged into the
  KubeletConfiguration (``nodeadm_node_config``),
* Bottlerocket nodes: ``settings.kubernetes.*`` (``bottlerocket_settings``),
* self-managed / on-prem nodes: a KubeletConfiguration drop-in for ``kubelet --config-dir``
  (``kubelet_config_dropin``).

Each rendering can be read back (``KubeletTopology.from_kubelet_config`` /
``from_bottlerocket_settings``), so a policy can check what a node will actually run with.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Mapping, Sequence

import yaml
from pydantic import AliasChoices, Field, field_validator, model_validator

from gpu_fabric.spec.base import SpecModel
from gpu_fabric.taints import normalize_effect

TopologyManagerPolicy = Literal["none", "best-effort", "restricted", "single-numa-node"]
TopologyManagerScope = Literal["container", "pod"]
CpuManagerPolicy = Literal["none", "static"]

KUBELET_CONFIG_API_VERSION = "kubelet.config.k8s.io/v1beta1"
NODEADM_API_VERSION = "node.eks.aws/v1alpha1"
DROPIN_PATH = "/etc/kubernetes/kubelet.conf.d/50-gpu-fabric-topology.conf"

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

_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


class TopologyRenderError(ValueError):
    """A setting has no equivalent in the requested rendering (it is never dropped silently)."""


def _option_text(value: Any) -> Any:
    # YAML turns `true` and `8` into bool/int; kubelet option maps are string-valued.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return value


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

    @field_validator("policy_options", "cpu_manager_policy_options", mode="before")
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
        canonical: dict[str, str] = {}
        for name, value in sorted(options.items()):
            kind = TOPOLOGY_POLICY_OPTION_KINDS.get(name)
            if kind is None:
                known = ", ".join(sorted(TOPOLOGY_POLICY_OPTION_KINDS))
                raise ValueError(f"policyOptions: unknown topology manager option {name!r} (known: {known})")
            if kind == "bool":
                if value not in ("true", "false"):
                    raise ValueError(f"policyOptions.{name} must be 'true' or 'false', not {value!r}")
                if value == "true":
                    canonical[name] = value
            else:
                if not value.isdigit() or int(value) < 1:
                    raise ValueError(f"policyOptions.{name} must be a positive integer, not {value!r}")
                canonical[name] = str(int(value))
        return canonical

    @field_validator("cpu_manager_policy_options")
    @classmethod
    def _known_cpu_options(cls, options: dict[str, str]) -> dict[str, str]:
        canonical: dict[str, str] = {}
        for name, value in sorted(options.items()):
            if name not in CPU_MANAGER_POLICY_OPTIONS:
                known = ", ".join(sorted(CPU_MANAGER_POLICY_OPTIONS))
                raise ValueError(f"cpuManagerPolicyOptions: unknown CPU manager option {name!r} (known: {known})")
            if value not in ("true", "false"):
                raise ValueError(f"cpuManagerPolicyOptions.{name} must be 'true' or 'false', not {value!r}")
            if value == "true":
                canonical[name] = value
        return canonical

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


# -- shared pieces ---------------------------------------------------------------------------------


def kubelet_config_fields(topology: KubeletTopology) -> dict[str, Any]:
    """The KubeletConfiguration keys (camelCase) that carry ``topology``; nothing else."""
    fields: dict[str, Any] = {
        "topologyManagerPolicy": topology.policy,
        "topologyManagerScope": topology.scope,
        "cpuManagerPolicy": topology.cpu_manager_policy,
    }
    if topology.policy_options:
        fields["topologyManagerPolicyOptions"] = dict(topology.policy_options)
    if topology.cpu_manager_policy_options:
        fields["cpuManagerPolicyOptions"] = dict(topology.cpu_manager_policy_options)
    if topology.reserved_system_cpus:
        fields["reservedSystemCPUs"] = topology.reserved_system_cpus
    return fields


def _taint_parts(taint: Any) -> tuple[str, str, str]:
    if isinstance(taint, Mapping):
        key, value, effect = taint["key"], taint.get("value") or "", taint["effect"]
    else:
        key, value, effect = taint.key, taint.value or "", taint.effect
    return key, value, normalize_effect(effect)


# -- AL2023 / nodeadm ------------------------------------------------------------------------------


def nodeadm_node_config(
    topology: KubeletTopology,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """A nodeadm ``NodeConfig`` carrying ``topology`` and, as kubelet flags, node labels and taints.

    The document has no ``cluster`` section: with EKS-chosen AMIs, EKS merges its own NodeConfig part
    (name, endpoint, CA) with this one. ``taints`` are mappings or objects with key/value/effect.
    """
    kubelet: dict[str, Any] = {"config": kubelet_config_fields(topology)}
    flags = []
    if labels:
        flags.append("--node-labels=" + ",".join(f"{key}={value}" for key, value in sorted(labels.items())))
    if taints:
        rendered = []
        for taint in taints:
            key, value, effect = _taint_parts(taint)
            rendered.append(f"{key}={value}:{effect}" if value else f"{key}:{effect}")
        flags.append("--register-with-taints=" + ",".join(rendered))
    if flags:
        kubelet["flags"] = flags
    return {"apiVersion": NODEADM_API_VERSION, "kind": "NodeConfig", "spec": {"kubelet": kubelet}}


# -- Bottlerocket ----------------------------------------------------------------------------------


def bottlerocket_settings(
    topology: KubeletTopology,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Bottlerocket user-data settings (``settings.kubernetes.*``) carrying ``topology``.

    Raises ``TopologyRenderError`` for a setting Bottlerocket has no key for.
    """
    unsupported_cpu = sorted(set(topology.cpu_manager_policy_options) - BOTTLEROCKET_CPU_MANAGER_POLICY_OPTIONS)
    if unsupported_cpu:
        raise TopologyRenderError(
            f"cpuManagerPolicyOptions {unsupported_cpu} have no Bottlerocket setting "
            f"(settings.kubernetes.cpu-manager-policy-options accepts {sorted(BOTTLEROCKET_CPU_MANAGER_POLICY_OPTIONS)})"
        )
    unsupported_topology = sorted(set(topology.policy_options) - BOTTLEROCKET_TOPOLOGY_POLICY_OPTIONS)
    if unsupported_topology:
        raise TopologyRenderError(f"policyOptions {unsupported_topology} have no Bottlerocket setting")

    kubernetes: dict[str, Any] = {
        "topology-manager-policy": topology.policy,
        "topology-manager-scope": topology.scope,
        "cpu-manager-policy": topology.cpu_manager_policy,
    }
    if topology.reserved_system_cpus:
        kubernetes["reserved-cpus"] = topology.reserved_system_cpus
    if topology.cpu_manager_policy_options:
        # Bottlerocket lists the options it turns on; every listed name becomes `name: "true"`.
        kubernetes["cpu-manager-policy-options"] = sorted(topology.cpu_manager_policy_options)
    if topology.policy_options:
        options: dict[str, Any] = {}
        for name, value in topology.policy_options.items():
            options[name] = value == "true" if TOPOLOGY_POLICY_OPTION_KINDS[name] == "bool" else int(value)
        kubernetes["topology-manager-policy-options"] = options
    if labels:
        kubernetes["node-labels"] = dict(sorted(labels.items()))
    if taints:
        node_taints: dict[str, list[str]] = {}
        for taint in taints:
            key, value, effect = _taint_parts(taint)
            node_taints.setdefault(key, []).append(f"{value}:{effect}")
        kubernetes["node-taints"] = node_taints
    return {"settings": {"kubernetes": kubernetes}}


def to_toml(document: Mapping[str, Any]) -> str:
    """Render nested tables of strings, bools, ints and lists of those as TOML, deterministically.

    Keys keep their insertion order; tables follow the scalars of their parent, as TOML requires.
    """
    lines: list[str] = []
    _write_table(lines, (), document)
    return "\n".join(lines).strip("\n") + "\n"


def _write_table(lines: list[str], path: tuple[str, ...], table: Mapping[str, Any]) -> None:
    scalars = [(key, value) for key, value in table.items() if not isinstance(value, Mapping)]
    tables = [(key, value) for key, value in table.items() if isinstance(value, Mapping)]
    if path and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_toml_key(part) for part in path) + "]")
    for key, value in scalars:
        lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in tables:
        _write_table(lines, (*path, key), value)


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__} as TOML in gpu-fabric user data")


def bottlerocket_toml(
    topology: KubeletTopology,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Any] | None = None,
) -> str:
    """Bottlerocket user data (TOML) carrying ``topology``, node labels and taints."""
    return to_toml(bottlerocket_settings(topology, labels=labels, taints=taints))


# -- self-managed / on-prem ------------------------------------------------------------------------


def kubelet_config_dropin(topology: KubeletTopology) -> dict[str, Any]:
    """A KubeletConfiguration drop-in with only the topology keys, for ``kubelet --config-dir``.

    Install it as ``DROPIN_PATH``; the kubelet merges drop-ins over its main config file.
    """
    return {"apiVersion": KUBELET_CONFIG_API_VERSION, "kind": "KubeletConfiguration", **kubelet_config_fields(topology)}


def to_yaml(document: Mapping[str, Any]) -> str:
    """Render a document as block YAML, keys in insertion order (byte-stable for equal input)."""
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False)


def kubelet_config_dropin_yaml(topology: KubeletTopology) -> str:
    """``kubelet_config_dropin`` as a YAML string."""
    return to_yaml(kubelet_config_dropin(topology))
