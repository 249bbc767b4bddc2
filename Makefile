# Tarantula: the two set-up commands are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test test-fast lint check clean

# setup.py builds the near-duplicate fingerprint's C pass, the hash sets' binary search and the
# reading's C pass into the checkout (tarantula/core/_simhash.c, _hashset.c, _reader.c).
$(VENV)/.installed: pyproject.toml setup.py tarantula/core/_simhash.c tarantula/core/_hashset.c tarantula/core/_reader.c conf/tarantula-warnings.pth
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	cp conf/tarantula-warnings.pth "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	touch $@

# pywb and py-wacz, for the replay and WACZ tests (tests/helpers/replay.py), in an environment of
# their own.
REPLAY_VENV ?= .venv-replay
$(REPLAY_VENV)/.installed: tests/replay-requirements.txt
	$(PYTHON) -m venv $(REPLAY_VENV)
	$(REPLAY_VENV)/bin/pip install -q --upgrade pip
	$(REPLAY_VENV)/bin/pip install -q -r tests/replay-requirements.txt
	touch $@

.PHONY: replay-tools
replay-tools: $(REPLAY_VENV)/.installed

## demo: serve the bundled demo site on 127.0.0.1 and crawl it end to end (run again: says when
## the next recrawl is due)
DEMO_CONF ?= conf/demo.conf
demo: $(VENV)/.installed
	$(BIN)/python -m tarantula.demo run --conf $(DEMO_CONF)

.PHONY: demo-again

## demo-again: delete the demo's repository (repository/demo) and crawl the demo site afresh
demo-again: $(VENV)/.installed
	$(BIN)/python -m tarantula.demo run --fresh --conf $(DEMO_CONF)

# Tests run in parallel: most of their time is spent waiting on servers and crawl processes, so
# more workers than cores pay. Tests of one group share a worker (xdist_group: a costly module
# fixture such as the documentation-site crawl runs once; docs/testing.md says why pytest is 8.4).
PYTEST_WORKERS ?= 6
# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE): each of
# the suite's some 450 crawl processes would compile the crawler's modules again (about 0.1 CPU s
# each), and each worker would rewrite every test module's asserts again (about 6 CPU s).
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup

## test: lint, type-check, then every test (unit, component, end-to-end, scrapy check)
test: $(VENV)/.installed $(REPLAY_VENV)/.installed lint
	$(PYTEST)

## test-fast: the pure and component tiers only (no crawl process, no Redis, no browser)
test-fast: $(VENV)/.installed
	$(PYTEST) -m "not (e2e or redis or chromium or root)"

.PHONY: test-e2e test-redis test-chromium test-root

## test-e2e, test-redis, test-chromium, test-root: one tier alone (docs/testing.md)
test-e2e test-redis test-chromium test-root: test-%: $(VENV)/.installed
	$(PYTEST) -m $*

lint: $(VENV)/.installed
	$(BIN)/ruff check tarantula tests
	$(BIN)/ruff format --check tarantula tests
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(REPLAY_VENV) repository/demo

.PHONY: bench bench-tiny

## bench: Tarantula against a bare Scrapy spider on the generated `small` web (nginx), 3 runs
bench: $(VENV)/.installed
	$(BIN)/python -m bench.run --preset small --runs 3

## bench-tiny: one quick run on the `tiny` web, so the harness keeps working
bench-tiny: $(VENV)/.installed
	$(BIN)/python -m bench.run --preset tiny --runs 1
