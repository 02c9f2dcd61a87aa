"""``gpu-fabric verify``: compare a live cluster with what a stack declares.

The flow, one concept per module:

* :mod:`~gpu_fabric.verify.expectations` (pure): what the validated stack and the manifests its
  render registers promise -- each pool's nodes, their allocatable accelerators and fabric
  endpoints, their kubelet topology settings, and every object the stack registers.
* :mod:`~gpu_fabric.verify.api` (edge): raw ``GET`` responses from the Kubernetes API through the
  official client's connection pool, each within its deadline and the run's, bodies bounded.
* :mod:`~gpu_fabric.verify.recording` (edge): those responses recorded to or replayed from a folder.
* :mod:`~gpu_fabric.verify.answers` (pure): every answer read through its expected shape, so a
  wrong type is a refusal naming the object, the field and the server.
* :mod:`~gpu_fabric.verify.target` (edge): which cluster and credential, resolved the way the
  stack's Kubernetes provider (or ``kubectl``) resolves them.
* :mod:`~gpu_fabric.verify.collect` (edge): reads the few API paths the checks need into a
  :class:`~gpu_fabric.verify.snapshot.ClusterSnapshot` (nodes listed once, kubelet configs in parallel).
* :mod:`~gpu_fabric.verify.checks` (pure): expectations x snapshot -> a report of checks, each
  naming the node or object, the expected and the found value.
* :mod:`~gpu_fabric.verify.nccl` (pure): did an NCCL test run over EFA / RDMA, or fall back to sockets?
* :mod:`~gpu_fabric.verify.report` (pure): the report as a table for people or JSON for machines.
"""
