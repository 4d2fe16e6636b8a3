# trainguard: the commands a user runs. `make help` lists them.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Node 22 and the CDK CLI come from npm into node_modules (see package.json).
export PATH := $(CURDIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 1
export AWS_EC2_METADATA_DISABLED := true
PYTEST_WORKERS ?= 2

.PHONY: module-map help setup test test-quick lint docs synth deploy-local demo sandbox bench chaos clean

help:
	@echo "make setup       create .venv and node_modules (idempotent)"
	@echo "make test        the whole suite (runs setup first)"
	@echo "make test-quick  the suite without the slow tier"
	@echo "make lint        ruff, mypy, and the IAM policies against AWS's authorization data (offline)"
	@echo "make docs        the documentation site from docs/ into site/ (MkDocs, strict: a broken link fails)"
	@echo "make synth       write the CloudFormation template to cdk.out/"
	@echo "make deploy-local  bootstrap, deploy, update and destroy the stack in moto server (real CDK CLI)"
	@echo "make demo        watch trainguard work against a local AWS stand-in"
	@echo "make sandbox     serve the stand-in on 127.0.0.1 with trainguard attached, for the AWS CLI and the SDK"
	@echo "make bench       the standard benchmark; writes BENCHMARKS.md"
	@echo "make chaos       the chaos suite's long form: 3 fleets of 200 jobs under injected faults (docs/local-tools.md)"

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt -e '.[sdk,examples]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

test: setup
	$(PY) -m pytest -n $(PYTEST_WORKERS) -q

test-quick: setup
	$(PY) -m pytest -q -m "not slow"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m trainguard_local.commands.iam_check

# MkDocs in strict mode (mkdocs.yml): a broken link or anchor, or a page left out of the nav, fails the build.
# Not --quiet: it hides the warnings from strict mode too, and the build then passes whatever they say.
docs: setup
	$(PY) -m trainguard_local.commands.module_map
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	@echo "site: site/index.html"

# The architecture page's map of every module, from the modules' docstrings (make docs checks it).
module-map: setup
	$(PY) -m trainguard_local.commands.module_map --write

synth: setup
	rm -rf cdk.out
	cdk synth --quiet --no-notices
	@echo "template: cdk.out/TrainGuard.template.json"

# The real CDK CLI against moto server on localhost; its own temporary cdk.out (docs/deploying.md).
deploy-local: setup
	$(PY) -m trainguard_local.deploy_local

demo: setup
	$(PY) -m trainguard_local.demo

# The stand-in as a server for your own AWS CLI and SageMaker SDK, until Ctrl-C (docs/local-tools.md).
SANDBOX_PORT ?= 5005
SANDBOX_SPEED ?= 10
sandbox: setup
	$(PY) -m trainguard_local.sandbox --port $(SANDBOX_PORT) --speed $(SANDBOX_SPEED)

bench: setup
	$(PY) -m trainguard_local.bench

# The long form of the chaos suite (its short form runs in `make test`: tests/integration/test_chaos.py).
CHAOS_ARGS ?= --seed 1 --seed 2 --seed 3 --jobs 200
chaos: setup
	$(PY) -m trainguard_local.chaos $(CHAOS_ARGS)

clean:
	rm -rf cdk.out .pytest_cache demo-out site
