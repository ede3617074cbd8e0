#!/usr/bin/env python3
"""Runs a manifest of `hanglab manifest --format json` (an Indexed Job, or a PyTorchJob with the
environment the Training Operator adds to each pod: RANK, WORLD_SIZE, MASTER_*, PET_*) on this host, one
torchrun per pod (test e2e.k8s_manifest_local), after its init containers (`--preflight`: hanglab preflight on
every pod, at once) have exited 0: each "pod" gets the container's args and env as the
kubelet would hand them over ($(VAR) expanded, $$ -> $), with only what a pod has and this host has
not replaced: the image's paths by this checkout's (--image-root -> SOURCE, its build/workloads ->
WORKLOAD_DIR, its .venv -> VENV), the pod's emptyDir by a folder per pod, pod 0's DNS name by 127.0.0.1
and a free port, and no *_SOCKET_IFNAME (all pods share this host's loopback).

usage: k8s_emulate.py MANIFEST.json SOURCE VENV WORKLOAD_DIR WORK [NAME=VALUE...]   (extra env for every pod)
Prints each pod's exit code and which ranks wrote a trace in which pod; exit 0 when every pod exited 0
and the built-in workload's ranks are spread R per pod (all of 0..W-1, each pod a consecutive block).
"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    man, source, venv, workload_dir, work = argv[:5]
    extra = dict(a.split("=", 1) for a in argv[5:])
    items = json.load(open(man))["items"]
    # pods: (container, the environment the controller adds to that pod's spec)
    pods = []
    job = next((d for d in items if d["kind"] == "Job"), None)
    if job:
        for i in range(job["spec"]["completions"]):
            pods.append((job["spec"]["template"]["spec"]["containers"][0], {"JOB_COMPLETION_INDEX": str(i)},
                         job["spec"]["template"]["spec"].get("initContainers", [])))
    else:
        # A PyTorchJob: what the Training Operator (v1.9) adds to each replica's "pytorch" container
        # (pkg/controller.v1/pytorch: envvar.go, master.go, elastic.go).
        pj = next(d for d in items if d["kind"] == "PyTorchJob")
        spec, name = pj["spec"], pj["metadata"]["name"]
        specs = spec["pytorchReplicaSpecs"]
        total = sum(r["replicas"] for r in specs.values())
        master_c = specs["Master"]["template"]["spec"]["containers"][0]
        master_port = next(p["containerPort"] for p in master_c["ports"] if p["name"] == "pytorchjob-port")
        ep = spec.get("elasticPolicy")
        for role in ("Master", "Worker"):
            for i in range(specs.get(role, {}).get("replicas", 0)):
                add = {"PYTHONUNBUFFERED": "0", "MASTER_PORT": str(master_port), "MASTER_ADDR": f"{name}-master-0",
                       "WORLD_SIZE": str(total), "RANK": str(i + (1 if role == "Worker" else 0))}
                if ep:
                    add.update({"PET_RDZV_ENDPOINT": f"{ep['rdzvHost']}:{ep['rdzvPort']}",
                                "PET_RDZV_BACKEND": ep.get("rdzvBackend", "c10d"),
                                "PET_NNODES": f"{ep['minReplicas']}:{ep['maxReplicas']}",
                                "PET_MAX_RESTARTS": str(ep.get("maxRestarts", 0)), "PET_RDZV_ID": ep["rdzvId"]})
                if "nprocPerNode" in spec:
                    add["PET_NPROC_PER_NODE"] = spec["nprocPerNode"]
                pods.append((specs[role]["template"]["spec"]["containers"][0], add,
                             [dict(ic, _labels={"training.kubeflow.org/replica-index": str(i)})
                              for ic in specs[role]["template"]["spec"].get("initContainers", [])]))
    n = len(pods)
    c = pods[0][0]
    root = "/opt/hanglab"
    args0 = c["args"]
    nproc = int(args0[args0.index("--nproc-per-node") + 1])
    port = free_port()

    def local(s, i, run):
        # the kubelet's $(VAR) expansion over the container's env, then $$ -> $
        for k, v in pods[i][1].items():
            s = s.replace(f"$({k})", v)
        s = s.replace("$$", "$")
        s = s.replace("/hanglab/run", run)
        s = s.replace(f"{root}/build/workloads", workload_dir).replace(f"{root}/.venv", venv).replace(root, source)
        return s

    def pod_env(i, run, container, controller_env=True):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHELASTIC_", "PET_"))}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = local(e["value"], i, run)
            elif "fieldRef" in e.get("valueFrom", {}):  # the downward API: a pod label or annotation
                path = e["valueFrom"]["fieldRef"]["fieldPath"]
                m = re.match(r"metadata\.labels\['(.+)'\]", path)
                if m and m.group(1) in container.get("_labels", {}):
                    env[e["name"]] = container["_labels"][m.group(1)]
        # The Job controller's JOB_COMPLETION_INDEX reaches every container; the Training Operator adds
        # its variables to the replica's "pytorch" container only, not to init containers.
        env.update({k: v for k, v in pods[i][1].items() if controller_env or k == "JOB_COMPLETION_INDEX"})
        for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
            env.pop(k, None)
        return env

    for i in range(n):
        run = os.path.join(work, f"pod{i}")
        shutil.rmtree(run, ignore_errors=True)
        os.makedirs(run)
    # Init containers first, every pod's at once (hanglab preflight rendezvous across the pods), each
    # to its end; a pod whose init container fails never starts its container (the kubelet's rule).
    inits = []
    for i in range(n):
        run = os.path.join(work, f"pod{i}")
        for ic in pods[i][2]:
            env = pod_env(i, run, ic, controller_env=False)
            if env.get("MASTER_ADDR", "").endswith(("-master-0", "-0." + env.get("MASTER_ADDR", ".").split(".")[-1])):
                env["MASTER_ADDR"] = "127.0.0.1"
            if "MASTER_PORT" in env:  # the rendezvous port, here the free port the pods' torchrun will use
                env["MASTER_PORT"] = str(port)
            env.update(extra)
            cmd = [local(a, i, run) for a in ic["command"]]
            inits.append((i, subprocess.Popen(cmd, env=env, stdout=open(os.path.join(run, f"init-{ic['name']}.log"), "w"),
                                              stderr=subprocess.STDOUT)))
    failed_init = set()
    for i, p in inits:
        try:
            rc = p.wait(timeout=400)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "timeout"
        print(f"  pod {i}: init container exit {rc}")
        if rc != 0:
            failed_init.add(i)
    if failed_init:
        for i in sorted(failed_init):
            for f in glob.glob(os.path.join(work, f"pod{i}", "init-*.log")):
                print(f"--- pod {i} {os.path.basename(f)}\n" + open(f).read()[-3000:])
        return 1

    procs = []
    for i in range(n):
        run = os.path.join(work, f"pod{i}")
        env = pod_env(i, run, c)
        if "PET_RDZV_ENDPOINT" in env:  # pod 0's Service name: not resolvable here
            env["PET_RDZV_ENDPOINT"] = f"127.0.0.1:{port}"
        if env.get("MASTER_ADDR", "").endswith("-master-0"):
            env["MASTER_ADDR"] = "127.0.0.1"
        env.update(extra)
        c = pods[i][0]
        args = [local(a, i, run) for a in c["args"]]
        args = [re.sub(r"^[^:]+:\d+$", f"127.0.0.1:{port}", a) if j > 0 and args[j - 1] == "--rdzv-endpoint" else a
                for j, a in enumerate(args)]
        cmd = [local(c["command"][0], i, run)] + args
        with open(os.path.join(run, "cmd.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n")
        procs.append(subprocess.Popen(cmd, env=env, stdout=open(os.path.join(run, "pod.log"), "w"),
                                      stderr=subprocess.STDOUT))
    t0 = time.time()
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(timeout=max(1, 240 - (time.time() - t0))))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            rcs.append("timeout")
    ok = all(rc == 0 for rc in rcs)
    print(f"{n} pods x {nproc} ranks: exit codes {rcs} after {time.time() - t0:.1f} s")
    placed = []
    for i in range(n):
        ranks = sorted(int(re.search(r"events\.(\d+)\.jsonl$", f).group(1))
                       for f in glob.glob(os.path.join(work, f"pod{i}", "events.*.jsonl")))
        placed.append(ranks)
        print(f"  pod {i}: ranks {ranks} (log {os.path.join(work, f'pod{i}', 'pod.log')})")
    if any(placed):
        blocks = sorted(placed)
        want = [list(range(k * nproc, (k + 1) * nproc)) for k in range(n)]
        if blocks != want:
            print(f"FAIL: ranks are not spread {nproc} per pod in blocks: {placed}")
            ok = False
    if not ok:
        for i in range(n):
            with open(os.path.join(work, f"pod{i}", "pod.log")) as f:
                print(f"--- pod {i} (last lines)\n" + "".join(f.readlines()[-15:]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
