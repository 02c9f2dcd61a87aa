"""The node side of ``KubeletTopologyAgent``: the program its DaemonSet pods run on each node.

:mod:`gpu_fabric.kubelet_agent.script` uses the Python standard library only: it is shipped verbatim
in a ConfigMap and runs in a stock ``python`` image, where gpu-fabric is not installed.
"""
