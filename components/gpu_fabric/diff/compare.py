"""Compare two renders of a stack resource by resource, in Pulumi's vocabulary.

Resources match by URN. A resource only in the head is a ``create``; only in the base, a
``delete``; in both, its inputs are compared path by path (after dropping ``ignore_changes``
paths, as the engine does) and the step is ``replace`` when a changed path forces replacement
(``replace_rules``), ``update`` otherwise, ``same`` when nothing changed.

What a preview shows as "known after apply" is propagated too: when a resource is created or
replaced its id and computed outputs are new, and when a launch template is updated its
``latestVersion`` is new; every input that was built from such an output (the engine's property
dependencies say which) changes with it, so the node group that reads the template's version is
an update that rolls its nodes, and a rule of a replaced security group is replaced.
"""

from __future__ import annotations

from graphlib import TopologicalSorter
from typing import Any, Iterable, Mapping, Optional, Protocol, Sequence

from gpu_fabric.diff.digest import SECRET, UNKNOWN, Change, Digest, Step, sort_steps, summarize
from gpu_fabric.diff.paths import Path, format_path, is_under, parse_path
from gpu_fabric.diff.replace_rules import (
    UPDATE_COMPUTED_OUTPUTS,
    forces_replacement,
    provider_config_replaces,
    rolls_nodes,
    source_kind_switched,
)

# The wire marks a secret as {SECRET_SIG_KEY: SECRET_SIG, "value": ...}: pulumi/pulumi
# sdk/python/lib/pulumi/runtime/rpc.py (_special_sig_key, _special_secret_sig).
SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


class PlannedResource(Protocol):
    """What the comparison reads of a rendered resource (``gpu_fabric.program.render.RenderedResource``)."""

    @property
    def urn(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> str: ...

    @property
    def custom(self) -> bool: ...

    @property
    def inputs(self) -> dict[str, Any]: ...

    @property
    def replace_on_changes(self) -> tuple[str, ...]: ...

    @property
    def ignore_changes(self) -> tuple[str, ...]: ...

    @property
    def dependencies(self) -> dict[str, tuple[str, ...]]: ...

    @property
    def computed(self) -> dict[str, Any]: ...

    @property
    def provider(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


class _Secret:
    """A secret value: compared by value, never shown."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Secret) and other.value == self.value

    def __hash__(self) -> int:  # pragma: no cover - values are compared, not hashed
        return 0


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG_KEY) == SECRET_SIG


def unwrap_secrets(value: Any) -> Any:
    """Replace wire-format secrets with opaque markers (compared by value, shown as ``[secret]``)."""
    if _is_secret(value):
        return _Secret(value.get("value"))
    if isinstance(value, dict):
        return {key: unwrap_secrets(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrap_secrets(item) for item in value]
    return value


def redact(value: Any) -> Any:
    """The value with every secret (marker or wire format) replaced by ``"[secret]"``."""
    if isinstance(value, _Secret) or _is_secret(value):
        return SECRET
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def path_changes(old: Any, new: Any, path: Path = ()) -> list[Change]:
    """Every leaf-most path where ``old`` and ``new`` differ; lists compare index by index."""
    if isinstance(old, _Secret) or isinstance(new, _Secret):
        return [] if old == new else [Change(path, "update", SECRET, SECRET)]
    if isinstance(old, dict) and isinstance(new, dict):
        changes: list[Change] = []
        for key in sorted(set(old) | set(new)):
            if key not in old:
                changes.append(Change(path + (key,), "add", None, redact(new[key])))
            elif key not in new:
                changes.append(Change(path + (key,), "delete", redact(old[key]), None))
            else:
                changes.extend(path_changes(old[key], new[key], path + (key,)))
        return changes
    if isinstance(old, list) and isinstance(new, list):
        changes = []
        for index in range(max(len(old), len(new))):
            if index >= len(old):
                changes.append(Change(path + (index,), "add", None, redact(new[index])))
            elif index >= len(new):
                changes.append(Change(path + (index,), "delete", redact(old[index]), None))
            else:
                changes.extend(path_changes(old[index], new[index], path + (index,)))
        return changes
    if old == new and type(old) is type(new):
        return []
    return [Change(path, "update", redact(old), redact(new))]


def _ignored(path: Path, ignore_changes: Iterable[str]) -> bool:
    return any(is_under(path, parse_path(pattern)) for pattern in ignore_changes)


def _state(resource: PlannedResource) -> dict[str, Any]:
    state: dict[str, Any] = {
        "urn": resource.urn, "type": resource.type, "custom": resource.custom,
        "inputs": redact(resource.inputs),
    }
    if resource.parent:
        state["parent"] = resource.parent
    if resource.replace_on_changes:
        state["replaceOnChanges"] = list(resource.replace_on_changes)
    if resource.ignore_changes:
        state["ignoreChanges"] = list(resource.ignore_changes)
    return state


def _leaves(value: Any, path: Path) -> Iterable[tuple[Path, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))
    else:
        yield path, value


def _set_path(document: Any, path: Path, value: Any) -> None:
    for segment in path[:-1]:
        document = document[segment]
    document[path[-1]] = value


def _new_outputs(step_op: str, producer: PlannedResource) -> set[str]:
    """String forms of the producer's outputs that a preview would show as unknown."""
    if step_op in ("create", "replace"):
        keys: Iterable[str] = producer.computed.keys()
    elif step_op == "update":
        keys = UPDATE_COMPUTED_OUTPUTS.get(producer.type, ())
    else:
        return set()
    return {str(producer.computed[key]) for key in keys if key in producer.computed}


def compare(
    base: Sequence[PlannedResource],
    head: Sequence[PlannedResource],
    *,
    stack: str = "",
    base_label: str = "",
    head_label: str = "",
) -> Digest:
    """The steps that turn the ``base`` render into the ``head`` render."""
    old = {resource.urn: resource for resource in base}
    new = {resource.urn: resource for resource in head}
    # A head resource that declares an alias naming a base resource is that resource, moved or renamed.
    previous = {urn: next((alias for alias in resource.aliases if alias in old and alias not in new), urn)
                for urn, resource in new.items()}
    old_by_new = {urn: old[before] for urn, before in previous.items() if before in old}
    old_inputs = {urn: unwrap_secrets(resource.inputs) for urn, resource in old_by_new.items()}
    new_inputs = {urn: unwrap_secrets(resource.inputs) for urn, resource in new.items()}
    ops: dict[str, str] = {}
    steps: dict[str, Step] = {}

    # Producers before consumers, so a replaced producer is known when its consumers are classified.
    graph = TopologicalSorter({
        urn: {dep for deps in resource.dependencies.values() for dep in deps if dep in new}
        | ({resource.provider} if resource.provider in new else set())
        for urn, resource in new.items()
    })
    for urn in graph.static_order():
        resource = new[urn]
        if urn not in old_by_new:
            ops[urn] = "create"
            steps[urn] = Step("create", urn, resource.type, new_state=_state(resource))
            continue
        changes = [
            change for change in path_changes(old_inputs[urn], new_inputs[urn])
            if not _ignored(change.path, resource.ignore_changes)
        ]
        changes = _with_unknowns(resource, changes, new, ops)
        declared = resource.replace_on_changes
        changes = [
            Change(c.path, c.kind, c.old, c.new, forces_replacement(resource.type, c.path, declared)) for c in changes
        ]
        if source_kind_switched(resource.type, old_inputs[urn], new_inputs[urn]):
            changes = [Change(c.path, c.kind, c.old, c.new, c.replaces or len(c.path) == 1) for c in changes]
        provider_replaces = set(provider_config_replaces(resource.type, old_inputs[urn], new_inputs[urn]))
        if provider_replaces:
            changes = [Change(c.path, c.kind, c.old, c.new, c.replaces or str(c.path[0]) in provider_replaces) for c in changes]
        # The engine replaces every resource of a replaced provider (step_generator.go,
        # calculateDependentReplacements: "If the resource's provider is in the replace set").
        provider_replaced = resource.custom and ops.get(resource.provider) == "replace"
        op = "replace" if provider_replaced or any(c.replaces for c in changes) else "update" if changes else "same"
        ops[urn] = op
        if op == "same":
            continue
        new_state = _state(resource)
        for change in changes:
            if change.new == UNKNOWN:
                _set_path(new_state["inputs"], change.path, UNKNOWN)
        steps[urn] = Step(
            op, urn, resource.type, changes,
            rolls_nodes=rolls_nodes(resource.type, op, [c.path for c in changes]),
            old_state=_state(old_by_new[urn]), new_state=new_state,
            hints=[f"its provider {resource.provider} is replaced, so it is deleted and created again"]
            if provider_replaced else [],
        )
    kept = {resource.urn for resource in old_by_new.values()}
    for urn, resource in old.items():
        if urn not in kept:
            ops[urn] = "delete"
            steps[urn] = Step("delete", urn, resource.type, old_state=_state(resource))

    _hint_aliases(steps, old, new)
    return Digest(stack, sort_steps(list(steps.values())), summarize(list(ops.values())), base_label, head_label)


def _with_unknowns(
    resource: PlannedResource, changes: list[Change], new: Mapping[str, PlannedResource], ops: Mapping[str, str]
) -> list[Change]:
    """Add the inputs that come from a producer's outputs a preview would not know yet."""
    changed = {change.path for change in changes}
    added: list[Change] = []
    for prop, producers in sorted(resource.dependencies.items()):
        unknown: set[str] = set()
        for producer in producers:
            if producer in new:
                unknown |= _new_outputs(ops.get(producer, "same"), new[producer])
        if not unknown or prop not in resource.inputs:
            continue
        for path, value in _leaves(resource.inputs[prop], (prop,)):
            if str(value) in unknown and path not in changed:
                added.append(Change(path, "update", redact(value), UNKNOWN))
                changed.add(path)
    return sorted(changes + added, key=lambda change: format_path(change.path))


def _kubernetes_identity(resource: PlannedResource) -> Optional[tuple[str, str, str, str]]:
    inputs = resource.inputs
    metadata = inputs.get("metadata") if isinstance(inputs.get("metadata"), dict) else None
    if not resource.type.startswith("kubernetes:") or not metadata or not metadata.get("name"):
        return None
    return (str(inputs.get("apiVersion")), str(inputs.get("kind")), str(metadata.get("namespace") or ""), str(metadata["name"]))


def _hint_aliases(steps: dict[str, Step], old: Mapping[str, PlannedResource], new: Mapping[str, PlannedResource]) -> None:
    """Pair each deleted resource with the created one it became (moved parent or new name)."""
    deleted = [old[urn] for urn, step in sorted(steps.items()) if step.op == "delete"]
    created = [new[urn] for urn, step in sorted(steps.items()) if step.op == "create"]
    taken: set[str] = set()
    for gone in deleted:
        for born in created:
            if born.urn in taken or born.type != gone.type:
                continue
            same_object = _kubernetes_identity(gone) is not None and _kubernetes_identity(gone) == _kubernetes_identity(born)
            if not (born.name == gone.name or same_object or (born.parent == gone.parent and born.inputs == gone.inputs)):
                continue
            taken.add(born.urn)
            what = "parent" if born.name == gone.name else "name" if born.parent == gone.parent else "name and parent"
            alias = _alias_text(gone, born)
            steps[gone.urn].hints.append(
                f"its {what} changed: it is deleted and created again as {born.urn}; add {alias} to the new resource to keep it")
            steps[born.urn].hints.append(
                f"this is {gone.urn} with a new {what}; add {alias} to keep the existing resource instead of deleting it")
            break


def _alias_text(gone: PlannedResource, born: PlannedResource) -> str:
    """The ``ResourceOptions(aliases=...)`` a program needs for the engine to treat ``born`` as ``gone``.

    The old URN itself: every SDK's ``aliases`` takes a URN string as well as an ``Alias`` spec.
    """
    return f'aliases=["{gone.urn}"]'


def rolled_node_groups(digest: Digest) -> list[Step]:
    """The node-group steps that roll nodes."""
    return [step for step in digest.steps if step.rolls_nodes]


def change_paths(step: Step) -> list[str]:
    """The ``detailedDiff`` keys of a step."""
    return [format_path(change.path) for change in step.changes]
