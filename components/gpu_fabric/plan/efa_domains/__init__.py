"""Fabric domains: which pools exchange EFA (or RDMA) traffic, and what that asks of their node groups.

* :mod:`~gpu_fabric.plan.efa_domains.derivation`: the pools, legs and domains (:class:`DomainPlan`) and every
  reason a domain cannot carry its traffic (:func:`derive_domains`), pure;
* :mod:`~gpu_fabric.plan.efa_domains.from_config`: the same over a validated configuration
  (:func:`domains_from_config`), with findings at configuration paths;
* :mod:`~gpu_fabric.plan.efa_domains.naming`: the component and security-group names ``GpuFabric`` gives a
  domain;
* :mod:`~gpu_fabric.plan.efa_domains.description`: a domain in people's words, for the CLI summaries.

The Pulumi component that registers a domain's security group is
:class:`gpu_fabric.resources.efa_domain.EfaDomain`. Import each name from its module; this package
re-exports nothing.
"""
