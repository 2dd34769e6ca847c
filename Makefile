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
# llama.cpp's GGUF converters (smcplan.llm.finetune.to_gguf / lora_to_gguf), kept from the same
# sdist: the two scripts, the conversion/ package they import, gguf-py's gguf package, the chat
# templates and the two built-in vocabularies some architectures read (~5 MB of the tree).
LLAMA_CPP_PY := $(VENV)/share/llama.cpp
LLAMA_CPP_CONVERTER := $(LLAMA_CPP_PY)/convert_lora_to_gguf.py
LLAMA_CPP_KEEP := LICENSE convert_hf_to_gguf.py convert_lora_to_gguf.py conversion gguf-py/gguf \
	models/templates models/ggml-vocab-gpt-neox.gguf models/ggml-vocab-llama-spm.gguf
# llama-cpp-python ships as an sdist: a CPU-only, portable (AVX2) build of llama.cpp, ~15-30 min
# on 2 cores the first time; pip's wheel cache makes every later install a copy.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
export TORCH_COMPILE_DISABLE := 1
export TOKENIZERS_PARALLELISM := false
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup setup-scale demo demo-oracle demo-lm models test lint docs bench bench-full clean

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
# llama-server and GGUF converters.  Without it the Ray and llama.cpp-server tests are skipped with a reason; CI
# installs it (.ci/run).
setup-scale: $(SCALE_STAMP) $(LLAMA_SERVER) $(LLAMA_CPP_CONVERTER)

$(SCALE_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(BIN)/python -m pip install -q -c requirements/constraints.txt -e ".[scale]"
	touch $(SCALE_STAMP)

# $(call llama-sdist,BUILD): the pinned llama-cpp-python sdist, unpacked under BUILD (from the
# package index; no other download).
define llama-sdist
	rm -rf $(1) && mkdir -p $(1)
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: -c requirements/constraints.txt \
		-d $(1) llama-cpp-python
	tar xzf $(1)/llama_cpp_python-*.tar.gz -C $(1)
endef

# $(call keep-llama-cpp-py,BUILD): copy $(LLAMA_CPP_KEEP) of BUILD's llama.cpp to $(LLAMA_CPP_PY)
# (mtimes of now, so the converter is newer than constraints.txt).
define keep-llama-cpp-py
	rm -rf $(LLAMA_CPP_PY) && mkdir -p $(LLAMA_CPP_PY)
	cd $(1)/llama_cpp_python-*/vendor/llama.cpp && tar -cf ../../../keep.tar $(LLAMA_CPP_KEEP)
	tar -xmf $(1)/keep.tar -C $(LLAMA_CPP_PY)
endef

# llama-server (engine "llama-server", docs/scale.md) from the llama.cpp that llama-cpp-python's
# sdist vendors: a static, CPU-only, portable build of that one target, ~10-15 min on 2 cores,
# into .venv/bin; the converters are kept too, the rest of the tree is deleted.
$(LLAMA_SERVER): requirements/constraints.txt | $(STAMP)
	$(call llama-sdist,$(LLAMA_BUILD))
	cmake -S $(LLAMA_BUILD)/llama_cpp_python-*/vendor/llama.cpp -B $(LLAMA_BUILD)/build -G Ninja \
		-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $(LLAMA_CMAKE_ARGS) \
		-DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
		-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >$(LLAMA_BUILD)/cmake.log
	ninja -C $(LLAMA_BUILD)/build -j2 llama-server >$(LLAMA_BUILD)/ninja.log
	install -m 755 $(LLAMA_BUILD)/build/bin/llama-server $(LLAMA_SERVER)
	$(call keep-llama-cpp-py,$(LLAMA_BUILD))
	rm -rf $(LLAMA_BUILD)

# Only the converters (a .venv whose llama-server was built before they were kept): the same
# sdist, no build (a minute).
$(LLAMA_CPP_CONVERTER): requirements/constraints.txt | $(STAMP)
	$(call llama-sdist,.build/llama-cpp-py)
	$(call keep-llama-cpp-py,.build/llama-cpp-py)
	rm -rf .build/llama-cpp-py

# The main job: NeSyFS on a real TextWorldExpress game (coin, dev seed 10000) with the embedded
# SmolLM2-135M as its fast module (ReAct-style action proposal) checked by reflection.  When
# reflection turns down K=1 proposal (the paper's K is 3; K=1 is this demo's choice), or the fast
# action would repeat a step already taken at the same observation (loop_guard), the slow thinker
# takes over for that step with the LEARNED world model shipped in models/trained/
# (twx-coin-world-model: a LoRA adapter on SmolLM2 trained on coin transitions; NO ORACLE: the
# planner never touches the game), every admissible action imagined once (N = |A|, H = 1), the
# best imagined outcome taken under the task+novelty twist.  Each planner step prints what the
# world model imagined for each action.  Step records land in runs/demo/ (`smcplan report`).
# make demo-oracle: the slow thinker alone with the oracle (per-particle clones of the game).
# make demo-lm: NeSyFS with the untrained SmolLM2 as its world model (no oracle); it loops.
DEMO_ARGS ?= --env twx:coin --agent nesyfs --seeds 10000 --split dev --max-steps 25 \
	--agent-arg world_model=learned --agent-arg world_model_path=twx-coin-world-model \
	--agent-arg progress=task+novelty --agent-arg planner.proposal=uniform \
	--agent-arg particles_per_action=1 --agent-arg horizon=1 --agent-arg choice=max_weight \
	--agent-arg observation_temperature=0 --agent-arg loop_guard=true --agent-arg max_rejections=1
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

# Rebuild every trained artifact of models/trained/ from scratch (scripts/build_models.py):
# collect, train, measure on held-out seeds, ship with its manifest.  Resumable: rerun after a
# stop and it goes on from the last finished command or trainer checkpoint (runs/models/).
# About 1 h on 2 cores; CI does not run it (tests/models checks the shipped artifacts).
models: setup
	$(BIN)/python scripts/build_models.py

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
