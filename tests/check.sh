#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's driver. Runs the make targets it is given as stages, in order,
# each with its output in build/check/<stage>.log, and times them. The first
# stages (deps, all, qemu, debug-kernel, modules-debug) build what the rest
# need: if one of those fails, the run stops. Every other stage runs even when an earlier
# one failed, so one failure does not hide the others.
#
# A stage written bg:<target> runs in the background, under nice 19, from the
# start of the next foreground stage on: the lint stages use the CPU the VM
# tests leave idle (their guests wait on the fabric and on each other)
# instead of taking a minute of their own. The
# background stages run one after the other; their logs are printed, and
# their results counted, once they and the foreground are done.
#
# It ends with the benchmarks, the stage times and one line
#   N passed, N failed[, N skipped]
# that counts the KUnit cases, each lint stage as one test, and every ctest
# test. Exit status: 0 only when nothing failed.
#
# usage: tests/check.sh BUILD_DIR STAGE...
set -uo pipefail

build=$1
shift
out=$build/check
rm -rf "$out" "$build/ctest.log"
mkdir -p "$out"
touch "$out/.start"

passed=0 failed=0 skipped=0
declare -a table
start_all=$(date +%s)

# Prints "passed failed skipped" for a finished stage.
count_stage() {
	local stage=$1 rc=$2 log=$3 p=0 f=0 s=0 line t
	case $stage in
	check-kunit)
		# "Ran 150 tests: passed: 148, failed: 1, skipped: 1"
		line=$(grep -ho 'Ran [0-9]* tests:.*' "$log" | tail -1)
		if [ -n "$line" ]; then
			p=$(sed -n 's/.*passed: \([0-9]*\).*/\1/p' <<<"$line")
			f=$(sed -n 's/.*failed: \([0-9]*\).*/\1/p' <<<"$line")
			s=$(sed -n 's/.*skipped: \([0-9]*\).*/\1/p' <<<"$line")
			t=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$line")
			f=$(( ${f:-0} + ${t:-0} ))
			p=${p:-0} s=${s:-0}
		fi
		# A build failure, a crash or a sparse finding fails the stage.
		[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
		;;
	check-tests*|check-asan)
		# "97% tests passed, 3 tests failed out of 100"
		line=$(grep -h 'tests passed, .* tests failed out of' "$log" | tail -1)
		if [ -n "$line" ]; then
			t=$(sed -n 's/.*out of \([0-9]*\).*/\1/p' <<<"$line")
			f=$(sed -n 's/.* \([0-9]*\) tests failed.*/\1/p' <<<"$line")
			s=$(grep -c '(Skipped)' "$log")
			p=$(( t - f - s ))
		fi
		[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
		;;
	*)
		if [ "$rc" -eq 0 ]; then p=1; else f=1; fi
		;;
	esac
	echo "$p $f $s"
}

# make's arguments for a stage. The stages that build kernel modules run
# make with -j: Kbuild gets its jobs from the jobserver (the sub-makes pass
# it on).
stage_make_args() {
	case $1 in
	all|modules-debug|check-sparse) echo "-j ${JOBS:-$(nproc)}" ;;
	esac
}

# The background chain: each stage's log in $out/<stage>.log, its exit
# status and seconds in $out/<stage>.result.
bg=() bg_pid=
run_bg_chain() {
	local stage t0
	for stage in "${bg[@]}"; do
		t0=$(date +%s)
		# shellcheck disable=SC2046
		nice -n 19 make --no-print-directory $(stage_make_args "$stage") "$stage" >"$out/$stage.log" 2>&1
		echo "$? $(( $(date +%s) - t0 ))" >"$out/$stage.result"
	done
}

# Adds a finished counted stage to the totals and the table.
record_stage() {
	local stage=$1 rc=$2 secs=$3 note=${4:-} p f s status
	read -r p f s < <(count_stage "$stage" "$rc" "$out/$stage.log")
	passed=$(( passed + p )) failed=$(( failed + f )) skipped=$(( skipped + s ))
	status="$p passed, $f failed"
	[ "$s" -gt 0 ] && status+=", $s skipped"
	[ "$rc" -ne 0 ] && status+=" (exit $rc)"
	table+=("$(printf '%-22s %6ss  %s%s' "$stage" "$secs" "$status" "$note")")
}

for stage in "$@"; do
	case $stage in
	bg:*)
		bg+=("${stage#bg:}")
		continue
		;;
	esac
	if [ ${#bg[@]} -gt 0 ] && [ -z "$bg_pid" ]; then
		echo "=== stages in the background (nice 19): ${bg[*]} ==="
		run_bg_chain &
		bg_pid=$!
	fi
	log=$out/$stage.log
	echo "=== stage $stage ==="
	t0=$(date +%s)
	# shellcheck disable=SC2046
	make --no-print-directory $(stage_make_args "$stage") "$stage" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	secs=$(( $(date +%s) - t0 ))
	case $stage in
	deps|all|qemu|debug-kernel|modules-debug)
		status=ok
		if [ "$rc" -ne 0 ]; then
			status=FAILED
			failed=$(( failed + 1 ))
		fi
		table+=("$(printf '%-22s %6ss  %s' "$stage" "$secs" "$status")")
		if [ "$rc" -ne 0 ]; then
			echo "=== stage $stage FAILED: the stages after it need it; stopping ==="
			break
		fi
		;;
	*)
		record_stage "$stage" "$rc" "$secs"
		;;
	esac
done

# The background stages: a build stage that failed stopped the foreground
# before the chain started, and then they did not run.
if [ -n "$bg_pid" ]; then
	wait "$bg_pid"
	for stage in "${bg[@]}"; do
		echo "=== stage $stage (ran in the background) ==="
		cat "$out/$stage.log"
		if read -r rc secs <"$out/$stage.result"; then
			record_stage "$stage" "$rc" "$secs" "  (background)"
		else
			echo "=== stage $stage: no result ==="
			failed=$(( failed + 1 ))
			table+=("$(printf '%-22s %6s   %s' "$stage" "-" "did not finish")")
		fi
	done
elif [ ${#bg[@]} -gt 0 ]; then
	echo "=== background stages not run: ${bg[*]} ==="
fi

echo "=== benchmark: emulator RDMA WRITE vs memcpy (ratio 1.0 = memcpy speed) ==="
if [ -x "$build/emulator/bench/rdma_write_bench" ]; then
	"$build/emulator/bench/rdma_write_bench" --benchmark_min_time=0.2 2>/dev/null | grep '^ratio' ||
		echo "rdma_write_bench: no ratio measured"
else
	echo "not built"
fi
echo "=== benchmark: MAD round trips and user verbs, our stack vs upstream (tests/bench) ==="
sed 1d "$build/lab/mad_rate.txt" 2>/dev/null || echo "not run"
if [ -f "$build/lab/conn_rate.txt" ]; then
	cat "$build/lab/conn_rate.txt"
else
	echo "=== benchmark: connection rate (bench.conn_rate) ==="
	echo "not run"
fi
if [ -f "$build/lab/ipoib_rate.txt" ]; then
	cat "$build/lab/ipoib_rate.txt"
else
	echo "=== benchmark: IPoIB (bench.conn_rate) ==="
	echo "not run"
fi
echo "=== timings ==="
if [ -f "$build/lab/timings.txt" ] && [ "$build/lab/timings.txt" -nt "$out/.start" ]; then
	cat "$build/lab/timings.txt"
else
	echo "guest boot-to-shell: not measured in this run"
fi
echo "=== stages ==="
printf '%s\n' "${table[@]}"
echo "make check wall time: $(( $(date +%s) - start_all )) s"
line="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && line+=", $skipped skipped"
echo "$line"
[ "$failed" -eq 0 ]
