"""EC2 user data for EFA node groups: nodeadm MIME multipart (AL2023) and Bottlerocket TOML.

Output is byte-stable for equal input (fixed MIME boundary, ordered keys), so a launch template
shows no diff between runs.
"""

from __future__ import annotations

import base64
from typing import Any, Mapping, Sequence

from gpu_fabric.config.topology import KubeletTopology
from gpu_fabric.kube.topology import bottlerocket_toml, nodeadm_node_config, to_yaml

MIME_BOUNDARY = "==GPU-FABRIC-BOUNDARY=="
NODEADM_CONTENT_TYPE = "application/node.eks.aws"


def mime_multipart(parts: Sequence[tuple[str, str]]) -> str:
    """Join ``(content_type, body)`` parts into a ``multipart/mixed`` document with a fixed boundary.

    EKS managed node groups require MIME multipart user data on AL2023 so they can append their own
    NodeConfig part.
    """
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"', ""]
    for content_type, body in parts:
        if MIME_BOUNDARY in body:
            raise ValueError("a user-data part contains the MIME boundary")
        lines += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    lines.append(f"--{MIME_BOUNDARY}--")
    return "\n".join(lines) + "\n"


def nodeadm_user_data(
    topology: KubeletTopology,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Any] | None = None,
) -> str:
    """AL2023 user data: one ``application/node.eks.aws`` part holding the topology NodeConfig."""
    node_config = nodeadm_node_config(topology, labels=labels, taints=taints)
    return mime_multipart([(NODEADM_CONTENT_TYPE, "---\n" + to_yaml(node_config))])


def bottlerocket_user_data(
    topology: KubeletTopology,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Any] | None = None,
) -> str:
    """Bottlerocket user data: TOML settings (EKS merges the cluster settings in)."""
    return bottlerocket_toml(topology, labels=labels, taints=taints)


def user_data_for_ami(
    ami_type: str,
    topology: KubeletTopology,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Any] | None = None,
) -> str:
    """The user data format an EKS ``amiType`` reads: Bottlerocket TOML or nodeadm MIME."""
    if ami_type.startswith("BOTTLEROCKET"):
        return bottlerocket_user_data(topology, labels=labels, taints=taints)
    if ami_type.startswith("AL2023"):
        return nodeadm_user_data(topology, labels=labels, taints=taints)
    raise ValueError(f"amiType {ami_type!r}: no user-data format known (expected AL2023_* or BOTTLEROCKET_*)")


def to_base64(text: str) -> str:
    """Base64 of UTF-8 ``text``, the form launch templates take for ``userData``."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def from_base64(encoded: str) -> str:
    """Inverse of ``to_base64``."""
    return base64.b64decode(encoded).decode("utf-8")
