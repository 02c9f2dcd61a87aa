"""Register a component's outputs under one spelling: the schema's camelCase names of its ``Output`` attributes."""

import inspect
import typing
from typing import Any

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


def register_declared_outputs(component: pulumi.ComponentResource) -> None:
    """``register_outputs`` with every declared ``Output`` attribute, keyed by its schema (camelCase) name.

    Without ``register_outputs`` a component stays "creating" and its outputs are not saved; deriving
    the keys from the declarations keeps state, schema and Python attributes one set of names.
    """
    outputs: dict[str, Any] = {to_camel(name): getattr(component, name) for name in output_attribute_names(type(component))}
    component.register_outputs(outputs)
