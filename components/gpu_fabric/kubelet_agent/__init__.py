"""The node side of ``KubeletTopologyAgent``: the program its DaemonSet pods run on each node.

Standard library only, and relative imports only: the package's modules are shipped verbatim in a
ConfigMap, mounted as the top-level package ``kubelet_agent`` and run with ``python3 -m kubelet_agent``
in a stock ``python`` image, where gpu-fabric is not installed.

* :mod:`.kubelet` -- the kubelet process in ``/proc`` and its flags;
* :mod:`.host_files` -- the host files the agent may touch: inside the mounts, never through a link;
* :mod:`.kubelet_config` -- the topology keys and merging exactly them into a config file;
* :mod:`.systemd` -- restarting the kubelet unit over systemd's private D-Bus socket;
* :mod:`.cluster` -- the restart Lease, the node's cordon, the kubelet's ``/configz``;
* :mod:`.reconcile` -- one node's pass: plan, change only when needed, compare ``/configz``;
* :mod:`.__main__` -- ``run`` and ``probe``.
"""
