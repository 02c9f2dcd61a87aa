"""Fresh boto3 sessions: configuration read when each is made, AWS's service models parsed once per process."""

from __future__ import annotations

import pytest

from gpu_fabric.aws.sessions import fresh_session


@pytest.fixture
def aws_config(tmp_path, monkeypatch):
    config = tmp_path / "config"
    config.write_text("[profile other]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_each_session_has_its_own_configuration_from_the_environment(aws_config):
    aws_config.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert fresh_session().region_name == "us-east-1"
    aws_config.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert fresh_session().region_name == "ap-south-1"
    explicit = fresh_session(region_name="us-west-2")
    assert (explicit.region_name, fresh_session().region_name) == ("us-west-2", "ap-south-1")
    aws_config.delenv("AWS_DEFAULT_REGION")
    assert (fresh_session(profile_name="other").region_name, fresh_session().region_name) == ("eu-west-1", None)


def test_sessions_share_the_parsed_service_models(aws_config):
    aws_config.setenv("AWS_DEFAULT_REGION", "us-east-1")
    one, two = fresh_session(), fresh_session()
    assert one._session is not two._session  # configuration and credentials stay per session
    loader = one._session.get_component("data_loader")
    assert two._session.get_component("data_loader") is loader
    model = one.client("ec2", endpoint_url="http://127.0.0.1:9")._service_model
    assert two.client("ec2", endpoint_url="http://127.0.0.1:9")._service_model.operation_names == model.operation_names
    assert loader.load_service_model("ec2", "service-2") is loader.load_service_model("ec2", "service-2")
