# Tarantula: the two set-up commands are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint check clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

## demo: serve the bundled demo site on 127.0.0.1 and crawl it end to end
demo: $(VENV)/.installed
	$(BIN)/python -m tarantula.demo run

## test: lint, type-check, then every test (unit, component, end-to-end, scrapy check)
test: $(VENV)/.installed lint
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed
	$(BIN)/ruff check tarantula tests
	$(BIN)/ruff format --check tarantula tests
	$(BIN)/mypy

clean:
	rm -rf $(VENV) repository/demo
