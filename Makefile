# cmax: every target installs what is missing first (scripts/setup.sh, idempotent).
#   make run    build the release binary and run `cmax run` on this machine
#   make test   unit + integration tests (debug, -Werror), unit tests under ASan+UBSan,
#               a fuzz smoke run, and the format check
#   make build  the release binary at build/release/bin/cmax
#   make bench  benchmarks; figures go to docs/PERFORMANCE.md
#   make lint   clang-format check and clang-tidy (naming rules)
SHELL := /bin/bash
JOBS ?= 2
BIN := build/release/bin/cmax
FUZZ_SECONDS ?= 20
SOURCES = $(shell git ls-files '*.cpp' '*.hpp' 2>/dev/null)

.PHONY: all setup build run test tree-before tree-check test-debug test-asan fuzz bench lint format format-check tidy clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	cmake --preset release
	cmake --build --preset release

# cmax run exits 1 when a check failed and 3 when one could not be read: the evaluation ran,
# and its report says which; any other failure is make's too.
# Where there is a cluster (a Slurm controller that answers, NVIDIA GPUs, Kubernetes), cmax run
# evaluates it; elsewhere cmax run --lab evaluates a simulated provider (it needs root and
# Slurm's daemons: without them, it says what it needs, and this machine alone is evaluated).
# Either way the last lines are the tier and where the report is.
run: build
	@if [ -e /dev/nvidiactl ] || [ -n "$$KUBERNETES_SERVICE_HOST" ] || \
	    { command -v scontrol >/dev/null 2>&1 && timeout 5 scontrol ping >/dev/null 2>&1; }; then \
	  $(BIN) run; rc=$$?; \
	elif [ "$$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null 2>&1; then \
	  $(BIN) run --lab; \
	  echo "make run: no lab here (above: what it needs); evaluating this machine alone" >&2; \
	  $(BIN) run; rc=$$?; \
	else \
	  $(BIN) run --lab; rc=$$?; \
	fi; \
	case $$rc in \
	  0) ;; \
	  1|3) echo "make run: cmax run exited $$rc (1: a check failed, 3: a check could not be read or the run could not finish; see above)" >&2 ;; \
	  *) exit $$rc ;; \
	esac

# The tree is looked at before and after (in that order, also under make -j): the run itself
# checks that no test left a file in the source tree.
test: setup
	@$(MAKE) --no-print-directory tree-before
	@$(MAKE) --no-print-directory format-check tidy test-debug test-asan fuzz
	@$(MAKE) --no-print-directory tree-check
	@echo "make test: all passed"

# The free disk is printed first: a full disk shows up later only as a linker's "No space left
# on device" (docs/PERFORMANCE.md says what the three trees take).
tree-before:
	@mkdir -p build && git status --porcelain --ignored >build/tree-before.txt
	@df -Pk build | awk 'NR == 2 { printf "make test: %.1f GB free for build/\n", $$4 / 1048576 }'

tree-check:
	@[ -f build/tree-before.txt ] || { echo "tree-check: run make tree-before first" >&2; exit 1; }
	@git status --porcelain --ignored >build/tree-after.txt; \
	  if ! diff -u build/tree-before.txt build/tree-after.txt; then \
	    echo "make test: the tests changed or left files in the source tree (above)" >&2; exit 1; fi; \
	  echo "tree: clean"

test-debug:
	cmake --preset debug
	cmake --build --preset debug
	ctest --preset debug --parallel $(JOBS)

test-asan:
	cmake --preset asan
	cmake --build --preset asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --preset asan-unit --parallel $(JOBS)

# A short libFuzzer run of every fuzz target; a crash fails the build and leaves crash-* files.
fuzz:
	cmake --preset fuzz
	cmake --build --preset fuzz --target version_fuzz text_fuzz kmsg_fuzz sse_fuzz chunk_fuzz \
	  http_response_fuzz http_request_fuzz audit_json_fuzz rate_fuzz plan_fuzz nccl_tests_fuzz \
	  train_log_fuzz kineto_trace_fuzz active_fuzz
	mkdir -p build/fuzz/corpus/version build/fuzz/corpus/text build/fuzz/corpus/kmsg \
	  build/fuzz/corpus/sse build/fuzz/corpus/chunk build/fuzz/corpus/http_response \
	  build/fuzz/corpus/http_request build/fuzz/corpus/audit_json build/fuzz/corpus/rate \
	  build/fuzz/corpus/plan build/fuzz/corpus/nccl_tests build/fuzz/corpus/train_log \
	  build/fuzz/corpus/kineto_trace build/fuzz/corpus/active
	build/fuzz/bin/version_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/version tests/fuzz/seeds/version
	build/fuzz/bin/text_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/text tests/fuzz/seeds/text
	build/fuzz/bin/kmsg_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/kmsg tests/fuzz/seeds/kmsg
	build/fuzz/bin/sse_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/sse tests/fuzz/seeds/sse
	build/fuzz/bin/chunk_fuzz -dict=tests/fuzz/json.dict -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/chunk tests/fuzz/seeds/chunk
	build/fuzz/bin/http_response_fuzz -dict=tests/fuzz/http.dict -max_total_time=$(FUZZ_SECONDS) \
	  -print_final_stats=1 build/fuzz/corpus/http_response tests/fuzz/seeds/http_response
	build/fuzz/bin/http_request_fuzz -dict=tests/fuzz/http.dict -max_total_time=$(FUZZ_SECONDS) \
	  -print_final_stats=1 build/fuzz/corpus/http_request tests/fuzz/seeds/http_request
	build/fuzz/bin/audit_json_fuzz -dict=tests/fuzz/json.dict -max_total_time=$(FUZZ_SECONDS) \
	  -print_final_stats=1 build/fuzz/corpus/audit_json tests/fuzz/seeds/audit_json
	build/fuzz/bin/rate_fuzz -dict=tests/fuzz/json.dict -max_total_time=$(FUZZ_SECONDS) \
	  -print_final_stats=1 build/fuzz/corpus/rate tests/fuzz/seeds/rate
	build/fuzz/bin/plan_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/plan tests/fuzz/seeds/plan
	build/fuzz/bin/nccl_tests_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/nccl_tests tests/fuzz/seeds/nccl_tests
	build/fuzz/bin/train_log_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  build/fuzz/corpus/train_log tests/fuzz/seeds/train_log
	build/fuzz/bin/kineto_trace_fuzz -dict=tests/fuzz/json.dict -max_total_time=$(FUZZ_SECONDS) \
	  -print_final_stats=1 build/fuzz/corpus/kineto_trace tests/fuzz/seeds/kineto_trace
	build/fuzz/bin/active_fuzz -dict=tests/fuzz/json.dict -max_total_time=$(FUZZ_SECONDS) \
	  -print_final_stats=1 build/fuzz/corpus/active tests/fuzz/seeds/active

bench: build
	build/release/bin/store_bench --benchmark_min_time=1
	build/release/bin/report_bench --benchmark_min_time=1
	build/release/bin/rate_bench
	build/release/bin/policy_bench --benchmark_min_time=1
	build/release/bin/stream_bench --benchmark_min_time=1
	bash bench/run_wall.sh
	bash bench/lab_up.sh
	bash bench/lab_run.sh
	bash bench/agent.sh
	bash bench/remediate_lab.sh
	bash bench/reliability_lab.sh
	bash bench/endpoint_streams.sh
	if [ -n "$$VLLM_DIR" ]; then bash bench/endpoint_vs_vllm.sh "$$VLLM_DIR"; else echo "bench: VLLM_DIR (vLLM's endpoint_request_func.py) not set, skipping the side-by-side (see bench/endpoint_vs_vllm.sh)"; fi
	if [ -x /opt/nhc/sbin/nhc ]; then bash bench/health_vs_nhc.sh; else echo "bench: no NHC in /opt/nhc, skipping the side-by-side (see bench/health_vs_nhc.sh)"; fi

lint: format-check tidy

format:
	clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run --Werror $(SOURCES) && echo "format: clean"

tidy:
	cmake --preset debug
	@git ls-files 'src/*.cpp' | xargs -P $(JOBS) -n 4 clang-tidy -p build/debug --quiet --extra-arg=-Wno-unknown-warning-option \
	  --warnings-as-errors='*' 2>&1 | grep -v '^[0-9]* warnings generated' ; \
	  test $${PIPESTATUS[1]} -eq 0 && echo "tidy: clean"

clean:
	rm -rf build
