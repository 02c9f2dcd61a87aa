"""Register a component's outputs under one spelling: the schema's camelCase names of its ``Output`` attributes."""

import inspect
import typing
from typing import Any, Mapping, Optional

import pulumi
from pydantic.alias_generators import to_camel


def output_attribute_names(component_type: type) -> list[str]:
    """Names of the ``pulumi.Output[...]`` attributes a component class declares (what the schema lists)."""
    names: list[str] = []
    for cls in reversed(component_type.__mro__):
        if cls in (object, pulumi.Resource, pulumi.ComponentResource):
            continue
        for name, annotation in inspect.get_annotations(cls).items():
            if not name.startswith("_") and typing.get_origin(annotation) is pulumi.Output and name not in names:
                names.append(name)
    return names


def register_declared_outputs(component: pulumi.ComponentResource, inputs: Optional[Mapping[str, Any]] = None) -> None:
    """``register_outputs`` with every declared ``Output`` attribute, keyed by its schema (camelCase) name,
    after the ``inputs`` the component registered with.

    Without ``register_outputs`` a component stays "creating" and its outputs are not saved; deriving
    the keys from the declarations keeps state, schema and Python attributes one set of names.

    The inputs are registered again because a stack policy never sees a component's inputs: the engine
    calls ``AnalyzeStack`` with each resource's final *outputs* (pulumi/pulumi
    pkg/resource/deploy/step_generator.go ``AnalyzeResources``: ``Properties: v.Outputs``), and a
    component's outputs are exactly what ``register_outputs`` sent, replacing what it registered with.
    The pool facts the pack reads from ``KueuePool`` (and the operator line from the others) would
    otherwise be gone at ``pulumi preview``, and a pool would select nothing.
    """
    declared: dict[str, Any] = {to_camel(name): getattr(component, name) for name in output_attribute_names(type(component))}
    component.register_outputs({**(inputs or {}), **declared})
