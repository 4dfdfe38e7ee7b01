# Two entry points for a fresh machine (Python 3.11 with venv):
#   make run   - set up .venv and train MPSAN on the embedded default task
#   make test  - set up .venv and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/keras-posattn train mpsan

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=15

clean:
	rm -rf $(VENV) runs saved_models/*/
