# Entry points: `make e2e` (set up whatever is missing, bring up a cluster, run the suites) and
# `make test` (our own tests, no cluster). See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PROVIDER ?=
K8S_VERSION ?=
# A Kubernetes source tree to build the binaries from (docs/patched-kubelet.md).
K8S_SOURCE ?=
PYTEST_ARGS ?=
# xdist workers for `make e2e`, one cluster each: auto = cores + 1 bounded by memory (docs/running.md, "Parallel
# runs"); a number overrides it, 0 runs without xdist. A -n in PYTEST_ARGS wins (it comes later).
E2E_WORKERS ?= auto
# An older kubelet under the K8S_VERSION control plane (docs/versions.md, "KUBELET_VERSION"); only its kubelet is built.
KUBELET_VERSION ?=
K8S_ARGS = $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION)) $(if $(K8S_SOURCE),--k8s-source $(K8S_SOURCE)) \
  $(if $(KUBELET_VERSION),--kubelet-version $(KUBELET_VERSION))
K8S_VERSION_ARG = $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION))

.PHONY: venv lock test test-fast docs e2e certify-upstream bench interrupt-check soak durations matrix lint protos setup cleanup chromium

venv: $(VENV)/.installed

# Exactly the versions CI tested: requirements.lock (hashes) installed by uv; `make lock` re-resolves it.
UV_VERSION := 0.13.9

$(VENV)/.installed: pyproject.toml setup.py requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check "uv==$(UV_VERSION)"
	$(BIN)/uv pip install -q --python $(BIN)/python --require-hashes -r requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $@

lock: venv
	$(BIN)/uv pip compile -q pyproject.toml --extra dev --generate-hashes --python-version 3.11 -o requirements.lock

test: venv
	$(BIN)/ruff check .
	$(BIN)/pytest tests -q $(TEST_ARGS)

# The same without the tests that start Docker containers or run kind (about 50 s of `make test`).
test-fast: venv
	$(BIN)/ruff check .
	$(BIN)/pytest tests -q -m "not docker and not kind" $(TEST_ARGS)

# Every doc derived from code (docs/*.md, README's suites counts: src/device_conformance/cli/docs.py), rewritten;
# `make test` fails naming this target while one is stale.
docs: venv
	$(BIN)/device-conformance docs

# Also the workflows under .github/workflows, with actionlint (built into the cache with `go install` on first
# use: tests/repo/test_workflow_lint.py, which `make test` runs too).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest tests/repo/test_workflow_lint.py -q -p no:cacheprovider

protos: venv
	find src/device_conformance/protos -name '*.proto' -print0 | xargs -0 \
	  $(BIN)/python -m grpc_tools.protoc -Isrc --python_out=src --grpc_python_out=src --pyi_out=src

# Debian packages, Kubernetes and containerd binaries (cached per version) and images: whatever is missing.
# PROVIDER=kind: the Docker engine (docker.io) and kind instead of a Kubernetes build.
setup: venv
ifneq ($(PROVIDER),existing)
	$(BIN)/device-conformance setup $(if $(PROVIDER),--provider $(PROVIDER)) $(K8S_ARGS)
endif

# --dist loadgroup: each module on one worker, longest first (pytest_plugin/xdist_groups.py).
e2e: setup
	E2E_WORKERS=$(E2E_WORKERS) $(BIN)/pytest suites -n auto --dist loadgroup \
	  $(if $(PROVIDER),--provider $(PROVIDER)) $(K8S_ARGS) $(PYTEST_ARGS)

# Upstream's two subjects certified in sanity and e2e (vendor) mode, one report folder each under
# $(CERTIFY_OUT) (CI keeps it as its artifact); every report's verdict table is printed at the end.
# A failing subject does not stop the others ("-"): the summary at the end reads every report and is red when
# one FAILED or is missing. --dist load: the DRA black-box tests share no module fixture, so each goes to a
# worker (cluster) of its own. The DRA test driver's sanity run brings up a local cluster of its own, holding
# two claims allocated to its node (the kubeletplugin helper reads each claim it prepares from the API server).
CERTIFY_OUT ?= artifacts/certification
CERTIFY_REPORTS = sanity-sample-device-plugin sanity-dra-test-driver e2e-sample-device-plugin e2e-dra-test-driver
certify-upstream: setup
	rm -rf $(CERTIFY_OUT) && mkdir -p $(CERTIFY_OUT)
	-$(BIN)/device-conformance certify sample-device-plugin $(K8S_VERSION_ARG) --out $(CERTIFY_OUT)/sanity-sample-device-plugin
	-$(BIN)/device-conformance certify dra-test-driver $(K8S_VERSION_ARG) --out $(CERTIFY_OUT)/sanity-dra-test-driver
	-$(BIN)/pytest suites/device_plugin -p no:cacheprovider -q -rfE $(K8S_ARGS) \
	  --vendor-device-plugin example.com/resource --vendor-command upstream:sample-device-plugin \
	  --vendor-report $(CERTIFY_OUT)/e2e-sample-device-plugin
	-$(BIN)/pytest suites/dra -p no:cacheprovider -q -rfE -n auto --dist load $(K8S_ARGS) \
	  --vendor-dra-driver test-driver.cdi.k8s.io --vendor-command upstream:dra-test-driver \
	  --vendor-report $(CERTIFY_OUT)/e2e-dra-test-driver
	$(BIN)/device-conformance certify summary $(addprefix $(CERTIFY_OUT)/,$(CERTIFY_REPORTS))

# BENCH_ARGS: e.g. --skip-suite (a quick run without the suite wall times), --workers 1,2, --marks ''.
# PROVIDER=kind: kind figures next to the local ones (docs/benchmarks.md); both providers are set up.
BENCH_ARGS ?=
bench: setup
ifeq ($(PROVIDER),kind)
	$(BIN)/device-conformance setup --provider local $(K8S_ARGS)
endif
	$(BIN)/python bench/run.py $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION)) \
	  $(if $(filter kind,$(PROVIDER)),--provider kind) $(BENCH_ARGS)

# The interruption and crash check (docs/providers/local.md, "Interruption and crash"): SIGINT at 12 points, SIGKILL at 4.
# INTERRUPT_ARGS: e.g. --seed 7, --only kubelet,kill-dra. Results in bench/results/interrupt-<time>.md.
INTERRUPT_ARGS ?=
interrupt-check: setup
	$(BIN)/python bench/interrupt.py $(INTERRUPT_ARGS)

# The flake check (docs/benchmarks.md, "Flake check"): the whole suite SOAK_RUNS times in a row, results in bench/results/soak-<time>.md.
# SOAK_ARGS: e.g. --marks 'not slow' --workers 2 --stop-on-failure; --neighbour burn:N / --neighbour go-build
# put CPU load beside each run (stopped with it, its whole process group).
SOAK_RUNS ?= 10
SOAK_ARGS ?=
soak: setup
	$(BIN)/python bench/soak.py --runs $(SOAK_RUNS) $(SOAK_ARGS)

# suites/durations.json (the order --dist loadgroup hands modules out in, longest first) from the newest soak's runs.
durations: venv
	$(BIN)/python bench/durations.py

# The non-slow suites on every version of the matrix (expectations/versions.py MATRIX_VERSIONS), one table.
# MATRIX_VERSIONS="1.35.8 1.37.1" picks versions; results in matrix-results/.
MATRIX_VERSIONS ?=
matrix: venv
	$(BIN)/device-conformance matrix $(if $(MATRIX_VERSIONS),--versions "$(MATRIX_VERSIONS)") $(if $(PYTEST_ARGS),--pytest-args "$(PYTEST_ARGS)")

# Tear down clusters left by crashed or interrupted runs.
# Also private Docker engines of killed kind sessions; PROVIDER=kind: kind clusters of crashed runs too.
cleanup: venv
	$(BIN)/device-conformance cluster cleanup --provider local
ifeq ($(PROVIDER),kind)
	$(BIN)/device-conformance cluster cleanup --provider kind
endif

# Headless Chromium for the report.html rendering test (tests/certify/test_report.py skips without it);
# installed from Debian only when missing.
chromium:
	@command -v chromium >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core; }
	@chromium --version
