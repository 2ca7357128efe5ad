# The two commands of the README: `make demo` (the main job) and `make test`.
# Both install what they need into .venv and start Neo4j through the embedded
# launcher (Java 17 + Maven), so nothing has to be installed by hand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install test demo lint clean

$(BIN)/graphmem: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,png,mcp,langgraph,ui,dataframes]'
	touch $@

install: $(BIN)/graphmem

test: install
	$(BIN)/pytest -q -n 2 --dist loadfile

demo: install
	$(BIN)/graphmem demo

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) docker/launcher/target .pytest_cache .hypothesis
