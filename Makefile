# spotbatch: every target echoes what it runs; the logic lives in the Python packages.
SHELL := /bin/bash
PYTHON ?= python3
TEST_WORKERS ?= 2
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SPOTBATCH := $(BIN)/spotbatch
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_NO_ADVISORY_WARNINGS := 1

.PHONY: setup ssh-tools container-tools data model simulate whatif burst burst-down report report-check test test-fast check lint typecheck tf-fmt checkov parliament docs bench infra apply-real image image-push run-real destroy-real prices py312 clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)  ## create the venv under the repo and install the project with its dev tools

data: setup  ## the default 10,000-sentence dataset (downloads the vaderSentiment sdist once)
	$(SPOTBATCH) data prepare

model: data  ## fine-tune the offline MiniLM sentiment classifier (3 of 6 layers; about 4.5 minutes with its exports on 2 quiet cores, once)
	$(SPOTBATCH) model build

simulate: model  ## the main job in the planned pool and the pinned default: moto + stack, 3 on-demand, 8 spot-only, 8 hybrid, 8 deadline runs each (45 min here); QUICK=1: a few minutes per pool
	$(SPOTBATCH) simulate $(if $(QUICK),--quick)

whatif: setup  ## policies on a virtual clock against spot traces: TRACES=<folder or file> (default ../shared/data/spot-traces/...)
	$(SPOTBATCH) whatif --trace "$(or $(TRACES),../shared/data/spot-traces/aws-02-15-2023)" --work-hours 10 --deadline-hours 16 --runs 20

burst: model ssh-tools  ## one GPU box round trip; default against local stand-ins (Lambda API + sshd); REAL=1 SSH_KEY_NAME=.. SSH_KEY=.. for Lambda Cloud
	$(SPOTBATCH) burst payload
	$(SPOTBATCH) burst $(if $(REAL),--ssh-key-name "$(SSH_KEY_NAME)" --ssh-key "$(SSH_KEY)",--stand-in)

burst-down: setup  ## teardown of a burst whose process died: RUN_DIR=runs/burst/<name>
	$(SPOTBATCH) burst down --run-dir "$(RUN_DIR)"

report: setup  ## comparison_report.md + charts + HTML under reports/out, from the newest runs/simulate-* folder
	$(SPOTBATCH) report

report-check: report  ## open the HTML report in headless Chromium (Debian chromium, installed if missing) and screenshot it
	@command -v chromium >/dev/null || (echo "apt-get install -y chromium" && apt-get install -y --no-install-recommends chromium)
	chromium --headless --no-sandbox --disable-gpu --window-size=1200,2400 --screenshot=reports/out/screenshot.png "file://$(CURDIR)/reports/out/comparison_report.html"
	@test -s reports/out/screenshot.png && echo "screenshot: reports/out/screenshot.png"

ssh-tools:  ## sshd, ssh and rsync for the burst tests (Debian packages; installed if missing and apt-get can)
	@command -v rsync >/dev/null && { command -v sshd >/dev/null || test -x /usr/sbin/sshd; } || \
	  { echo "apt-get install -y openssh-server openssh-client rsync"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server openssh-client rsync \
	    || echo "could not install them: the burst tests that need sshd will skip and say why"; }

container-tools:  ## podman, runc and debootstrap: build and run the worker image without a Docker daemon (Debian packages; installed if missing and apt-get can)
	@{ command -v podman && command -v runc && command -v debootstrap; } >/dev/null || \
	  { echo "apt-get install -y podman runc debootstrap"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman runc debootstrap \
	    || echo "could not install them: the image tests will skip and say why"; }

test: setup ssh-tools container-tools  ## every test, slow end-to-end ones included (TEST_WORKERS processes, default 2)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal

test-fast: setup  ## the tests not marked slow: no moto, Terraform, worker process, container or browser (tests/speed.py)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal -m "not slow"

py312:  ## install into a Python 3.12 venv (.venv312; PYTHON312=<interpreter>) and run the CLI and the fast tests there
	$(or $(PYTHON312),python3.12) -m venv .venv312
	.venv312/bin/pip install --quiet --upgrade pip
	.venv312/bin/pip install --quiet -e '.[dev]'
	.venv312/bin/spotbatch --version
	.venv312/bin/pytest -q -m "not slow" tests/coordinator/cost tests/coordinator/build tests/coordinator/stack tests/test_architecture.py

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

tf-fmt:  ## terraform fmt -check (validate and `terraform test` run in `make test`)
	terraform fmt -check -recursive terraform

CHECKOV := .cache/checkov-venv/bin/checkov
$(CHECKOV):  # its own venv: checkov ships a module named hcl2 that clashes with python-hcl2
	$(PYTHON) -m venv .cache/checkov-venv
	.cache/checkov-venv/bin/pip install --quiet 'checkov~=3.3'

checkov: $(CHECKOV)  ## static security checks of terraform/, offline; skips are argued in #checkov:skip comments
	$(CHECKOV) -d terraform --framework terraform --skip-download --compact --quiet

PARLIAMENT := .cache/parliament-venv/bin/python
$(PARLIAMENT):  # its own venv, as checkov's: the audit's dependencies stay out of the project's
	$(PYTHON) -m venv .cache/parliament-venv
	.cache/parliament-venv/bin/pip install --quiet 'parliament~=1.6'

parliament: setup $(PARLIAMENT)  ## the IAM documents against AWS's definitions of actions, resources, condition keys
	$(BIN)/python -m coordinator.stack.policy_audit --parliament-python $(PARLIAMENT)

docs: setup  ## the documentation site into site/ (MkDocs, Material): every link checked, the generated parts drawn from the code
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

check: lint typecheck tf-fmt checkov parliament docs  ## ruff + mypy + terraform fmt + checkov + parliament + mkdocs build --strict

infra: setup  ## embedded AWS: moto server up, emulator stack applied and printed, destroyed, emulator stopped
	$(SPOTBATCH) infra up

# Your AWS account ("Run it on your AWS account" in the README). ENDPOINT=http://127.0.0.1:PORT tries the
# same commands on a local emulator instead (keys for it in SPOTBATCH_EMULATOR_ACCESS_KEY_ID/_SECRET_ACCESS_KEY).
# Prices: AWS's of the day (the table behind them); an emulator has no price API, so the table's, on the record.
REAL_TARGET = $(if $(ENDPOINT),--endpoint "$(ENDPOINT)")
# OVERRIDE='check-name=why' passes one pre-flight failure on the record (`spotbatch preflight --help` lists them)
REAL_OVERRIDE = $(if $(OVERRIDE),--override "$(OVERRIDE)")
REAL_PRICES = $(if $(ENDPOINT),--override "price-of-the-day=an emulator has no price API: the table's prices",--live-prices)

apply-real: setup  ## AWS: pre-flight, plan, CONFIRM=yes (or type yes), apply; BUCKET=<new name> the first time [INSTANCE_TYPE= REGION= OVERRIDE= PLAN=plan.json]
	$(SPOTBATCH) infra apply-real $(REAL_TARGET) $(REAL_PRICES) $(REAL_OVERRIDE) $(if $(BUCKET),--bucket-name "$(BUCKET)") $(if $(INSTANCE_TYPE),--instance-type "$(INSTANCE_TYPE)") $(if $(REGION),--region "$(REGION)") $(if $(PLAN),--plan "$(PLAN)")

image: model  ## the worker image for the instance type (CPU or CUDA), linux/amd64, with Docker or else podman [INSTANCE_TYPE= BASE_IMAGE=debian: no registry here]
	$(SPOTBATCH) image build $(if $(INSTANCE_TYPE),--instance-type "$(INSTANCE_TYPE)") $(if $(BASE_IMAGE),--base-image "$(BASE_IMAGE)")

image-push: setup  ## push the image to the stack's ECR with your credentials; then `make apply-real` again
	$(SPOTBATCH) image push $(REAL_TARGET)

run-real: setup  ## AWS: upload INPUT=file.parquet (or INPUT_KEY=data/... in the bucket), run the job, print the ledger [SEGMENTS= MAX_INSTANCES= POLICY= OVERRIDE= PLAN=plan.json]
	@test -n "$(INPUT)$(INPUT_KEY)" || { echo "usage: make run-real INPUT=file.parquet|INPUT_KEY=data/prefix/ [SEGMENTS=10] [POLICY=hybrid] [PLAN=plan.json]" >&2; exit 2; }
	$(SPOTBATCH) run $(REAL_TARGET) $(REAL_PRICES) $(REAL_OVERRIDE) $(if $(INPUT),--input "$(INPUT)",--input-key "$(INPUT_KEY)") $(if $(SEGMENTS),--segments "$(SEGMENTS)") $(if $(MAX_INSTANCES),--max-instances "$(MAX_INSTANCES)") $(if $(POLICY),--policy "$(POLICY)") $(if $(PLAN),--plan "$(PLAN)")

destroy-real: setup  ## AWS: destroy the stack (needs only its state); DELETE_DATA=1 also deletes outputs and images
	$(SPOTBATCH) infra destroy-real $(if $(DELETE_DATA),--delete-data)

prices: setup  ## regenerate coordinator/cost/prices.csv from the dated catalog [CATALOG=../shared/data/aws-prices/ec2-prices.csv]
	$(BIN)/python -m coordinator.cost.catalog $(or $(CATALOG),../shared/data/aws-prices/ec2-prices.csv)

bench: model container-tools  ## benchmarks: each prints a ratio against a baseline measured in the same run
	$(BIN)/python -m bench.worker_throughput
	$(BIN)/python -m bench.container_boot
	$(BIN)/python -m bench.recovery
	$(BIN)/python -m bench.scale
	$(BIN)/python -m bench.bigjob --rows 1000000
	$(BIN)/python -m bench.prepare
	$(BIN)/python -m bench.policies
	$(BIN)/python -m bench.zones
	$(BIN)/python -m bench.simulate_load
	$(BIN)/python -m bench.ceiling

clean:
	rm -rf build runs reports/out site .mypy_cache .ruff_cache .pytest_cache
