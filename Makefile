# poolkit: the front door over CMake (Ninja).
#
#   make               release build (gcc) in build/
#   make test          everything CI checks; see the stages below
#   make bench         the peers installed (scripts/lab-setup.sh), release
#                      build, then bench/run.sh build/
#   make install       install build/ under PREFIX (default /usr/local; DESTDIR works),
#                      with libpoolkit-objc.a where GNUstep is installed
#   make lab           lab/run.sh build: installs the peers, builds and runs the
#                      lab, writes lab-report/ (LAB_ARGS: pk-lab run arguments)
#   make fuzz          a longer fuzzing run (FUZZ_SECONDS, default 900)
#   make docs          the reference (Doxygen) in build/docs/html; fails on any
#                      Doxygen warning (scripts/docs.sh)
#   make clean         remove every build directory made here
#
# `make test` runs these stages in order and stops at the first failure:
#   setup     scripts/setup.sh: installs missing tools (nothing when all are there)
#   bare      the whole tree configured and built as on a fresh machine: none
#             of the lab's optional packages found (scripts/bare-build.sh)
#   gcc       release build with gcc in build/, ctest
#   clang     release build with clang in build-clang/, ctest
#   asan      ASan+UBSan build (clang) in build-asan/, ctest
#   tsan      TSan build (gcc) in build-tsan/, ctest
#   valgrind  every test program of build/ under valgrind memcheck
#             (ctest -L memcheck; programs labeled novalgrind are left out)
#   cpython   a subset of CPython's regression tests under build/'s
#             libpoolkit-malloc.so, default and hardened, against the same
#             tests without it (scripts/cpython-tests.py; about 4 minutes)
#   install   install build/ into a scratch prefix and build a consumer with
#             find_package and with pkg-config (ctest -L install), and again
#             with one library installed (the static or the shared one)
#   package   the library alone, with a C compiler only: CPack's libpoolkit0
#             and libpoolkit-dev Debian packages and the Conan recipe
#             (packaging/conan), each installed into a scratch root and a
#             consumer built against it (scripts/package-test.sh)
#   docs      the reference built by Doxygen with no warning (make docs)
#   gate      bench/gate.sh build/ (instruction-count gates), if present
#   objc      GNUstep (lab/objc/setup.sh) and PKObject's tests
#   tools     the library built for Valgrind and for ASan catches seeded bugs
#   fuzz      a bounded libFuzzer run over the whole C API (FUZZ_SECONDS, 60)
# Each ctest stage then lists every skipped test with its reason; a skip on
# the gcc stage that tests/skips.txt does not document fails it. Every build
# of make test has -Werror (POOLKIT_WERROR=ON); a plain `make` has not.
# One stage alone: make test-clang. A subset: make test STAGES="gcc asan".
#
# Variables: PREFIX, CTEST_JOBS (2), CMAKE_ARGS (extra -D options for every
# configure), BUILD (build), LAB_ARGS (arguments for pk-lab run), FUZZ_SECONDS.

SHELL := /bin/bash
.DEFAULT_GOAL := all

BUILD       ?= build
PREFIX      ?= /usr/local
CTEST_JOBS  ?= 2
CMAKE       ?= cmake
CTEST       ?= ctest
CMAKE_ARGS  ?=
LAB_ARGS    ?=
STAGES      ?= bare gcc clang asan tsan valgrind cpython install package docs gate objc tools fuzz

BUILD_CLANG := $(BUILD)-clang
BUILD_ASAN  := $(BUILD)-asan
BUILD_TSAN  := $(BUILD)-tsan

# The sanitizers' runtimes want a fixed address-space layout on kernels with
# high mmap randomization; run their tests with ASLR off where allowed.
NORANDOM := $(shell setarch $$(uname -m) -R true >/dev/null 2>&1 && echo "setarch $$(uname -m) -R")

SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
           TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# Warnings are errors in make test's builds (and in the builds its stages
# depend on), not in a user's `make`.
WERROR ?=
test-%: WERROR = -DPOOLKIT_WERROR=ON

# $(call configure,DIR,CC,CXX,BUILD_TYPE,OPTIONS)
configure = $(CMAKE) -S . -B $(1) -G Ninja -DCMAKE_C_COMPILER=$(2) -DCMAKE_CXX_COMPILER=$(3) \
            -DCMAKE_BUILD_TYPE=$(4) $(5) $(WERROR) $(CMAKE_ARGS)
# $(call ctest,DIR,ARGS,STAGE): the tests, then every test that skipped with
# its reason (scripts/ctest-skips.py); a skip tests/skips.txt does not
# document fails the gcc stage.
ctest = $(CTEST) --test-dir $(1) --output-on-failure --no-tests=error -j$(CTEST_JOBS) \
        --output-junit $(abspath $(1))/ctest-$(3).xml $(2) && \
        python3 scripts/ctest-skips.py $(3) $(abspath $(1))/ctest-$(3).xml

SAN_OPTIONS := -DPOOLKIT_BUILD_BENCH=OFF -DPOOLKIT_BUILD_LAB=OFF -DPOOLKIT_BUILD_EXAMPLES=OFF \
               -DPOOLKIT_REQUIRE_GTEST=ON "-DCMAKE_C_FLAGS_DEBUG=-g -O1" "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1"

.PHONY: all build build-gcc build-clang build-asan build-tsan test bench install lab docs clean help \
        test-setup test-bare test-gcc test-clang test-asan test-tsan test-valgrind test-cpython test-install test-package test-docs test-gate \
        test-objc test-tools test-fuzz fuzz

all: build

build build-gcc:
	$(call configure,$(BUILD),gcc,g++,Release,-DPOOLKIT_MEMCHECK=ON)
	$(CMAKE) --build $(BUILD)

build-clang:
	$(call configure,$(BUILD_CLANG),clang,clang++,Release,-DPOOLKIT_REQUIRE_GTEST=ON)
	$(CMAKE) --build $(BUILD_CLANG)

build-asan:
	$(call configure,$(BUILD_ASAN),clang,clang++,Debug,-DPOOLKIT_SANITIZE=address$(,)undefined $(SAN_OPTIONS))
	$(CMAKE) --build $(BUILD_ASAN)

build-tsan:
	$(call configure,$(BUILD_TSAN),gcc,g++,Debug,-DPOOLKIT_SANITIZE=thread $(SAN_OPTIONS))
	$(CMAKE) --build $(BUILD_TSAN)

, := ,

test:
	@start=$$(date +%s); done_stages=""; \
	for stage in setup $(STAGES); do \
	    t0=$$(date +%s); \
	    echo "==> make test: stage $$stage"; \
	    if ! $(MAKE) --no-print-directory test-$$stage; then \
	        echo "make test: FAILED in stage $$stage after $$(( $$(date +%s) - start ))s (passed:$${done_stages:- none})"; \
	        exit 1; \
	    fi; \
	    done_stages="$$done_stages $$stage $$(( $$(date +%s) - t0 ))s"; \
	done; \
	echo "make test: PASSED in $$(( $$(date +%s) - start ))s:$$done_stages"

test-setup:
	bash scripts/setup.sh

test-bare:
	bash scripts/bare-build.sh $(BUILD)-bare -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ $(WERROR) $(CMAKE_ARGS)

test-gcc:
	$(call configure,$(BUILD),gcc,g++,Release,-DPOOLKIT_MEMCHECK=ON -DPOOLKIT_REQUIRE_GTEST=ON)
	$(CMAKE) --build $(BUILD)
	$(call ctest,$(BUILD),-LE 'memcheck|install',gcc)

test-clang: build-clang
	$(call ctest,$(BUILD_CLANG),,clang)

test-asan: build-asan
	$(SAN_ENV) $(NORANDOM) $(call ctest,$(BUILD_ASAN),,asan)

test-tsan: build-tsan
	$(SAN_ENV) $(NORANDOM) $(call ctest,$(BUILD_TSAN),,tsan)

test-valgrind: build
	$(call ctest,$(BUILD),-L memcheck,valgrind)

test-cpython: build
	python3 scripts/cpython-tests.py $(BUILD)/libpoolkit-malloc.so

test-install: build
	$(call ctest,$(BUILD),-L install,install)

test-package:
	bash scripts/package-test.sh $(abspath $(BUILD))-package

# PKObject's own tests under GNUstep (lab/objc/setup.sh installs it as root).
test-objc: build
	bash lab/objc/setup.sh
	bash bindings/objc/test.sh $(abspath $(BUILD))

# The library built for Valgrind and for ASan, each made to catch seeded bugs.
test-tools:
	@if [ -f scripts/tool-builds.sh ]; then \
	    echo "bash scripts/tool-builds.sh $(abspath $(BUILD))-tools"; \
	    bash scripts/tool-builds.sh $(abspath $(BUILD))-tools; \
	else \
	    echo "tools: scripts/tool-builds.sh not present, skipped"; \
	fi

# A bounded fuzzing run (FUZZ_SECONDS, 60 by default); `make fuzz` runs longer.
FUZZ_SECONDS ?= 60
test-fuzz:
	@if [ -f scripts/fuzz.sh ]; then \
	    echo "bash scripts/fuzz.sh $(FUZZ_SECONDS) $(abspath $(BUILD))-fuzz"; \
	    bash scripts/fuzz.sh $(FUZZ_SECONDS) $(abspath $(BUILD))-fuzz; \
	else \
	    echo "fuzz: scripts/fuzz.sh not present, skipped"; \
	fi

fuzz:
	$(MAKE) --no-print-directory test-fuzz FUZZ_SECONDS=$${FUZZ_SECONDS:-900}

test-gate: build
	@if [ -f bench/gate.sh ]; then \
	    echo "bash bench/gate.sh $(abspath $(BUILD))"; \
	    bash bench/gate.sh $(abspath $(BUILD)); \
	else \
	    echo "gate: bench/gate.sh not present, skipped"; \
	fi

# The peers first (scripts/lab-setup.sh, without the lab's GNUstep and Zig),
# so that a fresh machine's build finds them and its targets have figures.
bench:
	@POOLKIT_LAB_SETUP_CONTENDERS=0 bash scripts/lab-setup.sh || echo "bench: set-up incomplete (see above); going on"
	@$(MAKE) --no-print-directory build
	@if [ -f bench/run.sh ]; then \
	    echo "bash bench/run.sh $(abspath $(BUILD))"; \
	    bash bench/run.sh $(abspath $(BUILD)); \
	else \
	    echo "bench: bench/run.sh not present yet"; \
	fi

# With GNUstep (gnustep-config) present, the Objective-C binding is built
# first into $(BUILD)/objc, and libpoolkit-objc.a is installed with the rest;
# without it, PKObject.h alone.
install: build
	@if command -v gnustep-config >/dev/null 2>&1; then \
	    echo "bash bindings/objc/build.sh $(BUILD)/objc $(BUILD)"; \
	    bash bindings/objc/build.sh $(BUILD)/objc $(BUILD); \
	else \
	    echo "install: GNUstep not found: PKObject.h is installed, libpoolkit-objc is not"; \
	fi
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

# Set-up (peers, GNUstep, Zig, the report's virtual environment), build,
# every experiment, and the report in lab-report/.
lab:
	bash lab/run.sh $(abspath $(BUILD)) $(LAB_ARGS)

# Doxygen from the public headers, docs/mainpage.md and the examples; any
# warning (an undocumented public name, a bad reference) fails it.
docs:
	bash scripts/docs.sh $(BUILD)

test-docs: docs

clean:
	rm -rf $(BUILD) $(BUILD)-bare $(BUILD_CLANG) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD)-tools $(BUILD)-fuzz \
	       $(BUILD)-package

help:
	@sed -n '1,/^$$/s/^# \{0,1\}//p' Makefile
