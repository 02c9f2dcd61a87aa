"""The bad-input table: one row per mistake a careless or hostile user makes in a stack file.

Each row is ``id -> (stack file text or bytes, fragments the refusal must contain)``; the ids are grouped
as ``stack-file/``, ``numbers/``, ``syntax/``, ``references/`` and ``shapes/``. ``project/test_bad_input.py``
renders every row, and ``config/test_schema.py`` holds the JSON Schema to the same rows.
"""

from __future__ import annotations

from typing import Any, Callable

from support.bad_input import dump, stack_document

Doc = dict[str, Any]


def seed(change: Callable[[Doc], Any]) -> str:
    document = stack_document("seed-rdma")
    change(document["config"])
    return dump(document)


def efa(change: Callable[[Doc], Any]) -> str:
    document = stack_document("aws-efa")
    change(document["config"])
    return dump(document)


def pool(config: Doc, index: int = 0) -> Doc:
    return config["gpu-fabric:pools"][index]


def role(config: Doc, index: int = 0) -> Doc:
    return config["gpu-fabric:modelDeployments"][0]["roles"][index]


def member(config: Doc) -> Doc:
    return config["gpu-fabric:kvCacheBackends"][0]["connection"]["managed"]["members"][0]


SEED_TEXT = dump(stack_document("seed-rdma"))

# id -> (stack file text or bytes, fragments the refusal must contain)
STACK_FILES: dict[str, tuple[Any, tuple[str, ...]]] = {
    "file-is-a-list": ("- a\n- b\n", ("Pulumi.x.yaml", "mapping")),
    "file-is-a-scalar": ("just text\n", ("Pulumi.x.yaml", "mapping")),
    "config-is-a-list": ("config:\n  - gpu-fabric:pools\n", ("Pulumi.x.yaml", "config")),
    "config-is-a-string": ("config: nope\n", ("Pulumi.x.yaml", "config")),
    "not-utf8": (b"config:\n  gpu-fabric:namespaces: [\xff\xfe]\n", ("Pulumi.x.yaml", "UTF-8")),
    "alias-bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))
        + "config:\n  gpu-fabric:namespaces: *i\n",
        ("Pulumi.x.yaml", "alias"),
    ),
    "yaml-syntax-error": ("config:\n  gpu-fabric:namespaces: [team-a\n", ("Pulumi.x.yaml", "line")),
    "date-value": (SEED_TEXT.replace("feature.gpustack.ai/rdma.capable: 'true'", "feature.gpustack.ai/rdma.capable: 2024-01-01"),
                   ("Pulumi.x.yaml", "date")),
    "binary-value": (SEED_TEXT.replace("- team-a", "- !!binary aGVsbG8=", 1), ("Pulumi.x.yaml", "binary")),
    "set-value": (SEED_TEXT.replace("  gpu-fabric:namespaces:\n  - team-a", "  gpu-fabric:namespaces: !!set {team-a}"),
                  ("Pulumi.x.yaml", "namespaces")),
    "non-string-key": (SEED_TEXT.replace("    nodeCount: 2", "    nodeCount: 2\n    1: x"), ("Pulumi.x.yaml", "key")),
    "duplicate-config-key": (SEED_TEXT.replace("  gpu-fabric:gpustackApiVersion: v1",
                                               "  gpu-fabric:gpustackApiVersion: v1\n  gpu-fabric:queueOwner: standalone"),
                             ("Pulumi.x.yaml", "gpu-fabric:queueOwner", "more than once")),
    "duplicate-nested-key": (SEED_TEXT.replace("    nodeCount: 2", "    nodeCount: 2\n    nodeCount: 3"),
                             ("Pulumi.x.yaml", "nodeCount", "more than once")),
    "near-miss-underscore": (SEED_TEXT.replace("gpu-fabric:kvCacheBackends", "gpu_fabric:kvCacheBackends"),
                             ("gpu_fabric:kvCacheBackends", "gpu-fabric:")),
    "near-miss-case": (SEED_TEXT.replace("gpu-fabric:kvCacheBackends", "GPU-Fabric:kvCacheBackends"),
                       ("GPU-Fabric:kvCacheBackends", "gpu-fabric:")),
    "near-miss-no-dash": (SEED_TEXT.replace("gpu-fabric:kvCacheBackends", "gpufabric:kvCacheBackends"),
                          ("gpufabric:kvCacheBackends", "gpu-fabric:")),
    "key-without-namespace": (SEED_TEXT.replace("gpu-fabric:kvCacheBackends", "kvCacheBackends"),
                              ("kvCacheBackends", "gpu-fabric:")),
}

NUMBERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "node-count-bool": (seed(lambda c: pool(c).update(nodeCount=True)), ("pools[0].nodeCount", "boolean")),
    "accelerators-bool": (seed(lambda c: pool(c).update(acceleratorsPerNode=False)), ("pools[0].acceleratorsPerNode",)),
    "replicas-bool": (seed(lambda c: role(c).update(replicas=True)), ("modelDeployments[0].roles[0].replicas",)),
    "node-count-huge": (seed(lambda c: pool(c).update(nodeCount=10**30)), ("pools[0].nodeCount",)),
    "node-count-inf": (seed(lambda c: pool(c).update(nodeCount=float("inf"))), ("pools[0].nodeCount",)),
    "node-count-nan": (seed(lambda c: pool(c).update(nodeCount=float("nan"))), ("pools[0].nodeCount",)),
    "node-count-fraction": (seed(lambda c: pool(c).update(nodeCount=2.5)), ("pools[0].nodeCount",)),
    "interfaces-huge": (seed(lambda c: pool(c).update(interfacesPerNode=100000)), ("pools[0].interfacesPerNode",)),
    "accelerators-huge": (seed(lambda c: pool(c).update(acceleratorsPerNode=100000)), ("pools[0].acceleratorsPerNode",)),
    "cpu-huge": (seed(lambda c: pool(c).update(cpuPerNode=10**12)), ("pools[0].cpuPerNode",)),
    "memory-not-a-quantity": (seed(lambda c: pool(c).update(memoryPerNode="lots")), ("pools[0].memoryPerNode",)),
    "memory-negative": (seed(lambda c: pool(c).update(memoryPerNode="-8Gi")), ("pools[0].memoryPerNode",)),
    "memory-huge": (seed(lambda c: pool(c).update(memoryPerNode="1e400")), ("pools[0].memoryPerNode",)),
    "memory-nan": (seed(lambda c: pool(c).update(memoryPerNode=float("nan"))), ("pools[0].memoryPerNode",)),
    "capacity-negative": (seed(lambda c: member(c).update(capacityPerMember="-8Gi")),
                          ("kvCacheBackends[0].connection.managed.members[0].capacityPerMember",)),
    "capacity-inf": (seed(lambda c: member(c).update(capacityPerMember=float("inf"))),
                     ("kvCacheBackends[0].connection.managed.members[0].capacityPerMember",)),
    "shm-not-a-quantity": (seed(lambda c: role(c).update(shmSize="banana")), ("modelDeployments[0].roles[0].shmSize",)),
    "shm-negative": (seed(lambda c: role(c).update(shmSize="-1Gi")), ("modelDeployments[0].roles[0].shmSize",)),
    "accelerator-inf": (seed(lambda c: role(c)["resources"].update(accelerator=float("inf"))),
                        ("modelDeployments[0].roles[0].resources.accelerator",)),
    "interface-negative": (seed(lambda c: role(c)["resources"].update(interface="-2")),
                           ("modelDeployments[0].roles[0].resources.interface",)),
    "quota-negative": (efa(lambda c: c["gpu-fabric:kvCachePools"][0]["quota"].update(total="-1Gi")),
                       ("kvCachePools[0].quota.total",)),
    "max-size-huge": (efa(lambda c: pool(c)["aws"]["scaling"].update(maxSize=10**9)), ("pools[0].aws.scaling.maxSize",)),
    "volume-huge": (efa(lambda c: pool(c)["aws"].update(rootVolume={"sizeGiB": 10**9})), ("pools[0].aws.rootVolume.sizeGiB",)),
    "card-index-huge": (efa(lambda c: pool(c)["aws"].update(efaCardIndices=[0, 10**6])), ("pools[0].aws.efaCardIndices",)),
    "nan-inside-free-form": (seed(lambda c: member(c).update(securityContext={"runAsUser": float("nan")})),
                             ("kvCacheBackends[0].connection.managed.members[0].securityContext",)),
}

SYNTAX: dict[str, tuple[str, tuple[str, ...]]] = {
    "label-key-invalid": (seed(lambda c: pool(c)["nodeLabels"].update({"bad key": "x"})), ("pools[0].nodeLabels",)),
    "label-value-injects-flag": (seed(lambda c: pool(c)["nodeLabels"].update(zone="a,b=c")), ("pools[0].nodeLabels",)),
    "label-value-newline": (seed(lambda c: pool(c)["nodeLabels"].update(zone="a\n--x")), ("pools[0].nodeLabels",)),
    "label-value-too-long": (seed(lambda c: pool(c)["nodeLabels"].update(zone="a" * 64)), ("pools[0].nodeLabels",)),
    "taint-key-injects": (efa(lambda c: pool(c)["taints"].append({"key": "a=b,c", "effect": "NoSchedule"})),
                          ("pools[0].taints[1].key",)),
    "taint-value-injects": (efa(lambda c: pool(c)["taints"].append({"key": "a", "value": "x:NoSchedule,y", "effect": "NoSchedule"})),
                            ("pools[0].taints[1].value",)),
    "aws-label-injects": (efa(lambda c: pool(c)["aws"].update(labels={"a": "b,--max-pods=1"})), ("pools[0].aws.labels",)),
    "aws-taint-key-injects": (efa(lambda c: pool(c)["aws"].update(taints=[{"key": "x\ny", "effect": "NO_SCHEDULE"}])),
                              ("pools[0].aws.taints[0].key",)),
    # EKS Taint.key is 1-63 characters; a Kubernetes qualified name may be longer (a 64-character name part is not).
    "aws-taint-key-too-long-for-eks": (efa(lambda c: pool(c)["aws"].update(taints=[{"key": "example.com/" + "a" * 60,
                                                                                    "effect": "NO_SCHEDULE"}])),
                                       ("pools[0].aws.taints[0]",)),
    # A pool's own taints reach its EKS node group too, so they are held to EKS's key length at render.
    "pool-taint-key-too-long-for-eks": (efa(lambda c: pool(c)["taints"].append({"key": "example.com/" + "a" * 60,
                                                                                 "effect": "NoSchedule"})),
                                        ("pools[0].taints[1].key: taint key", "at most 63")),
    "aws-taint-kubernetes-effect": (efa(lambda c: pool(c)["aws"].update(taints=[{"key": "a", "effect": "NoSchedule"}])),
                                    ("pools[0].aws.taints[0]",)),
    "device-manager-namespace": (seed(lambda c: c.update({"gpu-fabric:devicePlugins": {"deviceManager": {
        "deployedBy": "stack", "namespace": "Bad_NS"}}})), ("devicePlugins.deviceManager.namespace",)),
    "efa-plugin-namespace": (efa(lambda c: c.update({"gpu-fabric:devicePlugins": {"efa": {"namespace": "../etc"}}})),
                             ("devicePlugins.efa.namespace",)),
    "release-name": (seed(lambda c: c.update({"gpu-fabric:devicePlugins": {"deviceManager": {
        "deployedBy": "stack", "releaseName": "a/../b"}}})), ("devicePlugins.deviceManager.releaseName",)),
    # Kubernetes IsEnvVarName (apimachinery validation.go); '=' is refused even by relaxed API servers.
    "env-name-space": (seed(lambda c: role(c).update(env=[{"name": "MY VAR", "value": "x"}])),
                       ("modelDeployments[0].roles[0].env[0].name", "IsEnvVarName")),
    "env-name-equals": (seed(lambda c: role(c).update(env=[{"name": "A=B", "value": "x"}])),
                        ("modelDeployments[0].roles[0].env[0].name",)),
    "env-name-digit-first": (seed(lambda c: role(c).update(env=[{"name": "1ST", "value": "x"}])),
                             ("modelDeployments[0].roles[0].env[0].name",)),
    "member-env-name-newline": (seed(lambda c: member(c).update(extraEnv=[{"name": "A\nB", "value": "x"}])),
                                ("kvCacheBackends[0].connection.managed.members[0].extraEnv[0].name",)),
    "role-image-whitespace": (seed(lambda c: role(c).update(image="vllm/vllm-openai :v0.9.0")),
                              ("modelDeployments[0].roles[0].image",)),
    "role-image-inner-newline": (seed(lambda c: role(c).update(image="vllm/vllm-openai\n:v0.9.0")),
                                 ("modelDeployments[0].roles[0].image",)),
    "member-image-whitespace": (seed(lambda c: member(c).update(image="mooncake store")),
                                ("kvCacheBackends[0].connection.managed.members[0].image",)),
    "az-not-an-az": (efa(lambda c: pool(c)["aws"].update(availabilityZone="somewhere")), ("pools[0].aws.availabilityZone",)),
    "cluster-name-invalid": (efa(lambda c: pool(c)["aws"].update(clusterName="bad name!")), ("pools[0].aws.clusterName",)),
    "instance-type-not-a-type": (efa(lambda c: pool(c)["aws"].update(instanceTypes=["p5.48xlarge; rm -rf"])),
                                 ("pools[0].aws.instanceTypes",)),
    "tag-value-too-long": (efa(lambda c: pool(c)["aws"].update(tags={"team": "x" * 300})), ("pools[0].aws.tags",)),
    "eks-cluster-name-invalid": (efa(lambda c: c["gpu-fabric:kubernetes"]["eksCluster"].update(name="bad name")),
                                 ("kubernetes.eksCluster.name",)),
    "accelerator-resource-invalid": (seed(lambda c: pool(c).update(acceleratorResource="nvidia.com/gpu count")),
                                     ("pools[0].acceleratorResource",)),
    "ami-arch-mismatch": (efa(lambda c: pool(c)["aws"].update(amiType="AL2023_ARM_64_NVIDIA")), ("pools[0].aws.amiType",)),
    "node-group-other-cluster": (efa(lambda c: pool(c)["aws"].update(clusterName="other-cluster")),
                                 ("pools[0].aws.clusterName",)),
    "az-outside-region": (efa(lambda c: [p["aws"].update(availabilityZone="eu-west-1a") for p in c["gpu-fabric:pools"]]),
                          ("pools[0].aws.availabilityZone",)),
}

REFERENCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "binding-to-missing-pool": (efa(lambda c: c["gpu-fabric:kvCachePoolBindings"][0]["poolRef"].update(name="nope")),
                                ("kvCachePoolBindings[0].poolRef.name",)),
    "deployment-to-missing-binding": (efa(lambda c: c["gpu-fabric:modelDeployments"][0]["kvCache"]["poolRef"].update(name="nope")),
                                      ("modelDeployments[0].kvCache.poolRef.name",)),
    "member-selector-matches-no-pool": (seed(lambda c: member(c).update(nodeSelector={"kubernetes.io/os": "plan9"})),
                                        ("kvCacheBackends[0].connection.managed.members[0].nodeSelector",)),
    "duplicate-pool": (seed(lambda c: c["gpu-fabric:pools"].append(dict(pool(c)))), ("pools[1]", "more than once")),
    "duplicate-namespace": (seed(lambda c: c["gpu-fabric:namespaces"].append("team-a")), ("namespaces[1]",)),
    "efa-pool-without-placement": (efa(lambda c: pool(c)["aws"].update(placementGroup={"mode": "none"})),
                                   ("pools[0].aws.placementGroup",)),
    "member-wants-more-interfaces": (efa(lambda c: member(c).update(fabricInterfaceCount=4)),
                                     ("kvCacheBackends[0].connection.managed.members[0]",)),
    "topology-none-on-fabric-pool": (efa(lambda c: pool(c)["topology"].update(policy="none")), ("pools[0].topology.policy",)),
    # Standalone quotas are nodeCount x per-node capacity: above the node group's maxSize they promise absent nodes.
    "node-count-above-max-size": (efa(lambda c: pool(c).update(nodeCount=pool(c)["aws"]["scaling"]["maxSize"] + 1)),
                                  ("pools[0].nodeCount: nodeCount 5 is above aws.scaling.maxSize 4",)),
    # The Bottlerocket node group's user data has no key for this kubelet option: refused at the field, not at render.
    "cpu-option-without-bottlerocket-setting": (efa(lambda c: pool(c, 1).update(topology={
        "policy": "restricted", "scope": "container", "cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1",
        "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"}})),
        ("pools[1].topology.cpuManagerPolicyOptions: ", "no Bottlerocket setting", "BOTTLEROCKET_x86_64")),
}

SHAPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "namespaces-a-string": (seed(lambda c: c.update({"gpu-fabric:namespaces": "team-a"})), ("namespaces",)),
    "pools-a-mapping": (seed(lambda c: c.update({"gpu-fabric:pools": {"name": "x"}})), ("pools",)),
    "queue-owner-a-number": (seed(lambda c: c.update({"gpu-fabric:queueOwner": 5})), ("queueOwner",)),
    "api-version-unknown": (seed(lambda c: c.update({"gpu-fabric:gpustackApiVersion": "v2"})), ("gpustackApiVersion",)),
    "pool-a-string": (seed(lambda c: c["gpu-fabric:pools"].append("gpu-pool")), ("pools[1]",)),
    "role-null": (seed(lambda c: c["gpu-fabric:modelDeployments"][0]["roles"].append(None)), ("modelDeployments[0].roles[2]",)),
    "labels-a-list": (seed(lambda c: pool(c).update(nodeLabels=["a=b"])), ("pools[0].nodeLabels",)),
    "label-value-a-bool": (seed(lambda c: pool(c)["nodeLabels"].update(enabled=True)), ("pools[0].nodeLabels.enabled",)),
    "deployment-name-uppercase": (seed(lambda c: c["gpu-fabric:modelDeployments"][0].update(name="Qwen-PD")),
                                  ("modelDeployments[0].name",)),
    "kubernetes-context-empty": (seed(lambda c: c.update({"gpu-fabric:kubernetes": {"context": ""}})), ("kubernetes.context",)),
    "too-many-namespaces": (seed(lambda c: c["gpu-fabric:namespaces"].extend(f"ns-{i}" for i in range(1000))), ("namespaces",)),
    "kubernetes-no-target": (efa(lambda c: c["gpu-fabric:kubernetes"].pop("eksCluster")), ("kubernetes",)),
    "kubernetes-both-targets": (efa(lambda c: c["gpu-fabric:kubernetes"].update(context="prod")), ("kubernetes",)),
    "unknown-key-under-namespace": (seed(lambda c: c.update({"gpu-fabric:pool": []})), ("pool", "unknown configuration key")),
    "scaling-min-above-max": (efa(lambda c: pool(c)["aws"]["scaling"].update(minSize=5, maxSize=4)), ("pools[0].aws.scaling",)),
    "subnet-list": (efa(lambda c: pool(c)["aws"].update(subnetId=["subnet-1", "subnet-2"])), ("pools[0].aws.subnetId",)),
}

CASES = {
    **{f"stack-file/{key}": value for key, value in STACK_FILES.items()},
    **{f"numbers/{key}": value for key, value in NUMBERS.items()},
    **{f"syntax/{key}": value for key, value in SYNTAX.items()},
    **{f"references/{key}": value for key, value in REFERENCES.items()},
    **{f"shapes/{key}": value for key, value in SHAPES.items()},
}
