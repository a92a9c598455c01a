#!/usr/bin/env bash
# The deployment files checked without running them (CTest deploy_static_test): Prometheus config
# and rules (promtool check + the alert unit tests), both Kustomize overlays rendered and validated
# against Kubernetes' schemas, yamllint, the compose file against the compose spec, and the
# cross-file checks of check_manifests.py.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.venv/bin"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for tool in promtool kubectl yamllint "$venv/kubernetes-validate" "$venv/check-jsonschema"; do
  command -v "$tool" >/dev/null || { echo "check_static: $tool missing: run deploy/install-deps.sh" >&2; exit 1; }
done
cd "$root"
promtool check config deploy/prometheus/prometheus.yml
promtool check rules deploy/prometheus/rules.yml deploy/prometheus/alerts.yml
(cd tests/deploy && promtool test rules alerts_test.yml)
for overlay in cpu gpu; do
  kubectl kustomize "deploy/k8s/overlays/$overlay" > "$out/$overlay.yaml"
  # Every built-in kind must pass; the one CRD (ServiceMonitor) has no schema there and is
  # checked by check_manifests.py instead. Anything else unvalidated fails.
  "$venv/kubernetes-validate" --strict --quiet "$out/$overlay.yaml" 2>&1 | tee "$out/validate.txt"
  if grep -v "Couldn't find schema for kind ServiceMonitor" "$out/validate.txt" | grep -q .; then
    echo "check_static: kubernetes-validate reported the lines above for $overlay" >&2; exit 1
  fi
done
yamllint --strict -c .yamllint.yml deploy/ tests/deploy/ "$out/cpu.yaml" "$out/gpu.yaml"
"$venv/check-jsonschema" --builtin-schema vendor.compose-spec deploy/compose.yaml
"$venv/python" -c 'import json, sys; json.load(open(sys.argv[1]))' deploy/grafana/dashboards/longqa.json
"$venv/python" tests/deploy/check_manifests.py "$out/cpu.yaml" "$out/gpu.yaml"
echo "check_static: all deployment files pass"
