"""Every rule gpu-fabric decides, once: its record (:class:`~gpu_fabric.findings.Rule`) and the function that decides it.

The rules live in their domains (``gpustack/``, ``kube/``, ``aws/``, ``plan/``, the configuration's own
in ``config/`` and here); this registry lists them all, with the policy of the pack that reports each at
preview, its enforcement, what a refusal means to the command line and where the rule comes from.
``gpu-fabric check --list-policies`` and ``docs/rules.md`` (``scripts/generate_rule_catalogue.py``) are
produced from it, and a test keeps it complete: every ``Rule`` a module of the package defines is here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from gpu_fabric.aws import instance_facts, karpenter, launch_template_rules, node_group_placement, security_group_rules
from gpu_fabric.config import base as config_base, config_size
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.findings import Enforcement, Rule
from gpu_fabric.gpustack import admission_pipeline, device_manager_access, privilege_rules, rules as gpustack_rules, schema
from gpu_fabric.gpustack.admission import kv_cache_backend, kv_cache_pool, kv_cache_pool_binding, model_deployment
from gpu_fabric.gpustack.profiles import profile_for, stand_in_findings
from gpu_fabric.kube import (
    advertisers,
    coverage,
    dra_claims,
    dra_exclusive,
    dra_rules,
    host_access,
    kueue_rules,
    topology_rules,
    workload_rules,
    workloads,
)
from gpu_fabric.plan import dra_pools, fabric_plan, kv_cache_references, pool_capacity, transport_fabric
from gpu_fabric.plan.efa_domains import derivation, rules as domain_rules
from gpu_fabric.validation import configuration


@dataclass(frozen=True)
class RegisteredRule:
    """A rule and the function that decides it."""

    rule: Rule
    function: Callable[..., Any]

    @property
    def id(self) -> str:
        return self.rule.id

    @property
    def policy(self) -> Optional[str]:
        return self.rule.policy

    @property
    def enforcement(self) -> Enforcement:
        return self.rule.enforcement

    @property
    def source(self) -> str:
        return self.rule.source

    @property
    def summary(self) -> str:
        return self.rule.summary

    @property
    def function_name(self) -> str:
        """``module.qualname`` of :attr:`function`."""
        return f"{self.function.__module__}.{self.function.__qualname__}"

    @property
    def exit_code(self) -> int:
        """What an error of the rule means before registration: 1 (a policy's refusal) or 2 (unusable input)."""
        return self.rule.refuses_as.exit_code

    def reported_by(self, policy: str) -> bool:
        """The rule's findings (its errors, or its warnings) are ``policy``'s violations."""
        return policy in (self.rule.policy, self.rule.warnings_policy)


def _entries(*pairs: tuple[Rule, Callable[..., Any]]) -> tuple[RegisteredRule, ...]:
    return tuple(RegisteredRule(rule, function) for rule, function in pairs)


REGISTRY: tuple[RegisteredRule, ...] = _entries(
    # What the user writes, and what the stack's objects refer to.
    (config_base.CONFIGURATION, FabricConfig),
    (config_base.FINITE_NUMBERS, config_base.non_finite_numbers),
    (config_size.STACK_CONFIG_SIZE, config_size.config_size_findings),
    (configuration.REFERENCES, configuration.reference_findings),
    (configuration.AWS_TARGET, configuration.aws_target_findings),
    (fabric_plan.TOPOLOGY_AGENT_SCOPE, fabric_plan.topology_agent_problems),
    # The GPUStack operator's API server and webhooks.
    (gpustack_rules.GPUSTACK_OPERATOR_VERSION, profile_for),
    (gpustack_rules.GPUSTACK_OPERATOR_STAND_IN, stand_in_findings),
    (gpustack_rules.GPUSTACK_CRD_SCHEMA, schema.validate_object),
    (gpustack_rules.GPUSTACK_API_GROUP, admission_pipeline.api_group_findings),
    (gpustack_rules.WHOLE_ACCELERATORS, admission_pipeline.accelerator_findings),
    (gpustack_rules.MODEL_DEPLOYMENT_ADMISSION, model_deployment.deployment_findings),
    (gpustack_rules.KV_CACHE_BACKEND_ADMISSION, kv_cache_backend.backend_findings),
    (gpustack_rules.KV_CACHE_POOL_ADMISSION, kv_cache_pool.pool_findings),
    (gpustack_rules.KV_CACHE_POOL_BINDING_ADMISSION, kv_cache_pool_binding.binding_findings),
    (privilege_rules.MOONCAKE_MEMBERS_UNPRIVILEGED, privilege_rules.member_privilege_findings),
    (privilege_rules.MODEL_DEPLOYMENT_UNPRIVILEGED_ROLES, privilege_rules.role_privilege_findings),
    (device_manager_access.DEVICE_MANAGER_LEAST_PRIVILEGE, device_manager_access.rules_excess),
    # EC2 and EKS.
    (launch_template_rules.EFA_LAUNCH_TEMPLATE_INTERFACES, launch_template_rules.interface_findings),
    (launch_template_rules.LAUNCH_TEMPLATE_IMDSV2, launch_template_rules.imds_findings),
    (launch_template_rules.LAUNCH_TEMPLATE_EBS_ENCRYPTED, launch_template_rules.ebs_findings),
    (instance_facts.POOL_INSTANCE_FACTS, instance_facts.pool_instance_findings),
    (security_group_rules.EFA_SECURITY_GROUP_SELF_RULES, security_group_rules.self_rule_findings),
    (node_group_placement.EFA_NODE_GROUP_PLACEMENT, node_group_placement.placement_findings),
    (karpenter.KARPENTER_EFA_POOL, karpenter.karpenter_findings),
    # Fabric domains: pools that exchange fabric traffic.
    (domain_rules.DOMAIN_AVAILABILITY_ZONE, derivation.derive_domains),
    (domain_rules.DOMAIN_VPC, derivation.derive_domains),
    (domain_rules.DOMAIN_ISOLATED_FAMILY, derivation.derive_domains),
    (domain_rules.DOMAIN_MEMBER_SELECTOR, derivation.derive_domains),
    (domain_rules.DOMAIN_SECURITY_GROUP, derivation.shared_security_group_findings),
    (domain_rules.DOMAIN_FABRIC_MIX, derivation.derive_domains),
    (transport_fabric.KV_MEMBER_TRANSPORT_FABRIC, transport_fabric.member_findings),
    (transport_fabric.ROLE_TRANSFER_LEG_FABRIC, transport_fabric.role_leg_findings),
    (transport_fabric.ROLE_INTERFACES_BESIDE_MEMBERS, transport_fabric.shared_node_findings),
    (kv_cache_references.KV_CACHE_UNREFERENCED, kv_cache_references.unreferenced_findings),
    (kv_cache_references.KV_TRANSFER_WITHOUT_ROUTER, kv_cache_references.router_findings),
    (pool_capacity.POOL_ACCELERATOR_CAPACITY, pool_capacity.capacity_findings),
    # Nodes: device plugins, kubelet topology, Kueue, host access.
    (coverage.DEVICE_PLUGIN_COVERAGE, coverage.uncovered_pools),
    (advertisers.EFA_PLUGIN_VERSION, advertisers.advertiser_findings),
    (advertisers.NVIDIA_PLUGIN_MOFED, advertisers.advertiser_findings),
    (advertisers.ONE_ADVERTISER_PER_NIC, advertisers.advertiser_findings),
    (topology_rules.FABRIC_POOL_TOPOLOGY, topology_rules.topology_findings),
    (topology_rules.FABRIC_POOL_TOPOLOGY_ALIGNMENT, topology_rules.alignment_findings),
    (topology_rules.FABRIC_POOL_TOPOLOGY_DELIVERED, topology_rules.delivery_findings),
    (dra_pools.DRA_KUBERNETES_VERSION_RULE, dra_pools.kubernetes_version_findings),
    (dra_pools.DRA_POOL_PROVISIONER, dra_pools.provisioner_findings),
    (dra_pools.DRA_POOL_TOPOLOGY, dra_pools.topology_findings),
    (dra_pools.DRA_POOL_QUEUE_OWNER, dra_pools.queue_owner_findings),
    (dra_exclusive.DRA_POOL_DEVICE_PLUGIN, dra_exclusive.device_plugin_findings),
    (dra_exclusive.DRA_POOL_PLUGIN_KEYS, dra_exclusive.plugin_key_findings),
    (kueue_rules.KUEUE_FABRIC_WORKLOAD_QUEUE, kueue_rules.workload_queue_findings),
    (kueue_rules.KUEUE_FABRIC_KEYS_COVERED, kueue_rules.covered_keys_findings),
    (host_access.KUBELET_HOST_ACCESS, host_access.host_access_findings),
    # Workloads on fabric pools.
    *((spec.rule, spec.check) for spec in workload_rules.RULES),
    (workload_rules.WORKLOAD_NODE_CAPACITY, workloads.node_capacity_findings),
    (workload_rules.WORKLOAD_LANDS_ON_NO_POOL, workloads.no_pool_finding),
    # Dynamic Resource Allocation: claims, their templates and the pods that use them.
    (dra_claims.DRA_CLAIM_SHAPE, dra_claims.read_claim_template),
    (dra_rules.DRA_DRANET_HOST_NETWORK, dra_rules.host_network_findings),
    (dra_rules.DRA_NUMA_CONSTRAINT_NVIDIA, dra_rules.numa_constraint_findings),
    (dra_rules.DRA_PCIE_ROOT_CAPACITY, dra_rules.pcie_root_capacity_findings),
    (dra_rules.DRA_KUEUE_REQUEST_MODE, dra_rules.kueue_request_mode_findings),
    (dra_rules.DRA_KUEUE_DEVICE_CLASS_MAPPED, dra_rules.kueue_device_class_findings),
    (dra_rules.DRA_CLAIM_TEMPLATE_RENDERED, dra_rules.template_reference_findings),
    (workload_rules.PLAINTEXT_CREDENTIAL, workload_rules.credential_findings),
)
"""Every rule, grouped by domain."""

BY_ID: dict[str, RegisteredRule] = {entry.id: entry for entry in REGISTRY}


def registered(rule_id: str) -> RegisteredRule:
    """The registry entry of ``rule_id`` (``KeyError`` for a rule not registered)."""
    return BY_ID[rule_id]


def rules_of_policy(policy: str) -> list[RegisteredRule]:
    """The rules whose findings ``policy`` reports, in registry order."""
    return [entry for entry in REGISTRY if entry.reported_by(policy)]


def rules_without_policy() -> list[RegisteredRule]:
    """The rules only ``load_config`` (and the components) refuse: no policy of the pack reports them."""
    return [entry for entry in REGISTRY if entry.policy is None]
