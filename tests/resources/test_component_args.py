"""The components' argument types stay in step with the configuration models they are validated by."""

import ast
from pathlib import Path

import pytest

from gpu_fabric.resources import args as a
from gpu_fabric.resources import deployment_args as d
from gpu_fabric.resources import kv_cache_args as k
from gpu_fabric.resources import fabric as f
from gpu_fabric.config import cluster, pool, topology_agent
from gpu_fabric.config import node_group as aws
from gpu_fabric.config import kv_cache as kv
from gpu_fabric.config import serving as g
from gpu_fabric.config.fabric import FabricConfig
from gpu_fabric.config.taints import Taint
from gpu_fabric.config.topology import KubeletTopology
from support.source_trees import parse_file

PAIRS = [
    (a.TaintArgs, Taint), (a.KubeletTopologyArgs, KubeletTopology),
    (a.PlacementGroupArgs, aws.PlacementGroupSpec), (a.ScalingArgs, aws.ScalingSpec),
    (a.RootVolumeArgs, aws.RootVolumeSpec), (a.AwsNodeGroupArgs, aws.AwsNodeGroupSpec), (a.PoolArgs, pool.PoolSpec),
    (a.TopologyAgentSettingsArgs, topology_agent.TopologyAgentSpec),
    (d.NamedRefArgs, g.NamedRef), (d.ModelArgs, g.Model), (d.EngineArgs, g.Engine), (d.RouterArgs, g.Router),
    (d.KvTransferArgs, g.KvTransfer), (d.KvCacheRefArgs, g.KvCacheRef), (d.RoleResourcesArgs, g.RoleResources),
    (d.EnvVarArgs, g.EnvVar), (d.PortArgs, g.Port), (d.RoleTopologyArgs, g.RoleTopology),
    (d.LocalObjectRefArgs, g.LocalObjectRef), (d.HostPathSourceArgs, g.HostPathSource),
    (d.AdditionalVolumeArgs, g.AdditionalVolume), (d.ElasticEpArgs, g.ElasticEp), (d.RoleArgs, g.Role),
    (d.DeploymentArgs, g.ModelDeploymentSpec), (k.TransportArgs, kv.Transport), (k.HostPathArgs, kv.HostPath),
    (k.MemberGroupArgs, kv.MemberGroup), (k.LeaderArgs, kv.Leader), (k.ManagedArgs, kv.Managed),
    (k.ExternalEndpointArgs, kv.ExternalEndpoint), (k.ExternalArgs, kv.External), (k.ConnectionArgs, kv.Connection),
    (k.KVCacheBackendArgs, kv.KVCacheBackendSpec), (k.PoolQuotaArgs, kv.PoolQuota), (k.KVCachePoolArgs, kv.KVCachePoolSpec),
    (k.DomainArgs, kv.Domain), (k.BindingQuotaArgs, kv.BindingQuota), (k.KVCachePoolBindingArgs, kv.KVCachePoolBindingSpec),
    (f.EfaPluginSettingsArgs, cluster.EfaPluginSettings),
    (f.TolerationArgs, cluster.Toleration), (f.ExternalEfaPluginArgs, cluster.ExternalEfaPlugin), (f.DeviceManagerSettingsArgs, cluster.DeviceManagerSettings),
    (f.DevicePluginSettingsArgs, cluster.DevicePluginSettings), (f.EksClusterRefArgs, cluster.EksClusterRef),
    (f.KubernetesTargetArgs, cluster.KubernetesTarget), (f.ClusterArgs, cluster.ClusterSpec), (f.GpuFabricArgs, FabricConfig),
]


@pytest.mark.parametrize("args_type, model", PAIRS, ids=[f"{t.__name__}-{m.__name__}" for t, m in PAIRS])
def test_argument_type_has_the_models_fields_and_required_keys(args_type: type, model: type) -> None:
    keys = set(args_type.__required_keys__) | set(args_type.__optional_keys__)  # type: ignore[attr-defined]
    fields = set(model.model_fields)  # type: ignore[attr-defined]
    assert keys == fields, f"{args_type.__name__} lacks {sorted(fields - keys)}, has extra {sorted(keys - fields)}"
    required = {name for name, field in model.model_fields.items() if field.is_required()}  # type: ignore[attr-defined]
    assert set(args_type.__required_keys__) == required  # type: ignore[attr-defined]


COMPONENT_MODULES = sorted((Path(__file__).resolve().parents[2] / "components" / "gpu_fabric" / "resources").glob("*.py"))


@pytest.mark.parametrize("module", COMPONENT_MODULES, ids=[m.name for m in COMPONENT_MODULES])
def test_component_modules_keep_annotations_evaluated(module: Path) -> None:
    # Pulumi's analyzer reads annotations at run time; postponed (string) annotations break it.
    tree = parse_file(module)
    futures = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    assert not futures, f"{module.name} imports from __future__"
