#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs one VM suite (a GoogleTest binary with its --gtest_filter) for ctest
# and passes its output through. Exit status: the binary's when it failed;
# 77 (the VM tests' SKIP_RETURN_CODE) when it passed but a test skipped
# itself ("[  SKIPPED ]"), so such a suite is reported skipped, never
# passed; 0 otherwise. A failure is never turned into a skip, which ctest's
# SKIP_REGULAR_EXPRESSION alone would do (it wins over the exit status).
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ] && grep -q '^\[  SKIPPED \]' "$out"; then
	echo "run_suite: a test skipped itself: the suite counts as skipped"
	exit 77
fi
exit "$rc"
