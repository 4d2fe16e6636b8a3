# trainguard: the commands a user runs. `make help` lists them.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Node 22 and the CDK CLI come from npm into node_modules (see package.json).
export PATH := $(CURDIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 1
export AWS_EC2_METADATA_DISABLED := true
export PIP_DISABLE_PIP_VERSION_CHECK := 1
PYTEST_WORKERS ?= 2

# One step of a long target: an updating line on a terminal, a plain line when the output is a log (CI).
# On a terminal the line is cleared when the step ends, so what follows starts on a clean line.
step = if [ -t 1 ]; then printf '\r\033[K%s' "$(1)"; else echo "$(1)"; fi
step_done = if [ -t 1 ]; then printf '\r\033[K'; fi

.PHONY: module-map help setup local-setup chromium test test-quick test-frameworks lint docs synth deploy-local deploy-local-org demo demo-org sandbox bench chaos clean

help:
	@echo "make setup       create .venv and node_modules, install Chromium for the browser test (idempotent)"
	@echo "make local-setup only what make demo and make bench run (idempotent)"
	@echo "make test        the whole suite (runs setup first)"
	@echo "make test-quick  the suite without the slow tier"
	@echo "make test-frameworks  trainguard_sdk's callbacks in real Hugging Face and Lightning Trainers (installs them)"
	@echo "make lint        ruff, mypy, and the IAM policies against AWS's authorization data (offline)"
	@echo "make docs        the documentation site from docs/ into site/ (MkDocs, strict: a broken link fails)"
	@echo "make synth       write the CloudFormation template to cdk.out/"
	@echo "make deploy-local  bootstrap, deploy, update and destroy the stack in moto server (real CDK CLI)"
	@echo "make deploy-local-org  an organization's hub and two spokes in moto server (real CDK CLI), checked, destroyed"
	@echo "make demo        watch trainguard work against a local AWS stand-in; writes demo-out/report.html"
	@echo "make demo-org    one hub guarding three accounts in two regions (JSON=FILE writes what it did)"
	@echo "make sandbox     serve the stand-in on 127.0.0.1 with trainguard attached, for the AWS CLI and the SDK"
	@echo "make bench       the standard benchmark; writes BENCHMARKS.md and BENCHMARKS.png"
	@echo "make chaos       the chaos suite's long form: 3 fleets of 100 jobs under injected faults (docs/local-tools.md)"

setup: $(VENV)/.installed node_modules/.installed chromium
	@echo "setup: done: .venv, node_modules$$(command -v chromium >/dev/null && echo ', Chromium' || echo ', no Chromium')"

# The local tools' tier: the functions' pins, moto, matplotlib and trainguard itself; no SageMaker SDK, no
# PyTorch, no CDK (requirements-local.txt). make demo and make bench need no more.
local-setup: $(VENV)/.local-installed

# Its step is 1 of 4 in `make setup` and the only one in `make demo` or `make bench` (a target-specific variable
# is in effect for the target's prerequisites). --no-compile: the demo imports a small part of botocore and moto,
# and Python compiles what it imports when it first does; compiling every installed module up front was about a
# third of the install (docs/getting-started.md, "How long the first make demo takes").
LOCAL_SETUP_STEP = setup [1/1]
setup: LOCAL_SETUP_STEP = setup [1/4]
$(VENV)/.local-installed: requirements.txt requirements-local.txt pyproject.toml
	@$(call step,$(LOCAL_SETUP_STEP): the Python packages the local tools run (requirements-local.txt) ...)
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --no-compile -r requirements-local.txt -e .
	@touch $@
	@$(step_done)

# Everything else the one test command runs: the test, lint, CDK and docs tools, the SDK and PyTorch extras.
$(VENV)/.installed: $(VENV)/.local-installed requirements-dev.txt
	@$(call step,setup [2/4]: the test and CDK tools with the SageMaker SDK and PyTorch (a few minutes on a new machine) ...)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -r requirements-dev.txt -e '.[sdk,examples]'
	@touch $@
	@$(step_done)

node_modules/.installed: package.json package-lock.json
	@$(call step,setup [3/4]: Node.js and the CDK CLI (npm ci) ...)
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@
	@$(step_done)

# Debian's Chromium, for the test that opens the HTML report in a real browser (tests/tools/test_fleet_demo.py):
# installed where apt-get runs as root; elsewhere that test is skipped and says why.
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    $(call step,setup [4/4]: Debian's chromium for the browser test (apt-get) ...); \
	    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then \
	      $(step_done); \
	    else echo; echo "setup [4/4]: apt-get could not install chromium: the browser test will be skipped"; fi; \
	  else echo "setup [4/4]: Chromium not installed (apt-get as root is needed): the browser test will be skipped"; fi; }

test: setup
	$(PY) -m pytest -n $(PYTEST_WORKERS) -q

test-quick: setup
	$(PY) -m pytest -q -m "not slow"

# The frameworks' tier (docs/tests.md): trainguard_sdk's callbacks inside real Hugging Face and Lightning Trainers on
# the CPU. Its packages (requirements-frameworks.txt) go on top of setup's; `make test` neither needs nor collects it
# (tests/conftest.py collects tests/frameworks only for `-m frameworks`).
$(VENV)/.frameworks-installed: $(VENV)/.installed requirements-frameworks.txt
	@$(call step,test-frameworks: the Hugging Face and Lightning trainers (requirements-frameworks.txt) ...)
	@$(PY) -m pip install -q -r requirements-frameworks.txt
	@touch $@
	@$(step_done)

test-frameworks: $(VENV)/.frameworks-installed
	$(PY) -m pytest -q -m frameworks tests/frameworks

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

# The hub and two spokes of docs/organization.md, in moto server with the real CDK CLI.
deploy-local-org: setup
	$(PY) -m trainguard_local.deploy_local.deploy_org

demo: local-setup
	$(PY) -m trainguard_local.demo

# One hub guarding three accounts in two regions, in the stand-in (docs/organization.md); JSON=FILE also writes
# what was done where.
demo-org: local-setup
	$(PY) -m trainguard_local.demo.hub_and_spokes $(if $(JSON),--json $(JSON))

# The stand-in as a server for your own AWS CLI and SageMaker SDK, until Ctrl-C (docs/local-tools.md).
SANDBOX_PORT ?= 5005
SANDBOX_SPEED ?= 10
sandbox: setup
	$(PY) -m trainguard_local.sandbox --port $(SANDBOX_PORT) --speed $(SANDBOX_SPEED)

bench: local-setup
	$(PY) -m trainguard_local.bench

# The long form of the chaos suite (its short form runs in `make test`: tests/tools/test_chaos.py).
CHAOS_ARGS ?= --seed 1 --seed 2 --seed 3 --jobs 100
chaos: setup
	$(PY) -m trainguard_local.chaos $(CHAOS_ARGS)

clean:
	rm -rf cdk.out .pytest_cache demo-out site
