# The README's commands. Each target installs what it needs first (scripts/install-deps.sh).
.PHONY: deps build run test test-release test-debug bench clean

JOBS ?= $(shell nproc)

deps:
	@scripts/install-deps.sh

build: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

# The main job: allocate GPUs for the shipped example snapshot and print a readable table.
run: build
	@./build/release/src/gavel/cli/gavel allocate --policy max_min_fairness_perf \
	  --snapshot examples/snapshot.json --format table

# Every test: the optimised build, then the unit tests again under ASan and UBSan.
test: test-release test-debug

test-release: build
	@ctest --preset release

test-debug: deps
	@cmake --preset debug >/dev/null
	@cmake --build --preset debug -j $(JOBS)
	@ctest --preset debug -LE slow

bench: build
	@bench/run.sh

clean:
	rm -rf build
