# Two entry points for a fresh machine (Python 3.11 with venv):
#   make run   - set up .venv and train MPSAN on the embedded default task
#   make test  - set up .venv and run the test suite
# and one for the lower ends of setup.cfg's version ranges:
#   make test-lowest - .venv-lowest with the lowest supported versions, the
#                      package installed over them (which must keep them),
#                      and a smoke subset of the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers for make test: one a core by default. loadscope keeps a
# test module on one worker (its module fixtures are built once, its tests run
# in file order); TEST_WORKERS=0 runs the suite in this process.
TEST_WORKERS ?= auto

# The lowest versions setup.cfg's install_requires allows, exactly.
LOWEST := tensorflow==2.16.2 keras==3.6.0 tensorboard==2.16.2 \
	tensorflow-serving-api==2.16.1 keras-tuner==1.4.7 numpy==1.26.4 pillow==10.0.0
LOWEST_VENV ?= .venv-lowest
# A layer (saving, old weights, mixed precision), TensorBoard's graph, a model
# compiled, fitted on strings and round-tripped through .keras, the export and
# its TF Serving files, and the data errors through the command line.
SMOKE_TESTS := tests/test_token_embedding.py tests/test_tensorboard.py \
	tests/test_text_classifier.py tests/test_export.py tests/test_serving_files.py \
	tests/test_splits.py

.PHONY: run test setup clean test-lowest

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/keras-posattn train mpsan

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope --durations=15

test-lowest:
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(LOWEST_VENV)/bin/pip install --quiet --upgrade pip
	$(LOWEST_VENV)/bin/pip install --quiet $(LOWEST) "pytest>=8"
	$(LOWEST_VENV)/bin/pip install --quiet .
	$(LOWEST_VENV)/bin/python -c 'import sys; from importlib.metadata import version; \
	  pins = dict(p.split("==") for p in sys.argv[1:]); \
	  moved = {n: version(n) for n, v in pins.items() if version(n) != v}; \
	  print("pip install . kept", " ".join(sys.argv[1:])) if not moved else \
	  sys.exit(f"pip install . changed {moved}")' $(LOWEST)
	cd tests && ../$(LOWEST_VENV)/bin/python -m pytest -q -p no:cacheprovider \
	  $(patsubst tests/%,%,$(SMOKE_TESTS))

clean:
	rm -rf $(VENV) $(LOWEST_VENV) runs saved_models/*/
