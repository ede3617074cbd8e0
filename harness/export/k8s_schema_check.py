#!/usr/bin/env python3
"""Schema check of `hanglab manifest` output (test e2e.k8s_manifest_schema).

usage: k8s_schema_check.py [--expect-invalid] MANIFEST.yaml[:MANIFEST.json] ...
       k8s_schema_check.py --self-test MANIFEST.yaml ...   (each must pass; broken copies of it must not)

What each document is checked against:
  Job (batch/v1), Service (v1)  kubernetes-validate's JSON schemas of Kubernetes 1.28 and 1.37, strict
                                (an unknown field is an error), plus hanglab's own consistency rules
                                (Indexed, completions = parallelism = --nnodes, subdomain = the headless
                                Service, pod 0's DNS name as the rendezvous endpoint).
  PyTorchJob (kubeflow.org/v1)  the Kubeflow Training SDK (kubeflow-training 1.9.4) ships no CRD or
                                OpenAPI document, only generated model classes. So: (1) every field is
                                walked against the classes' openapi_types/attribute_map (unknown field,
                                wrong JSON type: error), (2) the document is deserialized into
                                KubeflowOrgV1PyTorchJob by the SDK's own ApiClient (its required fields,
                                e.g. runPolicy and pytorchReplicaSpecs, raise on absence), (3) each replica's
                                pod template is validated as a v1 PodTemplate with kubernetes-validate
                                (strict), (4) the Training Operator's admission rules (webhook and
                                controller: Master replicas 1, Worker >= 1, a container named "pytorch"
                                with an image and its pytorchjob-port, elasticPolicy needs Worker, enums).
A .json beside a .yaml (hanglab manifest --format json, a v1 List) must hold the same objects: the
YAML emitter is checked against PyYAML on real output.
Exit 0: every file was judged as expected; 1 otherwise (each problem printed).
"""
import copy
import json
import re
import sys

import yaml
import kubernetes_validate
import kubeflow.training.models as kf_models
from kubeflow.training.api_client import ApiClient

K8S_VERSIONS = ["1.28.0", "1.37.0"]
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def k8s_schema(doc, where):
    errs = []
    for v in K8S_VERSIONS:
        try:
            kubernetes_validate.validate(doc, v, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            errs.append(f"{where}: Kubernetes {v} schema: {path}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            errs.append(f"{where}: {e.message}")
    return errs


def walk_model(data, type_name, path, errs):
    """The SDK's model classes as a schema: field names and JSON types."""
    if data is None:
        return
    m = re.match(r"list\[(.*)\]$", type_name)
    if m:
        if not isinstance(data, list):
            errs.append(f"{path}: want a list ({type_name}), got {type(data).__name__}")
            return
        for i, item in enumerate(data):
            walk_model(item, m.group(1), f"{path}[{i}]", errs)
        return
    m = re.match(r"dict\(([^,]*), (.*)\)$", type_name)
    if m:
        if not isinstance(data, dict):
            errs.append(f"{path}: want a mapping ({type_name}), got {type(data).__name__}")
            return
        for k, v in data.items():
            walk_model(v, m.group(2), f"{path}.{k}", errs)
        return
    prim = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if type_name in prim:
        ok = isinstance(data, prim[type_name]) and not (type_name in ("int", "float") and isinstance(data, bool))
        if not ok:
            errs.append(f"{path}: want {type_name}, got {type(data).__name__} {data!r}")
        return
    if type_name in ("object", "date", "datetime"):
        return
    cls = getattr(kf_models, type_name, None)
    if cls is None:
        errs.append(f"{path}: the SDK has no model {type_name}")
        return
    if not isinstance(data, dict):
        errs.append(f"{path}: want a {type_name} object, got {type(data).__name__}")
        return
    by_json = {cls.attribute_map[a]: t for a, t in cls.openapi_types.items()}
    for k, v in data.items():
        if k not in by_json:
            errs.append(f"{path}.{k}: unknown field of {type_name}")
        else:
            walk_model(v, by_json[k], f"{path}.{k}", errs)


def pytorchjob(doc, where):
    errs = []
    walk_model(doc, "KubeflowOrgV1PyTorchJob", where, errs)
    try:
        ApiClient()._ApiClient__deserialize(copy.deepcopy(doc), "KubeflowOrgV1PyTorchJob")
    except (ValueError, TypeError) as e:
        errs.append(f"{where}: Kubeflow Training SDK: {e}")
    name = doc.get("metadata", {}).get("name", "")
    if not DNS1035.match(name) or len(name) > 63:
        errs.append(f"{where}: metadata.name {name!r} is not a DNS-1035 label (operator webhook)")
    spec = doc.get("spec", {})
    specs = spec.get("pytorchReplicaSpecs")
    if not isinstance(specs, dict) or not specs:
        errs.append(f"{where}: spec.pytorchReplicaSpecs: required")
        specs = {}
    for role, rs in specs.items():
        p = f"{where}: spec.pytorchReplicaSpecs.{role}"
        if role not in ("Master", "Worker"):
            errs.append(f"{p}: replica type must be Master or Worker")
        if not isinstance(rs, dict):
            errs.append(f"{p}: not a mapping")
            continue
        replicas = rs.get("replicas")
        if role == "Master" and replicas != 1:
            errs.append(f"{p}.replicas: must be 1 (operator webhook)")
        if role == "Worker" and (not isinstance(replicas, int) or replicas < 1):
            errs.append(f"{p}.replicas: must be at least 1")
        if rs.get("restartPolicy") not in (None, "Always", "OnFailure", "Never", "ExitCode"):
            errs.append(f"{p}.restartPolicy: {rs.get('restartPolicy')!r} is not Always, OnFailure, Never or ExitCode")
        template = rs.get("template", {})
        errs += k8s_schema({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                            "template": template}, f"{p}.template (as a v1 PodTemplate)")
        containers = (template.get("spec") or {}).get("containers") or []
        if not containers:
            errs.append(f"{p}.template.spec.containers: must be specified")
        if not any(c.get("name") == "pytorch" for c in containers):
            errs.append(f"{p}.template.spec.containers: must have a container named pytorch (the operator's)")
        for c in containers:
            if not c.get("image"):
                errs.append(f"{p}: container {c.get('name')!r}: image required")
            if c.get("name") == "pytorch" and not any(pp.get("name") == "pytorchjob-port" for pp in c.get("ports", [])):
                errs.append(f"{p}: container pytorch: no port named pytorchjob-port (the rendezvous port)")
    ep = spec.get("elasticPolicy")
    if ep is not None:
        if "Worker" not in specs:
            errs.append(f"{where}: spec.pytorchReplicaSpecs.Worker: must be configured if elastic policy is used")
        if "nProcPerNode" in ep and "nprocPerNode" in spec:
            errs.append(f"{where}: spec.elasticPolicy.nProcPerNode must not be used with spec.nprocPerNode")
        if ep.get("rdzvBackend") not in (None, "c10d", "etcd", "etcd-v2"):
            errs.append(f"{where}: spec.elasticPolicy.rdzvBackend: {ep.get('rdzvBackend')!r} is not c10d, etcd or etcd-v2")
    rp = spec.get("runPolicy") or {}
    if rp.get("cleanPodPolicy") not in (None, "None", "Running", "All"):
        errs.append(f"{where}: spec.runPolicy.cleanPodPolicy: {rp.get('cleanPodPolicy')!r}")
    return errs


def arg_after(args, flag):
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None


def indexed_job_consistency(docs, where):
    errs = []
    svc = [d for d in docs if d.get("kind") == "Service"]
    jobs = [d for d in docs if d.get("kind") == "Job"]
    if len(svc) != 1 or len(jobs) != 1:
        return [f"{where}: want one Service and one Job, got {[d.get('kind') for d in docs]}"]
    svc, job = svc[0], jobs[0]
    name, sname = job["metadata"]["name"], svc["metadata"]["name"]
    spec = job["spec"]
    pod = spec["template"]["spec"]
    if spec.get("completionMode") != "Indexed":
        errs.append(f"{where}: Job spec.completionMode is not Indexed")
    if spec.get("completions") != spec.get("parallelism"):
        errs.append(f"{where}: completions != parallelism: the pods would not all run at once")
    if pod.get("subdomain") != sname or svc["spec"].get("clusterIP") != "None":
        errs.append(f"{where}: pods' subdomain must be the headless Service {sname}")
    if svc["spec"].get("selector", {}).get("job-name") != name:
        errs.append(f"{where}: the Service does not select the Job's pods")
    args = pod["containers"][0].get("args", [])
    if arg_after(args, "--nnodes") != str(spec.get("completions")):
        errs.append(f"{where}: --nnodes {arg_after(args, '--nnodes')} != completions {spec.get('completions')}")
    if arg_after(args, "--rdzv-endpoint") != f"{name}-0.{sname}:{svc['spec']['ports'][0]['port']}":
        errs.append(f"{where}: --rdzv-endpoint {arg_after(args, '--rdzv-endpoint')} is not pod 0 of the Service")
    if arg_after(args, "--node-rank") != "$(JOB_COMPLETION_INDEX)":
        errs.append(f"{where}: --node-rank is not the completion index")
    return errs


def check_file(spec):
    yaml_path, _, json_path = spec.partition(":")
    with open(yaml_path) as f:
        text = f.read()
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        return [f"{yaml_path}: not YAML: {e}"]
    errs = []
    if json_path:
        with open(json_path) as f:
            items = json.load(f)["items"]
        if items != docs:
            errs.append(f"{yaml_path}: the YAML does not read back as {json_path} (the emitter is wrong)")
    kinds = [d.get("kind") for d in docs]
    for i, d in enumerate(docs):
        where = f"{yaml_path}[{i}] {d.get('kind')}"
        if d.get("kind") in ("Job", "Service"):
            errs += k8s_schema(d, where)
        elif d.get("kind") == "PyTorchJob" and d.get("apiVersion") == "kubeflow.org/v1":
            errs += pytorchjob(d, where)
        else:
            errs.append(f"{where}: unexpected document (apiVersion {d.get('apiVersion')})")
    if "Job" in kinds:
        errs += indexed_job_consistency(docs, yaml_path)
    return errs


def broken_copies(docs):
    """Deliberately broken variants of a good manifest: (what, documents)."""
    out = []
    for i, d in enumerate(docs):
        k = d.get("kind")
        b = copy.deepcopy(docs)
        if k == "Job":
            b[i]["spec"]["template"]["spec"]["containers"][0]["cmd"] = ["x"]
            out.append(("Job: unknown container field cmd", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["completions"] = "2"
            out.append(("Job: completions as a string", b))
            b = copy.deepcopy(docs)
            del b[i]["spec"]["template"]["spec"]["containers"][0]["name"]
            out.append(("Job: container without a name", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["parallelism"] = 1 if b[i]["spec"]["completions"] > 1 else 0
            out.append(("Job: parallelism below completions", b))
        elif k == "Service":
            b[i]["spec"]["ports"][0]["port"] = "29400"
            out.append(("Service: port as a string", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["clusterIp"] = "None"
            out.append(("Service: misspelled clusterIP", b))
        elif k == "PyTorchJob":
            specs = b[i]["spec"]["pytorchReplicaSpecs"]
            specs["Master"]["replicas"] = 2
            out.append(("PyTorchJob: two Masters", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["pytorchReplicaSpecs"]["Master"]["replica"] = 1
            out.append(("PyTorchJob: unknown replica field", b))
            b = copy.deepcopy(docs)
            del b[i]["spec"]["runPolicy"]
            out.append(("PyTorchJob: no runPolicy (required by the SDK model)", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["name"] = "main"
            out.append(("PyTorchJob: no container named pytorch", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["volumes"][0]["emptyDir"]["medium"] = 1
            out.append(("PyTorchJob: pod template field of the wrong type", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["nprocPerNode"] = 2
            out.append(("PyTorchJob: nprocPerNode as a number", b))
            b = copy.deepcopy(docs)
            b[i]["spec"]["pytorchReplicaSpecs"]["Chief"] = b[i]["spec"]["pytorchReplicaSpecs"]["Master"]
            out.append(("PyTorchJob: replica type Chief", b))
    return out


def self_test(path):
    """The good file passes; every broken copy of it is refused."""
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f.read()) if d is not None]
    problems = []
    for what, b in broken_copies(docs):
        errs = []
        for i, d in enumerate(b):
            where = f"{path}[{i}] {d.get('kind')}"
            if d.get("kind") in ("Job", "Service"):
                errs += k8s_schema(d, where)
            else:
                errs += pytorchjob(d, where)
        if any(d.get("kind") == "Job" for d in b):
            errs += indexed_job_consistency(b, path)
        if errs:
            print(f"refused as it should be: {path}: {what}: {errs[0]}")
        else:
            problems.append(f"{path}: broken copy ({what}) was NOT refused")
    return problems


def main(argv):
    expect_invalid = "--expect-invalid" in argv
    selftest = "--self-test" in argv
    files = [a for a in argv if not a.startswith("--")]
    failed = []
    for spec in files:
        errs = check_file(spec)
        if expect_invalid:
            if errs:
                print(f"refused as it should be: {spec}: {errs[0]}")
            else:
                failed.append(f"{spec}: a broken manifest was NOT refused")
        else:
            if errs:
                failed += errs
            else:
                print(f"valid: {spec}")
            if selftest:
                failed += self_test(spec.partition(":")[0])
    for f in failed:
        print("FAIL:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
