# Two commands for a fresh machine (see README.md):
#   make demo   -- create .venv on first use, then run the main job (NeSyFS: SmolLM2 + oracle slow thinking)
#   make test   -- create .venv on first use, then run the whole test suite
PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-stamp
SCALE_STAMP := $(VENV)/.scale-stamp
LLAMA_SERVER := $(BIN)/llama-server
LLAMA_BUILD := .build/llama-server
# llama-cpp-python ships as an sdist: a CPU-only, portable (AVX2) build of llama.cpp, ~15-30 min
# on 2 cores the first time; pip's wheel cache makes every later install a copy.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
export TORCH_COMPILE_DISABLE := 1
export TOKENIZERS_PARALLELISM := false
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup setup-scale demo demo-oracle demo-lm test lint docs bench bench-full clean

setup: $(STAMP)

# torch 2.13.0 (CPU) comes from the wheel on local disk; it must be installed before anything
# that depends on torch, or pip would resolve a multi-GB CUDA build.
$(STAMP): pyproject.toml requirements/constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c requirements/constraints.txt -e ".[all]"
	$(BIN)/python -m pip install -q --no-deps -c requirements/constraints.txt -r requirements/no-deps.txt
	touch $(STAMP)

# The scale-out extra (docs/scale.md): Ray, llama-cpp-python's server, and llama.cpp's own C++
# llama-server.  Without it the Ray and llama.cpp-server tests are skipped with a reason; CI
# installs it (.ci/run).
setup-scale: $(SCALE_STAMP) $(LLAMA_SERVER)

$(SCALE_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(BIN)/python -m pip install -q -c requirements/constraints.txt -e ".[scale]"
	touch $(SCALE_STAMP)

# llama-server (engine "llama-server", docs/scale.md) from the llama.cpp that llama-cpp-python's
# sdist vendors (the pinned version, from the package index; no other download): a static,
# CPU-only, portable build of that one target, ~10-15 min on 2 cores, into .venv/bin.
$(LLAMA_SERVER): requirements/constraints.txt | $(STAMP)
	rm -rf $(LLAMA_BUILD) && mkdir -p $(LLAMA_BUILD)
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: -c requirements/constraints.txt \
		-d $(LLAMA_BUILD) llama-cpp-python
	tar xzf $(LLAMA_BUILD)/llama_cpp_python-*.tar.gz -C $(LLAMA_BUILD)
	cmake -S $(LLAMA_BUILD)/llama_cpp_python-*/vendor/llama.cpp -B $(LLAMA_BUILD)/build -G Ninja \
		-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $(LLAMA_CMAKE_ARGS) \
		-DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
		-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >$(LLAMA_BUILD)/cmake.log
	ninja -C $(LLAMA_BUILD)/build -j2 llama-server >$(LLAMA_BUILD)/ninja.log
	install -m 755 $(LLAMA_BUILD)/build/bin/llama-server $(LLAMA_SERVER)
	rm -rf $(LLAMA_BUILD)

# The main job: NeSyFS on a real TextWorldExpress game (coin, dev seed 10000) with the embedded
# SmolLM2-135M as its fast module (ReAct-style action proposal) checked by reflection.  When
# reflection turns down K=1 proposal (the paper's K is 3; K=1 is this demo's choice), or the fast action would repeat a step already taken at the
# same observation (loop_guard), the slow thinker takes over for that step with the simulator
# world model -- each of 16 particles steps its own clone of the game 3 steps ahead (an ORACLE world
# model, labelled so in the output) -- weighted by the env + task twists.  The printed thought of a
# planner step names why it ran, the particles' first actions with their weights and which twist
# decided.  Step records land in runs/demo/ (viewer: `smcplan report runs/demo`).
# make demo-oracle: the slow thinker alone, every step, no LLM call (seconds).
# make demo-lm: NeSyFS with SmolLM2 as its world model too (no oracle); it loops on this seed.
DEMO_ARGS ?= --env twx:coin --agent nesyfs --seeds 10000 --max-steps 25 \
	--agent-arg world_model=simulator --agent-arg progress=env+task \
	--agent-arg planner.proposal=uniform --agent-arg loop_guard=true --agent-arg max_rejections=1 \
	--agent-arg num_particles=16 --agent-arg horizon=3 --agent-arg lam=3 --agent-arg choice=max_weight
DEMO_ORACLE_ARGS ?= --env twx:coin --agent nesyfs --seeds 10000 --max-steps 25 \
	--agent-arg world_model=simulator --agent-arg progress=env+task \
	--agent-arg slow_thinking=always --agent-arg planner.proposal=uniform \
	--agent-arg num_particles=8 --agent-arg horizon=3 --agent-arg lam=3 --agent-arg choice=max_weight
DEMO_LM_ARGS ?= --env twx:coin --agent nesyfs --seeds 10000 --max-steps 10
demo: setup
	rm -rf runs/demo
	$(BIN)/smcplan eval $(DEMO_ARGS) --out runs/demo --show --no-progress

demo-oracle: setup
	rm -rf runs/demo-oracle
	$(BIN)/smcplan eval $(DEMO_ORACLE_ARGS) --out runs/demo-oracle --show --no-progress

demo-lm: setup
	rm -rf runs/demo-lm
	$(BIN)/smcplan eval $(DEMO_LM_ARGS) --out runs/demo-lm --show --no-progress

test: setup-scale
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check smcplan tests bench examples scripts

# The API reference and guides (mkdocs.yml), built offline into site/ with warnings as errors.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Every script in bench/ on its quick setting (bench/run_all.py lists them; minutes on 2 cores),
# each writing bench/results/<name>.json; bench-full runs them with their own defaults (hours).
bench: setup
	$(BIN)/python bench/run_all.py

bench-full: setup
	$(BIN)/python bench/run_all.py --full

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .build
