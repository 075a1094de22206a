# Entry points: `make e2e` (set up whatever is missing, bring up a cluster, run the suites) and
# `make test` (our own tests, no cluster). See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PROVIDER ?=
K8S_VERSION ?=
PYTEST_ARGS ?=

.PHONY: venv test e2e bench lint protos setup cleanup

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

test: venv
	$(BIN)/ruff check .
	$(BIN)/pytest tests -q

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

protos: venv
	find src/device_conformance/protos -name '*.proto' -print0 | xargs -0 \
	  $(BIN)/python -m grpc_tools.protoc -Isrc --python_out=src --grpc_python_out=src --pyi_out=src

# Debian packages, Kubernetes and containerd binaries (cached per version) and images: whatever is missing.
setup: venv
ifneq ($(PROVIDER),existing)
	$(BIN)/device-conformance setup $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION))
endif

e2e: setup
	$(BIN)/pytest suites $(if $(PROVIDER),--provider $(PROVIDER)) $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION)) $(PYTEST_ARGS)

bench: setup
	$(BIN)/python bench/run.py $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION))

# Tear down clusters left by crashed or interrupted runs.
cleanup: venv
	$(BIN)/device-conformance cluster cleanup
