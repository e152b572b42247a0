# SPDX-License-Identifier: GPL-2.0
#
# Top-level entry points. Kernel modules go through Kbuild against Debian's
# linux-headers for the 6.1 kernel; the C++ parts (emulator, lab, tools) go
# through CMake into build/. `make help` lists the targets.

# The newest Debian 6.1 kernel that has headers installed, unless given.
KVER ?= $(shell ls -d /lib/modules/6.1.*/build 2>/dev/null | sort -V | tail -1 | cut -d/ -f4)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= $(CURDIR)/build
CACHE ?= $(or $(IBSTACK_CACHE),$(HOME)/.cache/ibstack)
JOBS ?= $(shell nproc)
CTEST_ARGS ?=
# The sanitizer build (clang, ASan+UBSan, libFuzzer): emulator only.
ASAN_BUILD ?= $(CURDIR)/build-asan
# Seconds each fuzz target runs: 20 in check-fuzz, 600 in make fuzz.
FUZZ_SECONDS ?= $(if $(filter fuzz,$(MAKECMDGOALS)),600,20)

export IBSTACK_CACHE := $(CACHE)

# C and C++ objects go through ccache, kept in the cache directory, so a fresh
# clone (as CI has) rebuilds the emulator and its sanitized build quickly.
# Paths under the clone are hashed relative to it.
CCACHE := $(shell command -v ccache 2>/dev/null)
export CCACHE_DIR := $(CACHE)/ccache
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
export CCACHE_MAXSIZE := 4G
LAUNCHER = $(if $(CCACHE),-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Kbuild's compiles too: Debian's headers put ccache in front of gcc-12 when
# DEBIAN_KERNEL_USE_CCACHE is set; the debug kernel's tree takes CC.
KBUILD_CCACHE = $(if $(CCACHE),DEBIAN_KERNEL_USE_CCACHE=1)
KBUILD_CCACHE_DEBUG = $(if $(CCACHE),CC="ccache gcc")
SHELL := /bin/bash

.PHONY: all modules test-modules modules_install cpp qemu deps check check-unit bench-scale \
	check-vm check-lint check-checkpatch check-sparse check-kunit check-tests \
	checkpatch demo clean help asan check-asan check-fuzz fuzz \
	debug-kernel modules-debug modules-debug-broken modules-debug-locked \
	modules-debug-broken-locked reload-campaign

all: modules test-modules cpp

help:
	@echo "make                  build kernel modules and the C++ parts"
	@echo "make modules          kernel modules (C=2 for sparse, W=1 for extra warnings)"
	@echo "make test-modules     the test modules of tests/kmod (never installed)"
	@echo "make modules_install  install into /lib/modules/\$$KVER/updates and run depmod"
	@echo "make checkpatch       checkpatch --strict on our kernel sources"
	@echo "make qemu             build (or fetch from cache) QEMU 7.2 with the HCA shim"
	@echo "make debug-kernel     build (or fetch from cache) the debug guest kernel"
	@echo "make modules-debug    our modules and the lane canary against the debug kernel (and modules-debug-broken)"
	@echo "make modules-debug-broken  the same with the MAD agent lifetime fix undone (test only)"
	@echo "make check-kunit      KUnit suites on UML"
	@echo "make check            install deps, build everything, run all tests"
	@echo "make check-asan       the emulator's unit tests under ASan+UBSan (build-asan)"
	@echo "make check-fuzz       each fuzz target for FUZZ_SECONDS (default 20) s"
	@echo "make fuzz             a longer campaign: FUZZ_SECONDS=600 [FUZZ_TARGETS=...]"
	@echo "make bench-scale      OpenSM's sweep of fattree:1000 on our fabric and on ibsim: the ratio"
	@echo "make reload-campaign  vm.OursReload for RELOAD_CYCLES (default 500) load/unload cycles"
	@echo "make demo             boot a guest on the emulated HCA and show it"

# --- kernel modules --------------------------------------------------------
# C=, W=, V= given on our command line reach Kbuild through MAKEFLAGS.
# The built .ko files are also collected into $(BUILD)/modules (ours in
# ibstack/, the test modules in tests/), the directory the VM tests of our
# stack hand to the lab (iblab --modules, which takes .ko files at any depth).
MODULES_DIR = $(BUILD)/modules
# Kbuild compiles with its cwd in the kernel tree and names our sources by
# the M= path, which ccache hashes: M= is a symlink of the cache pointed at
# this tree (under a lock, for the build's length), the same path in every
# clone, so a fresh clone's objects hit. The objects stay in this tree.
KBUILD_STOCK = $(CACHE)/kbuild-stock
kbuild_stock = mkdir -p $(CACHE) && flock $(KBUILD_STOCK).lock sh -c \
	'ln -sfn $(CURDIR) $(KBUILD_STOCK) && $(MAKE) -C $(KDIR) M=$(KBUILD_STOCK)$(1) $(KBUILD_CCACHE) $(2)'

modules:
	@test -d "$(KDIR)" || { echo "no kernel headers at $(KDIR): run .ci/deps"; exit 1; }
	+$(call kbuild_stock,,modules)
	@rm -rf $(MODULES_DIR)/ibstack && mkdir -p $(MODULES_DIR)/ibstack && \
	  find drivers -name '*.ko' -exec cp {} $(MODULES_DIR)/ibstack/ \; && \
	  echo "modules: $$(ls $(MODULES_DIR)/ibstack | tr '\n' ' ')-> $(MODULES_DIR)/ibstack"

# The test modules (tests/kmod) link against our modules' symbols. They go
# into $(MODULES_DIR) beside ours, for the lab, but are not installed.
test-modules: modules
	+$(call kbuild_stock,/tests/kmod,KBUILD_EXTRA_SYMBOLS=$(KBUILD_STOCK)/Module.symvers modules)
	@rm -rf $(MODULES_DIR)/tests && mkdir -p $(MODULES_DIR)/tests && \
	  find tests/kmod -name '*.ko' -exec cp {} $(MODULES_DIR)/tests/ \; && \
	  echo "test-modules: $$(ls $(MODULES_DIR)/tests | tr '\n' ' ')-> $(MODULES_DIR)/tests"

modules_install: modules
	+$(call kbuild_stock,,INSTALL_MOD_DIR=updates modules_install)
	depmod -a $(KVER)

# Our kernel sources: everything C under drivers/ and include/rdma, but not
# the *.mod.c files that modpost generates.
KSRC = $(shell find drivers include tests/kmod tests/kunit -name '*.[ch]' ! -name '*.mod.c' 2>/dev/null | sort)
CHECKPATCH_DIR = $(CACHE)/checkpatch-$(KVER)

$(CHECKPATCH_DIR)/scripts/checkpatch.pl:
	@mkdir -p $(CHECKPATCH_DIR).tmp
	tar -C $(CHECKPATCH_DIR).tmp --strip-components=1 -xf $(firstword $(wildcard /usr/src/linux-source-6.1.tar.*)) \
		linux-source-6.1/scripts/checkpatch.pl linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	rm -rf $(CHECKPATCH_DIR) && mv $(CHECKPATCH_DIR).tmp $(CHECKPATCH_DIR)

checkpatch: $(CHECKPATCH_DIR)/scripts/checkpatch.pl
	@if [ -z "$(KSRC)" ]; then echo "checkpatch: no kernel sources yet"; else \
	  printf '%s\n' $(KSRC) | xargs -P $(JOBS) -n 16 \
	    $(CHECKPATCH_DIR)/scripts/checkpatch.pl --strict --no-tree --terse \
	    --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG -f; fi

# --- C++ -------------------------------------------------------------------
$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S $(CURDIR) -B $(BUILD) -G Ninja $(LAUNCHER) -DIBSTACK_QEMU=$(BUILD)/qemu/qemu-system-x86_64

cpp: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# QEMU is cached outside the tree, keyed by its inputs; build/qemu points at it.
qemu:
	@mkdir -p $(BUILD)/qemu
	@bin=$$(emulator/qemu/build-qemu.sh $(CACHE) | tail -1) && test -x "$$bin" && \
	  ln -sfn "$$bin" $(BUILD)/qemu/qemu-system-x86_64 && echo "qemu: $$bin"

deps:
	.ci/deps

# --- the debug kernel lane (Documentation/lab.md) --------------------------
# The debug guest kernel (KASAN, lockdep, kmemleak, ...) is built from
# Debian's linux-source-6.1 and cached by input hash (unfinished builds of
# other keys are removed); build/debug-kernel
# points at it. Our modules are built against it from a copy of their
# sources (so the objects of `make modules` stay as they are) and collected
# into build/modules-debug; the lane's canary module into build/canary-debug.
DEBUG_KERNEL = $(BUILD)/debug-kernel
MODULES_DEBUG_DIR = $(BUILD)/modules-debug
CANARY_DEBUG_DIR = $(BUILD)/canary-debug
# The sources are built in one directory of the cache, the same path for
# every clone: ccache hashes the paths on Kbuild's compile lines (its cwd is
# the kernel tree, outside the clone, so CCACHE_BASEDIR cannot make them
# relative), and with the clone's path in them a fresh clone missed every
# object. A lock keeps two clones (or worktrees) from building there at once.
KBUILD_DEBUG = $(CACHE)/kbuild-debug
DEBUG_SRC = $(KBUILD_DEBUG)/src

debug-kernel:
	@mkdir -p $(BUILD)
	@dir=$$(JOBS=$(JOBS) tests/lab/debug-kernel/build.sh $(CACHE) | tail -1) && test -e "$$dir/.complete" && \
	  ln -sfn "$$dir" $(DEBUG_KERNEL) && \
	  echo "debug-kernel: $$(cat $$dir/release) (built in $$(cat $$dir/build-seconds) s) -> $$dir" && \
	  for d in $(CACHE)/debug-kernel-*/; do d=$${d%/}; \
	    [ "$$d" = "$$dir" ] || [ -e "$$d/.complete" ] || flock -n "$$d.lock" rm -rf "$$d"; done

# The sources are copied afresh for each build (no stale object or module
# can survive; ccache makes the rebuild of unchanged files cheap). Our
# modules and then the test modules of tests/kmod (against our symbols) are
# built as `make modules test-modules` builds them for the stock kernel, and
# collected into build/modules-debug; the lane canary goes to
# build/canary-debug instead, so that no suite of ours loads it by accident.
# $(call debug_modules,source copy,output dir,extra Kbuild arguments)
define debug_modules
	@set -e; files=$$(find Kbuild drivers include tests/kmod -type f \
	    \( -name '*.[chS]' ! -name '*.mod.c' -o -name Kbuild -o -name Makefile \) | sort); \
	  rm -rf $(1) && mkdir -p $(1) && cp --parents -p $$files $(1)/
	+$(MAKE) -C $(DEBUG_KERNEL)/src M=$(1) $(KBUILD_CCACHE_DEBUG) $(3) modules
	+$(MAKE) -C $(DEBUG_KERNEL)/src M=$(1)/tests/kmod $(KBUILD_CCACHE_DEBUG) \
		KBUILD_EXTRA_SYMBOLS=$(1)/Module.symvers $(3) modules
	@rm -rf $(2) && mkdir -p $(2) && \
	  for m in $$(sed 's/\.o$$/.ko/' $(1)/modules.order $(1)/tests/kmod/modules.order); do \
	    case $$m in */lane_canary/*) continue;; esac; \
	    cp $$m $(2)/ || exit 1; done && \
	  echo "$@: $$(ls $(2) | tr '\n' ' ')-> $(2)"
endef

# The same set with the MAD agent lifetime fix undone (ib_mad compiled with
# IB_MAD_TEST_BREAK_AGENT_REF: unregister frees the agent without waiting
# for the last reference), for vm.OursMadRaceBroken, which passes only when
# KASAN catches it. Only modules-debug-broken sets the switch, into its own
# source copy and output directory; nothing installs it. modules-debug
# (a stage of make check) builds it after the real set, so that the ctest
# test has it.
MODULES_DEBUG_BROKEN_DIR = $(BUILD)/modules-debug-broken
DEBUG_SRC_BROKEN = $(KBUILD_DEBUG)/src-broken

modules-debug: debug-kernel
	@mkdir -p $(CACHE)
	+flock $(KBUILD_DEBUG).lock $(MAKE) --no-print-directory modules-debug-locked

modules-debug-locked:
	$(call debug_modules,$(DEBUG_SRC),$(MODULES_DEBUG_DIR))
	@rm -rf $(CANARY_DEBUG_DIR) && mkdir -p $(CANARY_DEBUG_DIR) && \
	  cp $(DEBUG_SRC)/tests/kmod/lane_canary/lane_canary.ko $(CANARY_DEBUG_DIR)/ && \
	  echo "canary: -> $(CANARY_DEBUG_DIR)"
	+$(MAKE) --no-print-directory modules-debug-broken-locked

modules-debug-broken: debug-kernel
	@mkdir -p $(CACHE)
	+flock $(KBUILD_DEBUG).lock $(MAKE) --no-print-directory modules-debug-broken-locked

modules-debug-broken-locked:
	$(call debug_modules,$(DEBUG_SRC_BROKEN),$(MODULES_DEBUG_BROKEN_DIR),KCFLAGS=-DIB_MAD_TEST_BREAK_AGENT_REF)

# --- tests -----------------------------------------------------------------
# make check runs these stages in order (tests/check.sh): it times each, keeps
# its log in build/check/, and ends with one line "N passed, N failed" over
# the KUnit cases, the lint stages and every ctest test. deps, all, qemu,
# debug-kernel and modules-debug build what the others need; the later
# stages all run even when one fails. The bg: stages run under nice 19
# beside check-tests (tests/check.sh): only those without a time limit, as
# a niced stage can wait long for the CPU (KUnit's run and the unit tests
# have timeouts, the fuzzers a fixed time).
CHECK_STAGES = deps all qemu debug-kernel modules-debug bg:check-checkpatch bg:check-sparse \
	check-tests check-kunit check-asan check-fuzz

check:
	@tests/check.sh $(BUILD) $(CHECK_STAGES)

check-lint: check-checkpatch check-sparse

check-checkpatch: checkpatch

# Sparse (C=2) and W=1 over our modules and the test modules: any warning
# or error line fails the stage.
# Its modules are collected apart (MODULES_DIR): make check runs it beside
# the VM tests, which load build/modules.
check-sparse:
	@mkdir -p $(BUILD); set -o pipefail; $(MAKE) --no-print-directory modules test-modules C=2 W=1 \
	  MODULES_DIR=$(BUILD)/modules-sparse 2>&1 | \
	  tee $(BUILD)/sparse.log
	@if grep -E '(warning|error):' $(BUILD)/sparse.log; then \
	  echo "check-sparse: the lines above fail the lint"; exit 1; fi

# KUnit suites of our kernel code, on UML (tests/kunit, Documentation/kunit.md).
check-kunit:
	JOBS=$(JOBS) tests/kunit/run

# Unit tests (label unit), VM tests (label vm) and short benchmark runs
# (label bench). A VM suite takes as many slots of the "vmcpu" resource as
# the cores its guests keep busy (tests/vm/CMakeLists.txt), and the spec
# file gives three for the two cores: a suite of two cores runs beside one
# of one, the timed suites and the benchmark alone, and unit tests fill
# what is left of -j.
VM_RESOURCES = $(CURDIR)/tests/vm/resources.json
check-tests: cpp
	@rm -f $(BUILD)/lab/mad_rate.txt $(BUILD)/lab/conn_rate.txt
	@set -o pipefail; cd $(BUILD) && \
	ctest --output-on-failure -L 'unit|vm|bench' -j $(JOBS) --resource-spec-file $(VM_RESOURCES) \
	  $(CTEST_ARGS) 2>&1 | tee $(BUILD)/ctest.log

check-unit: cpp
	cd $(BUILD) && ctest --output-on-failure -L unit -j $(JOBS) $(CTEST_ARGS)

check-vm: cpp
	cd $(BUILD) && ctest --output-on-failure -L vm $(CTEST_ARGS)

# The 1000-CA scale benchmark (Documentation/scale.md): OpenSM's sweep on
# our fabric and on ibsim, best of 3 each, and ours/ibsim. Not in make
# check (about a minute; needs ibsim-utils).
bench-scale: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target ibemu-fabric ibemu_umad
	cd $(BUILD) && ctest --output-on-failure -V -R '^scale_bench_opensm_fattree1000$$' $(CTEST_ARGS) | \
	  grep -E '^[0-9]+: (bench|SKIP|FAIL)|tests passed|tests failed|Passed|Failed|\*\*\*'

# The long version of make check's 20-cycle vm.OursReload (about 50 min for
# 500 cycles on 2 cores); the leak thresholds scale with the length.
RELOAD_CYCLES ?= 500
reload-campaign: all qemu
	cd $(BUILD) && IBSTACK_RELOAD_CYCLES=$(RELOAD_CYCLES) ctest --output-on-failure -R '^vm\.OursReload$$' \
	  --timeout $$(( $(RELOAD_CYCLES) * 8 + 600 )) $(CTEST_ARGS)

# --- sanitizers and fuzzing (Documentation/emulator.md, "Sanitizers and fuzzing")
$(ASAN_BUILD)/build.ninja: CMakeLists.txt
	CC=clang CXX=clang++ cmake -S $(CURDIR) -B $(ASAN_BUILD) -G Ninja $(LAUNCHER) \
	  -DIBSTACK_FUZZ=ON -DIBSTACK_EMULATOR_ONLY=ON

asan: $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# Unit tests of the emulator and the fuzz regression inputs, sanitized.
check-asan: asan
	@set -o pipefail; cd $(ASAN_BUILD) && \
	ctest --output-on-failure -L unit -j $(JOBS) $(CTEST_ARGS) 2>&1 | tee $(ASAN_BUILD)/ctest.log

check-fuzz: asan
	FUZZ_SEED=1 emulator/fuzz/run $(ASAN_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz: asan
	emulator/fuzz/run $(ASAN_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

demo: deps all qemu
	tests/lab/demo.sh $(BUILD)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/kmod clean
	rm -rf $(BUILD) $(ASAN_BUILD)
