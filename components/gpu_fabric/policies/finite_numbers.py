"""``finite-numbers`` (mandatory): no resource of the stack is given a NaN or an infinite number.

An adapter of :func:`gpu_fabric.config.base.non_finite_numbers` over every resource's inputs. A NaN
reaches the engine when a program computes one (``0 / 0`` in numpy, ``float("nan")`` from a parsed
value); the Kubernetes and AWS APIs take no such number and protobuf's JSON mapping has none, so the
analyzer used to fail the whole preview on it (:func:`gpu_fabric.policies.engine_wire.decode_non_finite_numbers`
now lets it through to this policy, which names the field).

Under ``pulumi preview`` the pack judges the inputs the provider's ``Check`` returned. The Kubernetes provider
round-trips a built-in kind through its Go type there (v4.25.0 ``pkg/clients/unstructured.go`` ``Normalize``), and
apimachinery's converter turns an infinite number into an integer field's value (``replicas: inf`` arrives as 0):
only ``check --preview`` and ``lint``, which read the program's own values, see that one. A NaN, and any
non-finite number in a custom resource (never normalized), reach this policy under the engine too.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy, Severity

from gpu_fabric.config.base import non_finite_numbers
from gpu_fabric.policies.engine_wire import resource_of
from gpu_fabric.policies.reporting import report_finding


def _validate(args: ResourceValidationArgs, report_violation: Any) -> None:
    resource = resource_of(args)
    for finding in non_finite_numbers(resource.props):
        report_finding(report_violation, finding, f"{resource.name}: {finding.path} {finding.message}")


finite_numbers = ResourceValidationPolicy(
    name="finite-numbers",
    display_name="Resource inputs are finite numbers",
    description="No resource input is NaN or infinite: no Kubernetes or AWS API takes one and JSON cannot carry it.",
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["inputs"],
    remediation_steps="Find where the program computes the number (a division by zero, a parsed 'nan') and give a finite value.",
)
