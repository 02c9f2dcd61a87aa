"""kubelet TopologyManager / CPU manager settings rendered three ways with one meaning.

The typed setting itself is :class:`gpu_fabric.config.topology.KubeletTopology` (what the user
writes); this module renders it for

* AL2023 nodes: a nodeadm ``NodeConfig`` whose ``spec.kubelet.config`` is merged into the
  KubeletConfiguration (``nodeadm_node_config``),
* Bottlerocket nodes: ``settings.kubernetes.*`` (``bottlerocket_settings``),
* self-managed / on-prem nodes: a KubeletConfiguration drop-in for ``kubelet --config-dir``
  (``kubelet_config_dropin``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import yaml

from gpu_fabric.config.taints import normalize_effect
from gpu_fabric.config.topology import (
    TOPOLOGY_POLICY_OPTION_KINDS,
    KubeletTopology,
    TopologyRenderError,
    bottlerocket_problems,
)


KUBELET_CONFIG_API_VERSION = "kubelet.config.k8s.io/v1beta1"
NODEADM_API_VERSION = "node.eks.aws/v1alpha1"
DROPIN_PATH = "/etc/kubernetes/kubelet.conf.d/50-gpu-fabric-topology.conf"


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
    problems = bottlerocket_problems(topology.policy_options, topology.cpu_manager_policy_options)
    if problems:
        raise TopologyRenderError(problems[0][1])

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
