# The two set-up commands of README.md, plus developer targets.
#   make run    bootstrap, Release build, synthesize the demo model, show the memory story on it
#   make test   bootstrap, Debug build, unit + integration tests (and a short soak)
# Both are safe to rerun: bootstrap and the builds are cached (ccache, CMake, .deps/).

JOBS       ?= 2
BUILD_REL  := build/release
BUILD_DBG  := build/debug
BUILD_SAN  := build/asan
DEMO_DIR   := models/demo
MINILM_DIR := models/minilm
PYTHON3    ?= /usr/bin/python3
CMAKE_GEN  := -G Ninja
CTEST_ARGS ?=

.PHONY: run test bootstrap build build-debug demo-model demo-models install sanitize-test tsan bench fuzz soak deploy-test format format-check thread-safety clean \
        bench-deps bench-llamacpp bench-llamacpp-check bench-serve

# Reruns when the script or the pinned test clients change (a stamp, so that an existing .deps/
# from an older script still gets the new steps).
bootstrap: .deps/bootstrap.stamp
.deps/bootstrap.stamp: scripts/bootstrap tests/http/package-lock.json
	scripts/bootstrap
	touch $@

build: bootstrap
	cmake -S . -B $(BUILD_REL) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DEBB_BUILD_TESTS=OFF
	cmake --build $(BUILD_REL) -j $(JOBS)

build-debug: bootstrap
	cmake -S . -B $(BUILD_DBG) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DEBB_WERROR=ON
	cmake --build $(BUILD_DBG) -j $(JOBS)

demo-model: $(DEMO_DIR)/genai_config.json
$(DEMO_DIR)/genai_config.json: tools/synth_model.py
	$(PYTHON3) tools/synth_model.py --family llama --preset tiny --seed 0 --out $(DEMO_DIR)

# The README tour's other model folder: models/minilm, a tiny BERT-style encoder (random weights,
# the folder layout of a sentence-transformers model) for `ebb embed`, beside models/demo.
demo-models: demo-model $(MINILM_DIR)/genai_config.json
$(MINILM_DIR)/genai_config.json: tools/synth_model.py
	$(PYTHON3) tools/synth_model.py --family bert --preset tiny --seed 0 --out $(MINILM_DIR)

# The memory story (ebb demo, docs/memory.md#the-first-run): the seed loop beside a plain ORT loop,
# RSS per request as a chart (and $(BUILD_REL)/ebb-memory.svg), a Tier 2 shrink, one generation.
run: build demo-model
	$(BUILD_REL)/src/cli/ebb --version
	$(BUILD_REL)/src/cli/ebb demo $(DEMO_DIR) --plot $(BUILD_REL)/ebb-memory.svg

# Installs the Release build under PREFIX: bin/ebb, lib/libebb.so.0.1.0 (SONAME libebb.so.0) and
# ONNX Runtime, include/ebb/, lib/pkgconfig/ebb.pc, lib/cmake/ebb/ (docs/c_api.md).
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD_REL) --prefix $(PREFIX)

test: build-debug
	cd $(BUILD_DBG) && ctest -L 'unit|integration' --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# ASan+UBSan build; unit and integration tests except those that bound RSS (ASan's quarantine
# holds freed memory, so RSS bounds do not apply; ASan reserves terabytes of address space, so a
# `ulimit -v` run cannot start): `make test` checks those. Leaks inside the
# prebuilt ONNX Runtime are suppressed (tests/lsan.supp). CI runs this when time allows.
SAN_EXCLUDE := KvLoop|RssAfterShrink|ShrinkArenaGivesBack|TwentyFailedLoadsLeakNothing|Unload\.|Soak\.|ItsOwnRecordsDoNotShowInTheRssSlope|ForcedUnload|UlimitV
sanitize-test: bootstrap
	cmake -S . -B $(BUILD_SAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DEBB_WERROR=ON \
	  -DEBB_SANITIZE=address,undefined
	cmake --build $(BUILD_SAN) -j $(JOBS)
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ctest -L 'unit|integration' -E '$(SAN_EXCLUDE)' \
	  --output-on-failure -j $(JOBS)

# ThreadSanitizer run of the concurrency and shrink tests. ONNX Runtime is prebuilt and not
# instrumented, so its internal synchronisation is invisible to TSan: accesses from it are ignored
# (ignore_noninstrumented_modules=1); without that, TSan reports races whose both sides are inside
# libonnxruntime (see docs/memory.md).
tsan: bootstrap
	cmake -S . -B build/tsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DEBB_SANITIZE=thread
	cmake --build build/tsan -j $(JOBS) --target integration_tests
	sh tools/make_test_models.sh build/tsan/test-models
	TSAN_OPTIONS=ignore_noninstrumented_modules=1 EBB_TEST_MODELS=build/tsan/test-models \
	  build/tsan/tests/integration/integration_tests --gtest_filter='Concurrency*:Tier2*'

# Clang's thread-safety analysis (-Wthread-safety -Werror=thread-safety; the annotations are in
# src/core/thread_annotations.h) over the Debug build's files, library and tests, that include
# the annotations (ninja's dependency records; every file when the tree is not built, or with
# TS_ARGS=--all): compile only (-fsyntax-only), nothing is linked or run. Run after make test.
# Needs clang++ (bootstrap installs it).
TS_ARGS ?=
thread-safety: bootstrap
	cmake -S . -B $(BUILD_DBG) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DEBB_WERROR=ON
	$(PYTHON3) tools/check_thread_safety.py $(BUILD_DBG) -j $(JOBS) $(TS_ARGS)

# Long soak tests (label soak): the 200-iteration create/destroy loop with 64 MiB of KV each.
soak: build-debug
	cd $(BUILD_DBG) && ctest -L soak --output-on-failure

# Three ebb serve instances behind HAProxy, run with deploy/'s unit command line and HAProxy
# configuration (label deploy, about a minute; docs/deploy.md#the-test): rolling restart, SIGKILL,
# SIGSTOP, gauges and promtool. Prints the figures (-V). Skips without haproxy (bootstrap installs it).
deploy-test: build-debug
	cd $(BUILD_DBG) && ctest -L deploy -V $(CTEST_ARGS)

# libFuzzer targets, each run for FUZZ_SECONDS on a working copy of its committed seed corpus
# (new inputs land in fuzz-out/, ignored; crashes fail the target).
FUZZ_SECONDS ?= 60
fuzz: bootstrap
	CC=clang CXX=clang++ cmake -S . -B build/fuzz $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug \
	  -DEBB_BUILD_FUZZ=ON -DEBB_BUILD_TESTS=OFF
	cmake --build build/fuzz -j $(JOBS) --target template_fuzz tokenizer_fuzz genai_config_fuzz \
	  options_fuzz openai_request_fuzz http_framing_fuzz json_schema_fuzz
	@set -e; for t in template tokenizer genai_config options openai_request http_framing json_schema; do \
	  mkdir -p fuzz-out/$$t; \
	  echo "=== fuzz $$t for $(FUZZ_SECONDS) s ==="; \
	  EBB_SHARED_DIR=$(CURDIR)/../shared build/fuzz/fuzz/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=10 -rss_limit_mb=4096 -artifact_prefix=fuzz-out/$$t- fuzz-out/$$t fuzz/corpus/$$t; \
	done

# Google Benchmark targets (Release). EBB_BENCH_MODEL picks the model (default: tiny test model).
bench: bootstrap
	cmake -S . -B build/bench $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DEBB_BUILD_BENCH=ON \
	  -DEBB_BUILD_TESTS=OFF
	cmake --build build/bench -j $(JOBS)
	@echo "run: build/bench/bench/decode_bench  (see docs/benchmarks.md)"

# ebb against llama.cpp on the same weights (docs/benchmarks.md). Not part of run/test/CI:
#   make bench-deps            scripts/bench_bootstrap: pinned llama.cpp libraries and headers (npm)
#   make bench-llamacpp        the Release build plus the probes (build/release/bench/llamacpp/)
#   make bench-llamacpp-check  the same-weights agreement test (tiny + small models, ~1 min)
# Then: $(PYTHON3) bench/vs_llamacpp.py --preset small --vocab 32000 --prompt-tokens 512 ...
bench-deps:
	scripts/bench_bootstrap

bench-llamacpp: bootstrap bench-deps
	cmake -S . -B $(BUILD_REL) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DEBB_BUILD_TESTS=OFF \
	  -DEBB_LLAMACPP_DIR=$(CURDIR)/.deps
	cmake --build $(BUILD_REL) -j $(JOBS) --target ebb ebb_probe llamacpp_probe membw matmul_probe \
	  ebb_ggml_matmul ebb_cpu_ops ggml_op_check

bench-llamacpp-check: bench-llamacpp
	$(PYTHON3) bench/vs_llamacpp.py --check --build-dir $(BUILD_REL)

# `ebb serve --parallel 4`: 4 concurrent `openai` chats against one (issue 40 done-when 3;
# docs/benchmarks.md). Not part of run/test/CI. The model is the phi-3.5-mini shape (int4, block
# 128, random weights; synthesized once into $(BENCH_PHI): 2.3 GB, ~3 min); the bench waits for
# its cache entry to be built, then alternates 5 rounds and fails when the median ratio is below
# EBB_BENCH_SERVE_MIN_RATIO (default 2.5; 0 only reports).
BENCH_PHI := models/bench-phi3.5-mini-int4
bench-serve: build $(BENCH_PHI)/synth_info.json
	EBB_BENCH_SERVE_CLI=$(BUILD_REL)/src/cli/ebb EBB_BENCH_SERVE_MODEL=$(CURDIR)/$(BENCH_PHI) \
	  node tests/http/serve_parallel.bench.mjs --parallel 4 --tokens 64 --rounds 5

# synth_info.json is the last file synth_model.py writes: an interrupted run is redone.
$(BENCH_PHI)/synth_info.json: tools/synth_model.py
	$(PYTHON3) tools/synth_model.py --family phi3 --preset phi-3.5-mini --precision int4 \
	  --vocab 32064 --seed 0 --out $(BENCH_PHI)

# clang-format (.clang-format, Debian 12's clang-format 14) over src/ include/ tests/ python/src/
# fuzz/ bench/: `format` rewrites the files, `format-check` lists those that differ and fails
# (CI runs it first: seconds).
format:
	tools/check_format.sh --fix

format-check:
	tools/check_format.sh

clean:
	rm -rf build
