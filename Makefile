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
SHELL := /bin/bash

.PHONY: all modules modules_install cpp qemu deps check check-unit check-vm \
	check-lint check-kunit check-tests checkpatch demo clean help \
	asan check-asan check-fuzz fuzz

all: modules cpp

help:
	@echo "make                  build kernel modules and the C++ parts"
	@echo "make modules          kernel modules (C=2 for sparse, W=1 for extra warnings)"
	@echo "make modules_install  install into /lib/modules/\$$KVER/updates and run depmod"
	@echo "make checkpatch       checkpatch --strict on our kernel sources"
	@echo "make qemu             build (or fetch from cache) QEMU 7.2 with the HCA shim"
	@echo "make check-kunit      KUnit suites on UML"
	@echo "make check            install deps, build everything, run all tests"
	@echo "make check-asan       the emulator's unit tests under ASan+UBSan (build-asan)"
	@echo "make check-fuzz       each fuzz target for FUZZ_SECONDS (default 20) s"
	@echo "make fuzz             a longer campaign: FUZZ_SECONDS=600 [FUZZ_TARGETS=...]"
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

# --- tests -----------------------------------------------------------------
check:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory deps && \
	$(MAKE) --no-print-directory all && \
	$(MAKE) --no-print-directory qemu && \
	$(MAKE) --no-print-directory check-lint && \
	$(MAKE) --no-print-directory check-kunit && \
	$(MAKE) --no-print-directory check-tests && \
	$(MAKE) --no-print-directory check-asan && \
	$(MAKE) --no-print-directory check-fuzz; rc=$$?; \
	echo "=== benchmark: emulator RDMA WRITE vs memcpy (ratio 1.0 = memcpy speed) ==="; \
	$(BUILD)/emulator/bench/rdma_write_bench --benchmark_min_time=0.2 2>/dev/null | grep '^ratio' || true; \
	echo "=== benchmark: MAD round trips, our stack vs upstream (tests/bench) ==="; \
	sed 1d $(BUILD)/lab/mad_rate.txt 2>/dev/null || echo "not run"; \
	echo "=== timings ==="; \
	cat $(BUILD)/lab/timings.txt 2>/dev/null || echo "guest boot-to-shell: not measured"; \
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

# --- sanitizers and fuzzing (Documentation/emulator.md, "Sanitizers and fuzzing")
$(ASAN_BUILD)/build.ninja: CMakeLists.txt
	CC=clang CXX=clang++ cmake -S $(CURDIR) -B $(ASAN_BUILD) -G Ninja \
	  -DIBSTACK_FUZZ=ON -DIBSTACK_EMULATOR_ONLY=ON

asan: $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# Unit tests of the emulator and the fuzz regression inputs, sanitized.
check-asan: asan
	@set -o pipefail; cd $(ASAN_BUILD) && \
	ctest --output-on-failure -L unit -j $(JOBS) $(CTEST_ARGS) 2>&1 | tee $(ASAN_BUILD)/ctest.log

check-fuzz: asan
	emulator/fuzz/run $(ASAN_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz: asan
	emulator/fuzz/run $(ASAN_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

demo: deps all qemu
	tests/lab/demo.sh $(BUILD)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD) $(ASAN_BUILD)
