"""A rendered manifest's YAML is PyYAML's pure-Python output byte for byte, whichever emitter wrote it."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_fabric.cli import yaml_text as module
from gpu_fabric.cli.render import manifest_text
from gpu_fabric.program.render import render_stack

from support.stack_configs import PROJECT_DIR

STACKS = ("seed-rdma", "aws-efa", "dra-efa", "karpenter-efa")


def pure_python(document) -> str:
    return yaml.dump(document, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False, width=module.WIDTH)


def test_every_example_stacks_manifests_are_written_as_the_pure_python_emitter_writes_them():
    fast = 0
    for stack in STACKS:
        for resource in render_stack(stack, PROJECT_DIR).resources:
            if not resource.is_kubernetes_object:
                continue
            document = resource.public_inputs
            assert module.yaml_text(document) == pure_python(document), (stack, resource.name)
            fast += module._unfolded(document, 0)
    assert fast >= 30, "libyaml writes nearly every manifest (the point of the module): 34 of 36 when written"
    assert module._FAST_DUMPER is not None, "PyYAML without libyaml: the wheel this project pins ships it"


def test_a_long_string_that_the_emitters_fold_apart_takes_the_pure_python_emitter():
    # User data of an EC2NodeClass: libyaml breaks this double-quoted string at other places than PyYAML.
    document = {"spec": {"userData": (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="==GPU-FABRIC-BOUNDARY=="\n\n'
        "--==GPU-FABRIC-BOUNDARY==\nContent-Type: application/node.eks.aws\n\n---\napiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\nspec:\n  kubelet:\n    config:\n      topologyManagerPolicy: restricted\n")}}
    assert not module._unfolded(document, 0)
    assert yaml.dump(document, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False,
                     width=module.WIDTH) != pure_python(document)  # why the rule exists
    assert module.yaml_text(document) == pure_python(document)


def test_the_rendered_file_is_the_pure_python_emitters():
    resource = next(r for r in render_stack("aws-efa", PROJECT_DIR).resources if r.is_kubernetes_object)
    text = manifest_text(resource.public_inputs)
    assert yaml.safe_load(text) == resource.public_inputs


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=70), st.sampled_from(["yes", "no", "null", "~", "1.30", "0o17", "- a", ": b",
                                                           "#c", " lead", "trail ", "'q'", '"d"', "a: b", "{x}",
                                                           "[y]", "*z", "&w", "!t", "%p", "@r", "`s", "", "="]))
KEYS = st.one_of(st.text(max_size=30), st.sampled_from(["yes", "null", "1", "a b", "- x", "k:"]))
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(KEYS, inner, max_size=4)), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(KEYS, DOCUMENTS, min_size=1, max_size=5))
def test_generated_documents_are_written_as_the_pure_python_emitter_writes_them(document):
    assert module.yaml_text(document) == pure_python(document)
