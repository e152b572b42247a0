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

export IBSTACK_CACHE := $(CACHE)
SHELL := /bin/bash

.PHONY: all modules modules_install cpp qemu deps check check-unit check-vm \
	check-lint check-kunit check-tests checkpatch demo clean help \
	debug-kernel modules-debug

all: modules cpp

help:
	@echo "make                  build kernel modules and the C++ parts"
	@echo "make modules          kernel modules (C=2 for sparse, W=1 for extra warnings)"
	@echo "make modules_install  install into /lib/modules/\$$KVER/updates and run depmod"
	@echo "make checkpatch       checkpatch --strict on our kernel sources"
	@echo "make qemu             build (or fetch from cache) QEMU 7.2 with the HCA shim"
	@echo "make debug-kernel     build (or fetch from cache) the debug guest kernel"
	@echo "make modules-debug    our modules and the lane canary against the debug kernel"
	@echo "make check-kunit      KUnit suites on UML"
	@echo "make check            install deps, build everything, run all tests"
	@echo "make demo             boot a guest on the emulated HCA and show it"

# --- kernel modules --------------------------------------------------------
# C=, W=, V= given on our command line reach Kbuild through MAKEFLAGS.
# The built .ko files are also collected flat into $(BUILD)/modules, the
# directory the VM tests of our stack hand to the lab (iblab --modules).
MODULES_DIR = $(BUILD)/modules

modules:
	@test -d "$(KDIR)" || { echo "no kernel headers at $(KDIR): run .ci/deps"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules
	@rm -rf $(MODULES_DIR) && mkdir -p $(MODULES_DIR) && \
	  find drivers -name '*.ko' -exec cp {} $(MODULES_DIR)/ \; && \
	  echo "modules: $$(ls $(MODULES_DIR) | tr '\n' ' ')-> $(MODULES_DIR)"

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(KVER)

# Our kernel sources: everything C under drivers/ and include/rdma, but not
# the *.mod.c files that modpost generates.
KSRC = $(shell find drivers include -name '*.[ch]' ! -name '*.mod.c' 2>/dev/null | sort)
CHECKPATCH_DIR = $(CACHE)/checkpatch-$(KVER)

$(CHECKPATCH_DIR)/scripts/checkpatch.pl:
	@mkdir -p $(CHECKPATCH_DIR).tmp
	tar -C $(CHECKPATCH_DIR).tmp --strip-components=1 -xf $(firstword $(wildcard /usr/src/linux-source-6.1.tar.*)) \
		linux-source-6.1/scripts/checkpatch.pl linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	rm -rf $(CHECKPATCH_DIR) && mv $(CHECKPATCH_DIR).tmp $(CHECKPATCH_DIR)

checkpatch: $(CHECKPATCH_DIR)/scripts/checkpatch.pl
	@if [ -z "$(KSRC)" ]; then echo "checkpatch: no kernel sources yet"; else \
	  $(CHECKPATCH_DIR)/scripts/checkpatch.pl --strict --no-tree --terse \
	    --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG -f $(KSRC); fi

# --- C++ -------------------------------------------------------------------
$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S $(CURDIR) -B $(BUILD) -G Ninja -DIBSTACK_QEMU=$(BUILD)/qemu/qemu-system-x86_64

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
DEBUG_SRC = $(BUILD)/debug-src

debug-kernel:
	@mkdir -p $(BUILD)
	@dir=$$(JOBS=$(JOBS) tests/lab/debug-kernel/build.sh $(CACHE) | tail -1) && test -e "$$dir/.complete" && \
	  ln -sfn "$$dir" $(DEBUG_KERNEL) && \
	  echo "debug-kernel: $$(cat $$dir/release) (built in $$(cat $$dir/build-seconds) s) -> $$dir" && \
	  for d in $(CACHE)/debug-kernel-*/; do d=$${d%/}; \
	    [ "$$d" = "$$dir" ] || [ -e "$$d/.complete" ] || flock -n "$$d.lock" rm -rf "$$d"; done

# Sources are copied with cp -u (Kbuild rebuilds what changed); a file
# added or removed starts the copy afresh, so no stale module is built.
modules-debug: debug-kernel
	@set -e; files=$$(find Kbuild drivers include tests/kmod -type f \
	    \( -name '*.[chS]' ! -name '*.mod.c' -o -name Kbuild -o -name Makefile \) | sort); \
	  sum=$$(echo "$$files" | sha256sum | cut -c1-16); \
	  if [ "$$(cat $(DEBUG_SRC)/.files 2>/dev/null)" != "$$sum" ]; then \
	    rm -rf $(DEBUG_SRC) && mkdir -p $(DEBUG_SRC) && echo "$$sum" > $(DEBUG_SRC)/.files; fi; \
	  cp -u --parents -p $$files $(DEBUG_SRC)/
	$(MAKE) -C $(DEBUG_KERNEL)/src M=$(DEBUG_SRC) modules
	@rm -rf $(MODULES_DEBUG_DIR) && mkdir -p $(MODULES_DEBUG_DIR) && \
	  for m in $$(sed 's/\.o$$/.ko/' $(DEBUG_SRC)/modules.order); do \
	    m=$${m#$(DEBUG_SRC)/}; case $$m in tests/kmod/lane_canary/*) continue;; esac; \
	    cp $(DEBUG_SRC)/$$m $(MODULES_DEBUG_DIR)/ || exit 1; done && \
	  echo "modules-debug: $$(ls $(MODULES_DEBUG_DIR) | tr '\n' ' ')-> $(MODULES_DEBUG_DIR)"
	@mkdir -p $(DEBUG_SRC)-canary && cp -u -p tests/kmod/lane_canary/Kbuild tests/kmod/lane_canary/*.c $(DEBUG_SRC)-canary/
	$(MAKE) -C $(DEBUG_KERNEL)/src M=$(DEBUG_SRC)-canary modules
	@rm -rf $(CANARY_DEBUG_DIR) && mkdir -p $(CANARY_DEBUG_DIR) && \
	  cp $(DEBUG_SRC)-canary/lane_canary.ko $(CANARY_DEBUG_DIR)/ && echo "canary: -> $(CANARY_DEBUG_DIR)"

# --- tests -----------------------------------------------------------------
# Each stage's wall time goes to build/stage-times.txt, printed at the end.
check:
	@start=$$(date +%s); mkdir -p $(BUILD); times=$(BUILD)/stage-times.txt; : >$$times; \
	stage() { local t=$$(date +%s) rc; $(MAKE) --no-print-directory $$1; rc=$$?; \
	  printf '%-14s %5d s%s\n' $$1 $$(( $$(date +%s) - t )) "$$([ $$rc -eq 0 ] || echo ' (failed)')" >>$$times; \
	  return $$rc; }; \
	stage deps && stage all && stage qemu && \
	stage check-lint && stage check-kunit && stage check-tests; rc=$$?; \
	echo "=== benchmark: emulator RDMA WRITE vs memcpy (ratio 1.0 = memcpy speed) ==="; \
	$(BUILD)/emulator/bench/rdma_write_bench --benchmark_min_time=0.2 2>/dev/null | grep '^ratio' || true; \
	echo "=== benchmark: MAD round trips, our stack vs upstream (tests/bench) ==="; \
	sed 1d $(BUILD)/lab/mad_rate.txt 2>/dev/null || echo "not run"; \
	echo "=== timings ==="; \
	cat $(BUILD)/lab/timings.txt 2>/dev/null || echo "guest boot-to-shell: not measured"; \
	echo "=== stage times ==="; cat $$times; \
	echo "make check wall time: $$(( $$(date +%s) - start )) s"; \
	grep -h "tests passed.*tests failed out of" $(BUILD)/ctest.log 2>/dev/null | tail -1; \
	exit $$rc

check-lint: checkpatch
	$(MAKE) --no-print-directory modules C=2 W=1

# KUnit suites of our kernel code, on UML (tests/kunit, Documentation/kunit.md).
check-kunit:
	JOBS=$(JOBS) tests/kunit/run

# Unit tests (label unit), VM tests (label vm: they take a lock, so they run
# one at a time beside the unit tests) and short benchmark runs (label bench).
check-tests: cpp
	@rm -f $(BUILD)/lab/mad_rate.txt
	@set -o pipefail; cd $(BUILD) && \
	ctest --output-on-failure -L 'unit|vm|bench' -j $(JOBS) $(CTEST_ARGS) 2>&1 | tee $(BUILD)/ctest.log

check-unit: cpp
	cd $(BUILD) && ctest --output-on-failure -L unit -j $(JOBS) $(CTEST_ARGS)

check-vm: cpp
	cd $(BUILD) && ctest --output-on-failure -L vm $(CTEST_ARGS)

demo: deps all qemu
	tests/lab/demo.sh $(BUILD)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD)
