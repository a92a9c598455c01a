# The two commands of the README: `make serve` and `make test`. Both install what is missing first
# (deploy/install-deps.sh is idempotent), then configure and build with CMake + Ninja.
BUILD ?= build
JOBS ?= $(shell nproc)
MODEL_DIR ?= models/demo

FUZZ_SECONDS ?= 60

.PHONY: deps build test fuzz sanitize serve format clean

deps:
	bash deploy/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

# libFuzzer targets (tests/fuzz), built with Clang + ASan + UBSan in build-asan, each run
# FUZZ_SECONDS from its seed corpus; CI runs this after `make sanitize` (the same build).
fuzz: deps
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# The C++ tests under ASan+UBSan (build-asan) and the scheduler's under TSan (build-tsan):
# tests/sanitize/run.sh says which and why; CI runs this after `make test`.
sanitize: deps
	bash tests/sanitize/run.sh address
	bash tests/sanitize/run.sh thread

# Serves models/demo; where that folder is missing (a trimmed checkout), a random-weight model
# stands in (it answers nonsense, but every path of the server works).
serve: build
	@if [ ! -f $(MODEL_DIR)/config.json ]; then \
	  echo "make serve: $(MODEL_DIR) not found; serving a RANDOM-WEIGHT stand-in model from $(BUILD)/random-model"; \
	  [ -f $(BUILD)/random-model/config.json ] || $(BUILD)/tools/longqa-random-model --out=$(BUILD)/random-model; \
	  $(BUILD)/server/longqa-server --model_dir=$(BUILD)/random-model; \
	else \
	  $(BUILD)/server/longqa-server --model_dir=$(MODEL_DIR); \
	fi

format:
	git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
