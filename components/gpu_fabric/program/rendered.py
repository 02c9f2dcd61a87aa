"""What one render registered: each resource as the engine would record it, and the whole run.

:func:`gpu_fabric.program.render.render_stack` builds these; ``render`` writes them, ``check`` hands them to the
policy pack (:meth:`RenderedResource.policy_resource`), ``diff`` compares two of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from gpu_fabric.config.secrets import SECRET_PLACEHOLDER


@dataclass(frozen=True)
class RenderedResource:
    """One resource the program registered."""

    type: str
    name: str
    parent: str
    """URN of the parent resource ("" for the stack itself)."""
    custom: bool
    inputs: dict[str, Any]
    urn: str
    """The URN the engine computes: the parent's full type chain, ``$``, this type (``gpu_fabric.program.urn``)."""
    dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Input name -> URNs its value came from (what the engine sends policies as property dependencies)."""
    replace_on_changes: tuple[str, ...] = ()
    """Input paths declared with ``ResourceOptions.replace_on_changes``."""
    ignore_changes: tuple[str, ...] = ()
    """Input paths declared with ``ResourceOptions.ignore_changes``."""
    depends_on: tuple[str, ...] = ()
    """URNs of every resource it waits for (``depends_on`` and input references), as the engine records them."""
    retain_on_delete: bool = False
    """Declared with ``ResourceOptions.retain_on_delete``: the engine never deletes it."""
    computed: dict[str, Any] = field(default_factory=dict)
    """What the provider computes (``id`` and outputs that are not inputs), as the offline mocks answer."""
    provider: str = ""
    """URN of the explicit provider resource that manages it ("" for a default provider)."""
    aliases: tuple[str, ...] = ()
    registered_outputs: Optional[dict[str, Any]] = None
    """A component's ``register_outputs``: what the engine's ``AnalyzeStack`` sends for it."""
    """URNs the resource was known by before (``ResourceOptions.aliases``), resolved as the engine does."""

    @property
    def public_inputs(self) -> dict[str, Any]:
        """``inputs`` with every secret value replaced by ``[secret]``: what may be written to a file."""
        return _secrets(self.inputs, reveal=False)

    @property
    def policy_inputs(self) -> dict[str, Any]:
        """``inputs`` with secrets unwrapped, as the analyzer hands them to a policy."""
        return _secrets(self.inputs, reveal=True)

    def policy_resource(self):
        """This resource as the policy pack receives it: inputs for ``Analyze``, and for ``AnalyzeStack``
        a component's registered outputs (:attr:`Resource.stack_props`)."""
        from gpu_fabric.plan.resource_view import Resource

        stack_props = None if self.registered_outputs is None else _secrets(self.registered_outputs, reveal=True)
        return Resource(self.type, self.name, self.urn, self.policy_inputs, self.parent, self.dependencies, stack_props)

    @property
    def is_kubernetes_object(self) -> bool:
        """True for pulumi-kubernetes resources that carry a full manifest."""
        return self.type.startswith("kubernetes:") and "apiVersion" in self.inputs and "kind" in self.inputs

    @property
    def is_patch(self) -> bool:
        """True for server-side-apply patches (objects adopted rather than owned)."""
        return self.type.endswith("Patch")


@dataclass
class RenderResult:
    """Everything one run of the program registered, in URN order."""

    stack: str
    resources: list[RenderedResource] = field(default_factory=list)

    def kubernetes_objects(self) -> list[dict[str, Any]]:
        """The manifests of every Kubernetes resource."""
        return [r.inputs for r in self.resources if r.is_kubernetes_object]

    def kinds(self) -> dict[str, int]:
        """Number of Kubernetes objects per kind."""
        counts: dict[str, int] = {}
        for manifest in self.kubernetes_objects():
            counts[manifest["kind"]] = counts.get(manifest["kind"], 0) + 1
        return dict(sorted(counts.items()))


# SECRET_PLACEHOLDER (config.secrets): what a render writes in place of a secret value (a Pulumi secret
# stays secret in the files), and what every offline command reads a ``secure:`` value as.


def plain_value(value: Any) -> Any:
    """Undo the wire's number encoding (every number is a double); unknowns become the engine's
    unknown sentinel (as a policy sees them at preview). Secrets keep the wire's secret wrapper."""
    from pulumi.output import Unknown
    from pulumi.runtime import rpc

    if isinstance(value, Unknown):
        return rpc.UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: plain_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_value(item) for item in value]
    return value


def _secrets(value: Any, reveal: bool) -> Any:
    """Every wire-format secret replaced by its value (``reveal``) or by :data:`SECRET_PLACEHOLDER`."""
    from pulumi.runtime import rpc

    if rpc.is_rpc_secret(value):
        return _secrets(rpc.unwrap_rpc_secret(value), reveal) if reveal else SECRET_PLACEHOLDER
    if isinstance(value, dict):
        return {key: _secrets(item, reveal) for key, item in value.items()}
    if isinstance(value, list):
        return [_secrets(item, reveal) for item in value]
    return value
