"""Pod templates of any workload kind, read as the API server would accept them (pure).

Where a kind keeps its pod templates (:data:`POD_TEMPLATE_PATHS`), the pod spec of an object, the
resources its containers request, and the shape checks that refuse what Kubernetes would refuse
(a ``containers`` that is not a list, ``privileged`` that is not a boolean) as
:class:`WorkloadShapeError` naming the path. The workload rules (:mod:`gpu_fabric.kube.workloads`),
device-plugin coverage and ``lint`` read workloads through these.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_fabric.config.shapes import is_unknown



# kind -> the paths of its pod templates' ``spec`` (a Pod is its own template).
POD_TEMPLATE_PATHS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "Pod": ((),),
    "Deployment": (("template",),),
    "StatefulSet": (("template",),),
    "DaemonSet": (("template",),),
    "ReplicaSet": (("template",),),
    "Job": (("template",),),
    "CronJob": (("jobTemplate", "spec", "template"),),
    # leaderworkerset.x-k8s.io/v1: the leader template is optional, the worker template required.
    "LeaderWorkerSet": (("leaderWorkerTemplate", "leaderTemplate"), ("leaderWorkerTemplate", "workerTemplate")),
}
WORKLOAD_KINDS = tuple(POD_TEMPLATE_PATHS)


class WorkloadShapeError(ValueError):
    """A workload whose pod template Kubernetes would refuse; ``path`` names the field."""

    def __init__(self, path: str, message: str) -> None:
        self.path, self.message = path, message
        super().__init__(f"{path}: {message}")


def _kind_of(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), f"a {type(value).__name__}")


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise WorkloadShapeError(path, f"must be a mapping, not {_kind_of(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WorkloadShapeError(path, f"must be a list, not {_kind_of(value)}")
    return value


def _string(value: Any, path: str, *, required: bool = False) -> None:
    if (value is None and not required) or is_unknown(value):
        return  # an unknown waits for its value at preview
    if not isinstance(value, str):
        raise WorkloadShapeError(path, f"must be a string, not {_kind_of(value)}")


def _boolean(value: Any, path: str) -> None:
    if value is not None and not isinstance(value, bool) and not is_unknown(value):
        raise WorkloadShapeError(path, f"must be true or false, not {_kind_of(value)} ({value!r:.40})")


def _read_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def pod_spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec a workload's pods run, read leniently (a malformed shape reads as empty): a Pod's own spec,
    else its main pod template's (a CronJob's job template, a LeaderWorkerSet's worker template; ``template`` for
    any other kind); ``None`` when there is none. :func:`pod_templates` is the strict reader of every template."""
    kind = obj.get("kind")
    node = _read_mapping(obj.get("spec"))
    if kind == "Pod":
        return node
    for key in POD_TEMPLATE_PATHS.get(str(kind), (("template",),))[-1]:
        node = _read_mapping(node.get(key))
    return _read_mapping(node.get("spec")) or None


def requested_resource_names(pod_spec: Mapping[str, Any]) -> set[str]:
    """Every resource name a container (or init container) of the pod requests or limits, read leniently."""
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        containers = pod_spec.get(key)
        for container in containers if isinstance(containers, list) else []:
            resources = _read_mapping(_read_mapping(container).get("resources"))
            for section in ("requests", "limits"):
                names.update(str(name) for name in _read_mapping(resources.get(section)))
    return names


def pod_templates(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(path of the pod spec, pod spec)`` of every pod template of a workload; ``[]`` for other kinds."""
    kind = obj.get("kind")
    if kind not in POD_TEMPLATE_PATHS:
        return []
    templates = []
    spec = _mapping(obj.get("spec"), "spec")
    for template_path in POD_TEMPLATE_PATHS[str(kind)]:
        node, path = spec, "spec"
        for key in template_path:
            path = f"{path}.{key}"
            node = _mapping(node.get(key), path)
        if template_path:
            if not node:
                if template_path[-1] == "leaderTemplate":
                    continue
                raise WorkloadShapeError(path, "is missing: a workload needs a pod template")
            path = f"{path}.spec"
            node = _mapping(node.get("spec"), path)
        _check_pod_spec(node, path)
        templates.append((path, node))
    return templates


def _check_pod_spec(pod_spec: Mapping[str, Any], path: str) -> None:
    """Refuse the shapes the API server refuses in the fields the rules read."""
    containers = _list(pod_spec.get("containers"), f"{path}.containers")
    if not containers:
        raise WorkloadShapeError(f"{path}.containers", "a pod template needs at least one container")
    for key in ("containers", "initContainers"):
        for i, container in enumerate(_list(pod_spec.get(key), f"{path}.{key}")):
            where = f"{path}.{key}[{i}]"
            container = _mapping(container, where)
            for list_key in ("command", "args", "env", "envFrom", "volumeMounts"):
                for j, item in enumerate(_list(container.get(list_key), f"{where}.{list_key}")):
                    if list_key in ("env", "envFrom", "volumeMounts"):
                        _mapping(item, f"{where}.{list_key}[{j}]")
                    else:
                        _string(item, f"{where}.{list_key}[{j}]")
            for j, variable in enumerate(_list(container.get("env"), f"{where}.env")):
                if is_unknown(variable):
                    continue
                _string(variable.get("name"), f"{where}.env[{j}].name")
                if variable.get("value") is not None:
                    _string(variable["value"], f"{where}.env[{j}].value")
            security = _mapping(container.get("securityContext"), f"{where}.securityContext")
            _boolean(security.get("privileged"), f"{where}.securityContext.privileged")
            resources = _mapping(container.get("resources"), f"{where}.resources")
            for section in ("requests", "limits"):
                _mapping(resources.get(section), f"{where}.resources.{section}")
    for key, value in _mapping(pod_spec.get("nodeSelector"), f"{path}.nodeSelector").items():
        if not isinstance(value, str):
            raise WorkloadShapeError(f"{path}.nodeSelector.{key}", f"must be a string, not {_kind_of(value)}")
    for i, toleration in enumerate(_list(pod_spec.get("tolerations"), f"{path}.tolerations")):
        toleration = _mapping(toleration, f"{path}.tolerations[{i}]")
        for key in ("key", "operator", "value", "effect"):
            if toleration.get(key) is not None:
                _string(toleration[key], f"{path}.tolerations[{i}].{key}")
    affinity = _mapping(pod_spec.get("affinity"), f"{path}.affinity")
    node_affinity = _mapping(affinity.get("nodeAffinity"), f"{path}.affinity.nodeAffinity")
    required_path = f"{path}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = _mapping(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), required_path)
    for i, term in enumerate(_list(required.get("nodeSelectorTerms"), f"{required_path}.nodeSelectorTerms")):
        term = _mapping(term, f"{required_path}.nodeSelectorTerms[{i}]")
        for j, expression in enumerate(_list(term.get("matchExpressions"), f"{required_path}.nodeSelectorTerms[{i}].matchExpressions")):
            where = f"{required_path}.nodeSelectorTerms[{i}].matchExpressions[{j}]"
            expression = _mapping(expression, where)
            _string(expression.get("key"), f"{where}.key", required=True)
            _string(expression.get("operator"), f"{where}.operator", required=True)
            for k, value in enumerate(_list(expression.get("values"), f"{where}.values")):
                _string(value, f"{where}.values[{k}]")
    for i, volume in enumerate(_list(pod_spec.get("volumes"), f"{path}.volumes")):
        _mapping(_mapping(volume, f"{path}.volumes[{i}]").get("hostPath"), f"{path}.volumes[{i}].hostPath")
