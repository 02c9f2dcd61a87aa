"""scripts/crds_from_go.py: a release's zz_generated.crds.go becomes the schema YAML a profile bundles."""

import importlib.util
import shutil

import pytest
import yaml

from gpu_fabric.gpustack import schema
from support.stack_configs import PROJECT_DIR

SAMPLE = PROJECT_DIR / "tests" / "fixtures" / "operator" / "zz_generated.crds.go"


def _script():
    spec = importlib.util.spec_from_file_location("crds_from_go", PROJECT_DIR / "scripts" / "crds_from_go.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


crds_from_go = _script()


def test_a_generated_crd_becomes_the_schema_the_api_server_stores():
    definitions = crds_from_go.read_definitions(SAMPLE.read_text())
    assert sorted(definitions) == ["KVCachePool", "Widget"]
    pool = definitions["KVCachePool"]
    assert pool["apiVersion"] == "apiextensions.k8s.io/v1" and pool["kind"] == "CustomResourceDefinition"
    assert pool["metadata"] == {"name": "kvcachepools.worker.gpustack.ai"}
    assert pool["spec"]["names"]["shortNames"] == ["kvcp"] and pool["spec"]["scope"] == "Cluster"
    [version] = pool["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == [{"name": "Quota", "type": "string", "jsonPath": ".spec.quota.total"}]
    openapi = version["schema"]["openAPIV3Schema"]
    assert "description" not in openapi and openapi["properties"]["status"] == {"type": "object"}
    spec = openapi["properties"]["spec"]
    assert spec["required"] == ["backends", "quota"]
    assert spec["properties"]["backends"] == {
        "type": "array", "minItems": 1, "maxItems": 1, "x-kubernetes-list-type": "set",
        "items": {"type": "string", "maxLength": 253, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}}
    assert spec["properties"]["medium"] == {
        "type": "string", "default": "DRAM", "enum": ["DRAM", "VRAM"],
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "medium is immutable"}]}
    assert spec["properties"]["quota"] == {
        "type": "object", "additionalProperties": True,
        "properties": {"total": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                                 "minimum": 0.0}}}


def test_the_written_files_are_named_and_shaped_as_the_schema_validator_reads_them(tmp_path):
    definitions = crds_from_go.read_definitions(SAMPLE.read_text())
    written = crds_from_go.write_definitions(definitions, tmp_path, "a synthetic sample")
    assert [p.name for p in written] == [schema.SCHEMA_FILES["KVCachePool"]]  # Widget is not a kind gpu-fabric bundles
    assert written[0].read_text().startswith("# Transcribed by scripts/crds_from_go.py from a synthetic sample")
    assert yaml.safe_load(written[0].read_text()) == definitions["KVCachePool"]
    assert len(crds_from_go.write_definitions(definitions, tmp_path / "all", "x", every_kind=True)) == 2
    # The validator judges with the transcribed schema as with a bundled one: it refuses what the sample declares.
    openapi = definitions["KVCachePool"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    found: list = []
    schema._check({"backends": ["a", "b"], "medium": "HBM"}, openapi["properties"]["spec"], "spec", found)
    assert {path for path, _ in found} == {"spec.backends", "spec.medium", "spec.quota"}


@pytest.mark.parametrize("text, message", [
    ("package v1alpha1\n", "no crd_<...>_<Kind>() function found"),
    ("func crd_gpustack_api_worker_v1alpha1_X() *v1.CustomResourceDefinition {\n\treturn &v1.CustomResourceDefinition{\n"
     "\t\tSpec: os.Getenv(\"X\"),\n\t}\n}\n", "line 3: call of os.Getenv is not part of a generated CRD"),
    ("func crd_gpustack_api_worker_v1alpha1_X() *v1.CustomResourceDefinition {\n\treturn &v1.CustomResourceDefinition{\n"
     "\t\tSpec: 1 2,\n\t}\n}\n", "line 3: expected ',' or '}'"),
])
def test_go_it_does_not_understand_is_refused_with_its_line(text, message):
    with pytest.raises(crds_from_go.GoLiteralError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        crds_from_go.read_definitions(text)


def test_the_command_line_writes_the_folder_and_exits_2_on_bad_input(tmp_path, capsys):
    assert crds_from_go.main([str(SAMPLE), "--out", str(tmp_path / "v0.99"), "--source", "sample"]) == 0
    assert (tmp_path / "v0.99" / schema.SCHEMA_FILES["KVCachePool"]).is_file()
    broken = tmp_path / "broken.go"
    shutil.copy(SAMPLE, broken)
    broken.write_text(broken.read_text().replace("Scope: \"Cluster\",", "Scope: \"Cluster\" ?"))
    assert crds_from_go.main([str(broken), "--out", str(tmp_path / "x"), "--source", "s"]) == 2
    assert "broken.go" in capsys.readouterr().err
