"""A component refusing a secret Output's resolved value names the property, never the secret."""

import pulumi
import pytest

from gpu_fabric.resources.efa_node_group import EfaNodeGroup
from gpu_fabric.resources.inputs import InvalidInputError
from test_component_inputs import FakeCatalog, mocks, node_group_args, root_cause, run  # noqa: F401 - mocks is a fixture

SECRET = "sg-hf0123secretvalue"


def test_a_secret_resolving_to_a_bad_value_is_refused_without_quoting_it(mocks) -> None:  # noqa: F811
    def program():
        EfaNodeGroup("h100", node_group_args(subnet_id=pulumi.Output.secret(SECRET)), catalog=FakeCatalog())

    with pytest.raises(Exception) as caught:
        run(program)
    error = root_cause(caught.value)
    assert isinstance(error, InvalidInputError)
    assert error.errors == [{"property_path": "subnet_id",
                             "reason": "'[secret]' is not a subnet id (subnet-0123456789abcdef0) [configuration]"}]
    assert SECRET not in str(error)


def test_a_plain_output_is_still_quoted(mocks) -> None:  # noqa: F811
    def program():
        EfaNodeGroup("h100", node_group_args(subnet_id=pulumi.Output.from_input("sg-0123")), catalog=FakeCatalog())

    with pytest.raises(Exception) as caught:
        run(program)
    assert "'sg-0123' is not a subnet id" in str(root_cause(caught.value))
