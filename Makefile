# Two commands on a fresh machine: `make demo` runs the seed tutorial on CPU, `make test` runs the tests.
# Each installs what it needs. torch is pinned to the version already on the machine (a local file
# there); override with `make test TORCH_VERSION=...`.
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
EXTRAS ?= test,onnxrt,tvm
PYTEST_ARGS ?=
# pytest-xdist workers: one per logical CPU (CI's 2-core machine: 2); TEST_WORKERS=0 runs in one process
TEST_WORKERS ?= logical
# CI's run leaves out the longest tests (tests/long_tests.py); `make test-all` runs everything
TEST_MARKS ?= not long

.PHONY: install demo test test-all test-ops bench

install:
	@$(PYTHON) -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$(TORCH_VERSION)' else 1)" 2>/dev/null \
		|| $(PYTHON) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(PYTHON) -m pip install --quiet -e ".[$(EXTRAS)]"

demo: install
	$(PYTHON) examples/demo.py

test: install
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "$(TEST_MARKS)" $(PYTEST_ARGS) tests; rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

test-all:
	$(MAKE) test TEST_MARKS=""

# Every op of torch's OpInfo database on inductor and aot_eager, every dtype (CI runs a seeded
# share of it); then a summary. EMBER_OPINFO_SAMPLES=all runs every sample of each op (default 3).
test-ops: install
	EMBER_OPINFO=all EMBER_OPINFO_TIMEOUT=300 EMBER_OPINFO_REPORT=opinfo-results.json \
		$(PYTHON) -m pytest -q $(PYTEST_ARGS) tests/ops; rc=$$?; \
		EMBER_OPINFO_REPORT=opinfo-results.json $(PYTHON) -m tests.ops.report; exit $$rc

bench: install
	$(PYTHON) -m benchmarks.run --device cpu
