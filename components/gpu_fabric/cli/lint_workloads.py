"""``gpu-fabric lint --stack NAME [--project DIR] FILE...``: manifests judged against one stack's pools.

The stack file is validated as ``render`` validates it (:func:`gpu_fabric.validation.configuration.load_config`),
then every workload of the files (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
LeaderWorkerSet) is judged on the pools it lands on (:func:`gpu_fabric.kube.workloads.judge_workloads`),
every queued workload requesting fabric devices must name a LocalQueue of the stack in its namespace
(:func:`gpu_fabric.kube.kueue_rules.workload_queue_findings`: the stack's LocalQueues, and any the files
declare, as the pack counts every LocalQueue of the stack), and every DaemonSet of the files, beside the
stack's own device plugins, is judged by :func:`gpu_fabric.kube.advertisers.advertiser_findings`; on
``deviceAllocation: dra`` pools, :func:`gpu_fabric.kube.dra_exclusive.device_plugin_findings` and
``workload_plugin_key_findings``, and every workload by :func:`gpu_fabric.kube.host_access.host_access_findings`
(``kubelet-host-access``) -- the same functions the policy pack runs. The files'
ResourceClaimTemplates, ResourceClaims and pods' ``resourceClaims`` go through the DRA rules
(:func:`gpu_fabric.kube.dra_rules.dra_findings`).

Each finding names the file, the object and the field. Objects of other kinds are passed over and
counted; a pod template that asks for the fabric (a fabric key, a claim of the stack's templates, a LocalQueue of
the stack) and lands on none of the stack's pools is a finding, any other such template is reported as not judged.
The stack's own ResourceClaimTemplates are known without being passed as files.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from gpu_fabric.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE


def _stack_config(stack: str, project: Path) -> Any:
    """The validated configuration of ``stack``; raises the render's errors (stack missing, bad file, bad config)."""
    from gpu_fabric.config.fabric import CONFIG_NAMESPACE
    from gpu_fabric.config.secrets import namespace_values
    from gpu_fabric.program.render import load_stack_config
    from gpu_fabric.validation.configuration import load_config

    raw = load_stack_config(project, stack)
    # ``secure:`` values cannot be read offline: "[secret]" in their place, as render has them.
    values = namespace_values(raw, CONFIG_NAMESPACE)
    return load_config(values, aws_region=raw.get("aws:region") if isinstance(raw.get("aws:region"), str) else None)


def stack_operator_version(stack: str, project: Path) -> str | None:
    """The ``gpu-fabric:gpustackOperator`` the stack file names, or ``None`` (unset or unreadable: the
    stack's own problems are reported by :func:`lint_against_stack`)."""
    from gpu_fabric.config.fabric import CONFIG_NAMESPACE
    from gpu_fabric.config.stack_file import StackFileError
    from gpu_fabric.program.errors import StackNotFoundError
    from gpu_fabric.program.render import load_stack_config

    try:
        value = load_stack_config(project, stack).get(f"{CONFIG_NAMESPACE}:gpustackOperator")
    except (StackFileError, StackNotFoundError, OSError, ValueError):
        return None
    return value if isinstance(value, str) else None


def _with_file_templates(context_of: Any, manifests: Sequence[Mapping[str, Any]]) -> Any:
    """``context_of`` with the ResourceClaimTemplates among the linted files counted as rendered."""
    from dataclasses import replace

    from gpu_fabric.kube.dra_claims import CLAIM_TEMPLATE_KIND, is_resource_object, object_ref as claim_ref

    in_files = frozenset((claim_ref(m).namespace or "default", claim_ref(m).name)
                         for m in manifests if is_resource_object(m, CLAIM_TEMPLATE_KIND))

    def context(namespace: str) -> Any:
        base = context_of(namespace)
        if base.rendered_templates is None:
            return base
        return replace(base, rendered_templates=base.rendered_templates | in_files)

    return context


def _capacity_of_file_deployments(config: Any, manifests: Sequence[Mapping[str, Any]]) -> list[Any]:
    """``pool-accelerator-capacity`` for the files' ModelDeployments added to the stack's own: the pools at their
    largest size must hold every role's accelerators (the rule ``load_config`` and the pack run). The stack's
    own deployments come first (they fit: the stack loaded), so a pool overfilled is blamed on a file's role."""
    from gpu_fabric.gpustack.admission_pipeline import GPUSTACK_GROUP
    from gpu_fabric.gpustack.objects import model_deployment
    from gpu_fabric.kube.workloads import object_ref
    from gpu_fabric.plan.pool_capacity import capacity_findings, pool_capacity_of

    in_files = [m for m in manifests if m.get("kind") == "ModelDeployment"
                and str(m.get("apiVersion", "")).startswith(f"{GPUSTACK_GROUP}/")]
    if not in_files:
        return []
    file_refs = {object_ref(m) for m in in_files}
    own = [manifest for d in config.model_deployments if object_ref(manifest := model_deployment(d)) not in file_refs]
    findings = capacity_findings([pool_capacity_of(pool) for pool in config.pools], [*own, *in_files])
    return [finding for finding in findings if finding.subject in file_refs]


def lint_against_stack(stack: str, project: Path, read: Sequence[tuple[dict[str, Any], str]]) -> int:
    """Print the stack verdicts over ``read`` (``(manifest, file)`` pairs); return the exit code they mean."""
    from gpu_fabric.config.base import ConfigError, non_finite_numbers
    from gpu_fabric.config.stack_file import StackFileError
    from gpu_fabric.kube.advertisers import advertiser_findings
    from gpu_fabric.kube.dra_exclusive import device_plugin_findings, workload_plugin_key_findings
    from gpu_fabric.kube.dra_claims import DRA_CLAIM_SHAPE
    from gpu_fabric.kube.dra_claims import object_ref as claim_ref
    from gpu_fabric.kube.dra_rules import claim_specs, dra_findings_by_namespace
    from gpu_fabric.kube.kueue import kueue_manifests
    from gpu_fabric.kube.kueue_rules import declared_local_queues, workload_queue_findings
    from gpu_fabric.kube.pool_view import pool_view_of
    from gpu_fabric.kube.host_access import host_access_findings
    from gpu_fabric.kube.pod_templates import WorkloadShapeError, pod_spec_of
    from gpu_fabric.kube.workloads import judge_workloads, object_ref, pool_finding_line
    from gpu_fabric.program.errors import StackNotFoundError
    from gpu_fabric.plan.dra_pools import config_dra_context, dra_manifests
    from gpu_fabric.plan.fabric_plan import stack_device_plugin_daemonsets
    from gpu_fabric.validation.fabric_facts import stack_fabric_pools

    try:
        config = _stack_config(stack, project)
    except (ConfigError, StackFileError) as error:
        print(f"gpu-fabric lint: stack {stack}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except StackNotFoundError as error:
        print(f"gpu-fabric lint: {error}", file=sys.stderr)
        return EXIT_USAGE
    pools = stack_fabric_pools(config)
    sources = {str(object_ref(manifest)): source for manifest, source in read}
    manifests = [manifest for manifest, _ in read]
    shape_problems = []
    for manifest, source in read:
        try:
            judge_workloads([manifest], [])
        except WorkloadShapeError as error:
            shape_problems.append(f"{source}: {error}")
    # The stack's own ResourceClaimTemplates join the files' (a file's copy wins), so a pod naming one is judged
    # with what it claims (hostNetwork with a DRANET device, devices against a node, the queue rule).
    file_refs = {str(claim_ref(m)) for m in manifests}
    stack_templates = [t for t in dra_manifests(config) if str(claim_ref(t)) not in file_refs]
    claimed = [*manifests, *stack_templates]
    claims, _ = claim_specs(claimed)
    # The DRA rules, each namespace with what the stack states of it (its dra pools' PCIe layouts, its LocalQueues,
    # Kueue's mapping, its templates); templates the files carry count as rendered too. Only the files are judged.
    dra = [finding for finding in dra_findings_by_namespace(claimed, _with_file_templates(config_dra_context(config), manifests))
           if finding.subject is None or str(finding.subject) in file_refs]
    # A claim that cannot be read is unusable input (exit 2); every other DRA finding is a verdict on the files.
    shape_problems.extend(f"{sources.get(str(f.subject), '?')}: {f} {f.rule_tag}" for f in dra if f.rule_id == DRA_CLAIM_SHAPE.id)
    dra = [f for f in dra if f.rule_id != DRA_CLAIM_SHAPE.id]
    if shape_problems:
        for problem in shape_problems:
            print(f"gpu-fabric lint: {problem}", file=sys.stderr)
        return EXIT_USAGE

    # The pack counts every LocalQueue of the stack; here those are the stack's own and any the files declare.
    declared = declared_local_queues([*kueue_manifests(config), *manifests])
    report = judge_workloads(manifests, pools, claims=claims,
                             local_queues={(queue.namespace, queue.name) for queue in declared})
    files_daemonsets = [m for m in manifests if m.get("kind") == "DaemonSet"]
    in_files = {object_ref(daemonset) for daemonset in files_daemonsets}
    # The stack's own plugins count unless the files carry them (a render's k8s/ output): once, as the files have them.
    own = [d for d in stack_device_plugin_daemonsets(config) if object_ref(d) not in in_files]
    advertisers = advertiser_findings(pools, [*own, *files_daemonsets])
    # deviceAllocation: dra pools: no EFA/NVIDIA device plugin on them, no device-plugin key requested there.
    views = [pool_view_of(pool) for pool in config.pools]
    advertisers += [*device_plugin_findings(views, files_daemonsets), *workload_plugin_key_findings(manifests, views)]
    own_refs = {str(object_ref(daemonset)) for daemonset in own}
    queue_findings = [finding for manifest in manifests
                      for finding in workload_queue_findings(manifest, declared, claims=claims)]
    # No API takes a NaN or an infinity (finite-numbers, as the pack refuses it in a program registering the file).
    non_finite = [finding.about(object_ref(manifest)) for manifest in manifests for finding in non_finite_numbers(manifest)]
    # All print as "subject path: message [rule]".
    object_findings = [*queue_findings, *_capacity_of_file_deployments(config, manifests), *non_finite]
    # kubelet-host-access, as the pack judges every workload a program registers (paths relative to the pod spec).
    host_access = [finding for manifest in manifests if (pod_spec := pod_spec_of(manifest))
                   for finding in host_access_findings(manifest, pod_spec, object_ref(manifest))]

    lines = [f"stack {stack}: {len(pools)} pools ({', '.join(f'{p.name} ({p.fabric})' for p in pools)})"]
    for finding in report.findings:
        lines.append(f"{str(finding.severity).upper()} {sources.get(str(finding.subject), '?')}: {pool_finding_line(finding)}")
    for advertiser in advertisers:
        subject = str(advertiser.subject)
        source = sources.get(subject) or (f"stack {stack}" if subject in own_refs else "?")
        lines.append(f"{str(advertiser.severity).upper()} {source}: {pool_finding_line(advertiser)}")
    for finding in object_findings:
        lines.append(f"{str(finding.severity).upper()} {sources.get(str(finding.subject), '?')}: {finding.subject} "
                     f"{finding.path}: {finding.message} {finding.rule_tag}")
    for finding in [*host_access, *dra]:
        lines.append(f"{str(finding.severity).upper()} {sources.get(str(finding.subject), '?')}: {finding} {finding.rule_tag}")
    for ref, path, why in report.not_judged:
        lines.append(f"NOT JUDGED {sources.get(ref, '?')}: {ref} {path}: {why}")
    later = [*advertisers, *object_findings, *host_access, *dra]
    errors = len(report.errors) + sum(1 for f in later if f.is_error)
    warnings = len(report.warnings) + sum(1 for f in later if not f.is_error)
    lines.append(f"{len(report.judged)} pod templates judged, {len(report.not_judged)} not judged, "
                 f"{report.device_plugins} device-plugin DaemonSets checked as advertisers, "
                 f"{report.passed_over} objects of other kinds passed over; "
                 f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}")
    print("\n".join(lines))
    if not errors:
        return EXIT_OK
    # As render and check: 1 when mandatory policies alone refuse, 2 when the target refuses anyway (an input rule).
    refused = [*report.errors, *(f for f in later if f.is_error)]
    return EXIT_FINDINGS if all(f.is_policy_refusal for f in refused) else EXIT_USAGE
