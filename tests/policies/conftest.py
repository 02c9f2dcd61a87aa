"""The example stacks as the policy tests read them: rendered offline once per test module."""

from __future__ import annotations

import pytest

from support.policy_helpers import rendered


@pytest.fixture(scope="module")
def seed():
    """``seed-rdma``, the walkthrough's stack."""
    return rendered("seed-rdma")


@pytest.fixture(scope="module")
def aws_efa():
    """``aws-efa``, the EKS stack with EFA node groups."""
    return rendered("aws-efa")
