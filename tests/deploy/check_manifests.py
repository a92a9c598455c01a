"""What schemas cannot see in deploy/: the pieces must fit together. Reads the rendered Kustomize
overlays (files given on the command line) and deploy/compose.yaml:
- the ServiceMonitor (a CRD: kubernetes-validate has no schema for it) selects the Service "longqa"
  and names a port it has, so Prometheus's job label is "longqa" as the rules expect;
- Services and the PodDisruptionBudget select the Deployment's pods; the HPA scales it;
- probes are native gRPC probes on the container's gRPC port;
- the grace periods (Kubernetes, compose) outlast --drain_timeout_s plus gRPC's 2 s shutdown;
- the pod runs as the image's non-root user with a read-only root filesystem;
- both Dockerfiles copy every folder the top-level CMakeLists.txt reads (tests and benchmarks are
  off in the images).
Usage: check_manifests.py RENDERED.yaml...
"""
import os
import re
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def drain_seconds(args):
    (flag,) = [a for a in args if a.startswith("--drain_timeout_s=")]
    return int(flag.split("=", 1)[1])


def check_overlay(path):
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(path)) if d}
    deployment = docs[("Deployment", "longqa")]
    pod = deployment["spec"]["template"]
    pod_labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()

    def selects_pods(selector):
        return selector and selector.items() <= pod_labels.items()

    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for name in ("longqa", "longqa-headless"):
        service = docs[("Service", name)]
        assert selects_pods(service["spec"]["selector"]), f"{path}: {name} selects no pod"
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, f"{path}: {name} targets unknown port {port}"
    assert docs[("Service", "longqa-headless")]["spec"]["clusterIP"] == "None"
    assert selects_pods(docs[("PodDisruptionBudget", "longqa")]["spec"]["selector"]["matchLabels"])
    hpa = docs[("HorizontalPodAutoscaler", "longqa")]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "longqa"}
    adapter = yaml.safe_load(open(os.path.join(ROOT, "deploy/k8s/prometheus-adapter/config.yaml")))
    exposed = {r["name"]["as"] for r in adapter["rules"]}
    for metric in hpa["metrics"]:
        if metric["type"] == "Pods":
            assert metric["pods"]["metric"]["name"] in exposed, f"{path}: adapter lacks {metric}"

    # Exactly one selected Service has the port the monitor scrapes (two would scrape every pod
    # twice), and it is "longqa": Prometheus names the job after it.
    monitor = docs[("ServiceMonitor", "longqa")]["spec"]
    assert [e["port"] for e in monitor["endpoints"]] == ["metrics"]
    scraped = [name for (kind, name), d in docs.items() if kind == "Service" and
               monitor["selector"]["matchLabels"].items() <= d["metadata"]["labels"].items() and
               "metrics" in [p["name"] for p in d["spec"]["ports"]]]
    assert scraped == ["longqa"], f"{path}: the ServiceMonitor scrapes {scraped}"

    grpc_port = ports["grpc"]
    assert f"--listen=0.0.0.0:{grpc_port}" in container["args"]
    assert f"--metrics_listen=0.0.0.0:{ports['metrics']}" in container["args"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == grpc_port, f"{path}: {probe}"
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert grace > pre_stop + drain_seconds(container["args"]) + 2, f"{path}: grace {grace} s"
    security = pod["spec"]["securityContext"]
    assert security["runAsNonRoot"] and security["runAsUser"] == 10001
    assert container["securityContext"]["readOnlyRootFilesystem"]
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    limits = container["resources"]["limits"]
    threads = [a for a in container["args"] if a.startswith("--threads=")]
    assert threads and int(threads[0].split("=")[1]) <= int(limits["cpu"]), \
        f"{path}: --threads must not exceed the CPU limit"
    return "--device=cuda" in container["args"], "nvidia.com/gpu" in limits


def check_compose():
    compose = yaml.safe_load(open(os.path.join(ROOT, "deploy/compose.yaml")))
    longqa = compose["services"]["longqa"]
    grace = int(re.fullmatch(r"(\d+)s", longqa["stop_grace_period"]).group(1))
    assert grace > drain_seconds(longqa["command"]) + 2
    assert longqa["read_only"]
    prometheus = yaml.safe_load(open(os.path.join(ROOT, "deploy/prometheus/prometheus.yml")))
    (job,) = prometheus["scrape_configs"]
    (target,) = job["static_configs"][0]["targets"]
    assert f"--metrics_listen=0.0.0.0:{target.split(':')[1]}" in longqa["command"]
    assert target.split(":")[0] in compose["services"]


def check_dockerfiles():
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    read = set(re.findall(r"^\s*add_subdirectory\(([\w-]+)", cmake, re.M))
    read |= set(re.findall(r"^\s*include\(([\w-]+)/", cmake, re.M))
    read -= {"tests", "bench"}
    assert {"model", "server", "cmake"} <= read, read
    for name in ("Dockerfile", "Dockerfile.cuda"):
        text = open(os.path.join(ROOT, "deploy", name)).read()
        copied = set(re.findall(r"^COPY (?!--from)([\w-]+)[/ ]", text, re.M))
        missing = read - copied
        assert not missing, f"deploy/{name} does not copy {sorted(missing)}, which CMakeLists.txt reads"


def main(paths):
    assert paths, __doc__
    for path in paths:
        gpu_device, gpu_limit = check_overlay(path)
        assert gpu_device == gpu_limit, f"{path}: --device=cuda and nvidia.com/gpu go together"
        print(f"check_manifests: {path} fits together ({'gpu' if gpu_device else 'cpu'})")
    check_compose()
    print("check_manifests: deploy/compose.yaml fits together")
    check_dockerfiles()
    print("check_manifests: both Dockerfiles copy every folder the build reads")


if __name__ == "__main__":
    main(sys.argv[1:])
