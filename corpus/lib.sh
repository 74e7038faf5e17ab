# lib.sh: shell functions shared by make-cores, check-cores and demo.
# It knows the list of cases, what each one runs and expects, and how to crash
# a case into a core file (kernel core dump, or gdb's gcore as a fallback) and
# write the expect file beside it.  Source it; do not run it.  The caller sets
# `set -euo pipefail` and LIB_PROG (the name used in messages).
#
# Environment:
#   COREQ_CORE_METHOD=auto|kernel|gcore  force a method (default auto: kernel
#                                        unless core_pattern is a pipe)
#   COREQ_CASE_TIMEOUT=SECONDS           per-case time limit (default 60)
#   COREQ_CORE_JOBS=N                    cores of a multi-core case made at
#                                        once (default: see multi_jobs)
#
# The C_*, CASE_* and REASON globals are this library's results for callers.
# shellcheck shell=bash disable=SC2034

CORPUS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB_PROG=${LIB_PROG:-corpus}
CASE_TIMEOUT=${COREQ_CASE_TIMEOUT:-60}
# Thread counts of the threads-N cases (program nthreads, variant O2).
NTHREADS_COUNTS=(10 1000 3000)
# Cores of real Debian programs.
REAL_CASES=(real-sleep real-python3 real-perl real-python3d real-syslog-ng real-python3-deadlock real-python3-deadlock-with real-python3-exited-holder real-python3-stacks real-python3-crash-site_a real-python3-crash-site_b real-python3-crash-abort real-python3-crash-abort_keyerror real-python3-crash-abort_bare real-python3-crash-killed real-python3-asyncio)
# Crash sites of bucket_multi (a program whose manifest signal is SITE), as
# "site signal function": `bucket_multi SITE` dies of that signal in that
# function, called from the manifest's chain (dispatch main).  Each site is
# the case bucket_multi-SITE.
BUCKET_SITES=(
	"f ABRT crash_in_f"
	"g ABRT crash_in_g"
	"same_abort ABRT site_same"
	"same_segv SEGV site_same"
	"check_abort ABRT checker_caller"
	"check_raise ABRT checker_caller"
	"check_assert ABRT checker_caller"
)
# The multi-core case bucket-100: BUCKET_PER_SITE cores of bucket_multi for
# each of these sites, in a fixed scrambled order.
BUCKET_MULTI_SITES=(f g same_abort same_segv check_assert)
BUCKET_PER_SITE=20
# Shapes of async_coro (a program whose manifest signal is SHAPE), as
# "shape signal threads native-chain...": `async_coro SHAPE` dies of that
# signal with that many threads, and gdb's backtrace of the crashing thread
# holds the chain (native frames only; the merged async stacks each shape
# must give are in tests/e2e/test_async.py).  Each shape is the case
# async_coro-SHAPE.VARIANT.
ASYNC_SHAPES=(
	"same SEGV 1 crash_now crash_same inner resume_with_new_root blocking_wait run_same main"
	"cross SEGV 2 crash_now crash_cross inner2 resume_with_new_root executor_main"
	"nested SEGV 1 crash_now crash_nested nest_inner resume_with_new_root blocking_wait plain_bridge nest_outer resume_with_new_root blocking_wait run_nested main"
	"detached SEGV 2 crash_now crash_detached det_inner resume_with_new_root executor_main"
	"suspended SEGV 3 crash_now crash_suspended run_suspended main"
	"adapter SEGV 1 crash_now crash_adapter ad_inner resume_with_new_root run_adapter main"
	"adapter_call SEGV 1 crash_now crash_adapter ad_inner resume_with_new_root sync_wait_layers run_adapter_call main"
)

msg() { printf '%s: %s\n' "$LIB_PROG" "$*" >&2; }
info() { printf '%s: %s\n' "$LIB_PROG" "$*"; }
die() { msg "$*"; exit 1; }

# abspath PATH: PATH made absolute (it need not exist).
abspath() {
	case $1 in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s/%s\n' "$PWD" "$1" ;;
	esac
}

# manifest_rows: the rows of ./programs (program variants signal threads chain...).
manifest_rows() {
	awk '!/^[[:space:]]*#/ && NF >= 5' "$CORPUS_DIR/programs"
}

# have_rustc: rustc is available to build the Rust programs (see rustc-path).
have_rustc() {
	"$CORPUS_DIR/rustc-path" >/dev/null
}

# is_rust_program PROG: PROG is built from PROG.rs, or is the cargo crate PROG/.
is_rust_program() {
	[[ -f $CORPUS_DIR/$1.rs || -f $CORPUS_DIR/$1/Cargo.toml ]]
}

# is_cargo_program PROG: PROG is a cargo crate, built offline against Debian's
# packaged crates (/usr/share/cargo/registry, librust-*-dev).
is_cargo_program() {
	[[ -f $CORPUS_DIR/$1/Cargo.toml ]]
}

# have_crates: the crates the cargo programs use are installed (make deps).
have_crates() {
	compgen -G '/usr/share/cargo/registry/tokio-1.*' >/dev/null
}

# have_asio: Debian's standalone Asio is installed (libasio-dev, make deps).
have_asio() {
	[[ -f /usr/include/asio.hpp ]]
}

# Shapes of deadlock (a program whose manifest signal is SHAPE too), as
# "shape signal threads native-chain...": `deadlock SHAPE` hangs on its locks
# in that shape and is killed with SIGABRT from outside once every worker is
# blocked (C_KILL); it writes its own account of who holds and waits for
# what to ./oracle, which make-cores keeps beside the core.  Each shape is
# the case deadlock-SHAPE.VARIANT.
WAIT_SHAPES=(
	"abba ABRT 3 wait_for_watchdog main"
	"cycle3 ABRT 4 wait_for_watchdog main"
	"chain ABRT 5 wait_for_watchdog main"
	"recursive ABRT 3 wait_for_watchdog main"
	"rwlock ABRT 3 wait_for_watchdog main"
	"pi ABRT 3 wait_for_watchdog main"
	"robust ABRT 3 wait_for_watchdog main"
	"join ABRT 3 wait_for_watchdog main"
	"condvar ABRT 3 wait_for_watchdog main"
)

# The C++ hangs (deadlock_cxx.cc): ABBA on two std::mutex with
# std::lock_guard, from std::thread workers; a cycle through a
# std::shared_mutex read hold, and its writer behind a reader that exited; waits on a
# std::condition_variable_any and on a POSIX semaphore.  The case
# deadlock_cxx-SHAPE.VARIANT.
CXX_WAIT_SHAPES=(
	"abba ABRT 3 wait_for_watchdog main"
	"shared ABRT 4 wait_for_watchdog main"
	"shared_exited ABRT 4 wait_for_watchdog main"
	"condvar_any ABRT 3 wait_for_watchdog main"
	"sem ABRT 3 wait_for_watchdog main"
)

# Rust std::sync's RwLock and Condvar in a hang (rust_waits.rs); the case
# rust_waits-SHAPE.VARIANT.
RUST_WAIT_SHAPES=(
	"rwlock ABRT 4 rust_waits::wait_for_watchdog rust_waits::main"
	"condvar ABRT 3 rust_waits::wait_for_watchdog rust_waits::main"
)

# parking_lot's Mutex, RwLock and Condvar in a hang (parking_lot_waits/, a cargo
# crate); the case parking_lot_waits-SHAPE.VARIANT.
PARKING_WAIT_SHAPES=(
	"mutex ABRT 4 parking_lot_waits::wait_for_watchdog parking_lot_waits::main"
	"rwlock ABRT 3 parking_lot_waits::wait_for_watchdog parking_lot_waits::main"
	"condvar ABRT 3 parking_lot_waits::wait_for_watchdog parking_lot_waits::main"
)

# shape_rows PROG: the shape table of a SHAPE program, one row a line.
shape_rows() {
	if [[ $1 == rust_waits ]]; then
		printf '%s\n' "${RUST_WAIT_SHAPES[@]}"
	elif [[ $1 == parking_lot_waits ]]; then
		printf '%s\n' "${PARKING_WAIT_SHAPES[@]}"
	elif [[ $1 == deadlock ]]; then
		printf '%s\n' "${WAIT_SHAPES[@]}"
	elif [[ $1 == deadlock_cxx ]]; then
		printf '%s\n' "${CXX_WAIT_SHAPES[@]}"
	else
		printf '%s\n' "${ASYNC_SHAPES[@]}"
	fi
}

# have_boost_asio: Boost.Asio is installed (libboost1.74-dev, make deps).
have_boost_asio() {
	[[ -f /usr/include/boost/asio.hpp ]]
}

# all_cases: every case name, one per line (Rust programs only when rustc is
# available).
all_cases() {
	local prog variants sig threads chain v n
	local site rust crates
	rust=0
	crates=0
	have_rustc && rust=1
	have_crates && crates=1
	while read -r prog variants sig threads chain; do
		[[ $threads == N+1 ]] && continue
		is_rust_program "$prog" && [[ $rust == 0 ]] && continue
		is_cargo_program "$prog" && [[ $crates == 0 ]] && continue
		[[ $prog == asio_coro || $prog == asio_threads || $prog == asio_channel ]] && ! have_asio && continue
		[[ $prog == boost_coro ]] && ! have_boost_asio && continue
		[[ $prog == smol_tasks ]] && ! compgen -G '/usr/share/cargo/registry/smol-1.*' >/dev/null && continue
		[[ $prog == futures_pool ]] && ! compgen -G '/usr/share/cargo/registry/futures-executor-0.3.*' >/dev/null && continue
		[[ $prog == async_std_tasks ]] && ! compgen -G '/usr/share/cargo/registry/async-std-1.*' >/dev/null && continue
		[[ $prog == parking_lot_waits ]] && ! compgen -G '/usr/share/cargo/registry/parking_lot-0.12.*' >/dev/null && continue
		if [[ $sig == SITE ]]; then
			for site in "${BUCKET_SITES[@]}"; do
				printf '%s-%s\n' "$prog" "${site%% *}"
			done
			continue
		fi
		if [[ $sig == SHAPE ]]; then
			while read -r site; do
				for v in ${variants//,/ }; do
					printf '%s-%s.%s\n' "$prog" "${site%% *}" "$v"
				done
			done < <(shape_rows "$prog")
			continue
		fi
		for v in ${variants//,/ }; do
			[[ $v == clang* ]] && ! command -v clang++ >/dev/null && continue
			printf '%s.%s\n' "$prog" "$v"
			[[ $prog == tokio_tasks ]] && printf '%s-boxed.%s\n' "$prog" "$v"
		done
	done < <(manifest_rows)
	for n in "${NTHREADS_COUNTS[@]}"; do
		printf 'threads-%s\n' "$n"
	done
	printf '%s\n' "${REAL_CASES[@]}"
	printf '%s\n' bucket-100
}

# is_multi_case CASE: CASE makes many cores (core-000, core-001, ...) in
# its directory rather than one `core`.
is_multi_case() {
	[[ $1 == bucket-100 ]]
}

# bucket_site SITE: set B_SIG (signal name) and B_FN (crashing function) of
# a bucket_multi site.  Returns 1 if SITE is unknown.
bucket_site() {
	local row name
	for row in "${BUCKET_SITES[@]}"; do
		read -r name B_SIG B_FN <<<"$row"
		[[ $name == "$1" ]] && return 0
	done
	B_SIG='' B_FN=''
	return 1
}

# bucket_order: the sites of the bucket-100 cores in core order, one per
# line: BUCKET_PER_SITE of each of BUCKET_MULTI_SITES, shuffled with a fixed
# seed (Fisher-Yates over a linear congruential generator), so every build
# gets the same order.
bucket_order() {
	local -a order=()
	local site i j t seed=20240601
	for site in "${BUCKET_MULTI_SITES[@]}"; do
		for ((i = 0; i < BUCKET_PER_SITE; i++)); do
			order+=("$site")
		done
	done
	for ((i = ${#order[@]} - 1; i > 0; i--)); do
		seed=$(((seed * 1103515245 + 12345) % 2147483648))
		j=$(((seed >> 8) % (i + 1)))
		t=${order[i]} order[i]=${order[j]} order[j]=$t
	done
	printf '%s\n' "${order[@]}"
}

# async_shape SHAPE [PROG]: set A_SIG, A_THREADS and A_CHAIN of a shape of
# PROG (default async_coro).  Returns 1 if SHAPE is unknown.
async_shape() {
	local row name
	while read -r row; do
		read -r name A_SIG A_THREADS A_CHAIN <<<"$row"
		[[ $name == "$1" ]] && return 0
	done < <(shape_rows "${2:-async_coro}")
	A_SIG='' A_THREADS='' A_CHAIN=''
	return 1
}

# signum NAME: signal number of NAME (ABRT, SIGSEGV, ...).
signum() { kill -l "${1#SIG}"; }

# case_setup CASE OUT: describe CASE in these globals (OUT is the corpus
# build directory).  Returns 1 (with C_ERROR set) if CASE is unknown.
#   C_EXE       program to run          C_ARGS   its arguments (array)
#   C_REALEXE   C_EXE, symlinks resolved (the expect file's exe)
#   C_SIG       fatal signal number     C_THREADS threads at the crash
#   C_CHAIN     crash_chain             C_DEBUG_DIR build-id tree or ""
#   C_LAUNCH    the command to run when it is not C_EXE C_ARGS (a script
#               that sets up and execs C_EXE)
#   C_KILL      "" if the program crashes by itself, else it is sent C_SIG
#               once ready: its exe is running and, if C_READY_FILE=1, it has
#               created the file `ready` in its working directory; if
#               C_READY_SLEEP=1, it is asleep (state S).
case_setup() {
	local case=$1 out=$2 prog variant row n
	C_ARGS=()
	C_LAUNCH=()
	C_DEBUG_DIR=
	C_KILL=
	C_READY_FILE=
	C_READY_SLEEP=
	C_CHAIN=
	C_THREADS=1
	C_ERROR=
	case $case in
	threads-*)
		n=${case#threads-}
		prog=nthreads variant=O2
		C_ARGS=("$n")
		;;
	real-sleep)
		C_EXE=/usr/bin/sleep C_ARGS=(100) C_SIG=$(signum ABRT)
		C_KILL=1 C_READY_SLEEP=1
		;;
	real-python3)
		C_EXE=/usr/bin/python3 C_SIG=$(signum SEGV) C_KILL=1 C_READY_FILE=1
		C_ARGS=(-c 'open("ready", "w").close()
n = 0
while True:
    n += 1')
		;;
	bucket-100)
		# The facts of each core are the site's; see generate_multi_case.
		prog=bucket_multi variant=O2
		;;
	bucket_multi-*)
		prog=bucket_multi variant=O2
		C_ARGS=("${case#bucket_multi-}")
		;;
	real-python3d)
		C_EXE=/usr/bin/python3.11d C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		C_ARGS=("$CORPUS_DIR/real/python3d-threads.py") C_THREADS=7
		;;
	real-python3-deadlock)
		# Two threads in an ABBA deadlock on threading.Lock; the script
		# writes its own oracle (who holds and waits for which lock).
		C_EXE=/usr/bin/python3 C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		C_ARGS=("$CORPUS_DIR/real/python3-deadlock.py") C_THREADS=3
		;;
	real-python3-deadlock-with)
		# The same in with statements on module-level locks: the holders'
		# frames keep only the bound __exit__ on their value stacks.
		C_EXE=/usr/bin/python3 C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		C_ARGS=("$CORPUS_DIR/real/python3-deadlock.py" with) C_THREADS=3
		;;
	real-python3-exited-holder)
		# Two threads wait for ever behind a lock whose holder has exited:
		# no cycle, though an owner inferred from references makes one.
		C_EXE=/usr/bin/python3 C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		C_ARGS=("$CORPUS_DIR/real/python3-exited-holder.py") C_THREADS=3
		;;
	real-python3-stacks)
		# Threads blocked in distinct Python code; the script writes each
		# one's own Python stack (tests/e2e/test_python.py's oracle).
		# C_READY_SLEEP: the main thread writes `ready` one line before it
		# blocks (the line its record names): wait until it sleeps there.
		C_EXE=/usr/bin/python3 C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1 C_READY_SLEEP=1
		C_ARGS=("$CORPUS_DIR/real/python3-stacks.py") C_THREADS=10
		;;
	real-python3-crash-site_a | real-python3-crash-site_b)
		# ctypes.string_at(0) faults under two Python callers (corpus/real/python3-crash.py).
		C_EXE=/usr/bin/python3 C_SIG=$(signum SEGV)
		C_ARGS=("$CORPUS_DIR/real/python3-crash.py" "${case#real-python3-crash-}")
		;;
	real-python3-crash-abort | real-python3-crash-abort_keyerror | real-python3-crash-abort_bare)
		# A thread's uncaught exception (ValueError, KeyError, a bare
		# RuntimeError) reaches an excepthook that aborts.
		C_EXE=/usr/bin/python3 C_SIG=$(signum ABRT) C_THREADS=2
		C_ARGS=("$CORPUS_DIR/real/python3-crash.py" "${case#real-python3-crash-}")
		;;
	real-python3-crash-killed)
		# Killed from outside while its main thread handles an exception.
		C_EXE=/usr/bin/python3 C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		C_ARGS=("$CORPUS_DIR/real/python3-crash.py" killed)
		;;
	real-python3-asyncio)
		# An event loop with tasks suspended in different awaits; the script
		# writes each pending task's own chain (tests/e2e/test_python.py).
		C_EXE=/usr/bin/python3 C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		C_ARGS=("$CORPUS_DIR/real/python3-asyncio.py")
		;;
	real-syslog-ng)
		# Worker threads come and go with the load: the count is the core's.
		C_EXE=/usr/sbin/syslog-ng C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		C_LAUNCH=("$CORPUS_DIR/real/syslog-ng") C_THREADS=counted
		;;
	real-perl)
		C_EXE=/usr/bin/perl C_SIG=$(signum ABRT) C_KILL=1 C_READY_FILE=1
		# shellcheck disable=SC2016 # a perl program, not shell
		C_ARGS=(-e 'open(my $f, ">", "ready") or die; close($f); my $n = 0; while (1) { $n++ }')
		;;
	async_coro-*.*)
		prog=async_coro variant=${case##*.}
		n=${case%.*}
		C_ARGS=("${n#async_coro-}")
		;;
	deadlock-*.*)
		prog=deadlock variant=${case##*.}
		n=${case%.*}
		C_ARGS=("${n#deadlock-}")
		C_KILL=1 C_READY_FILE=1
		;;
	deadlock_cxx-*.*)
		prog=deadlock_cxx variant=${case##*.}
		n=${case%.*}
		C_ARGS=("${n#deadlock_cxx-}")
		C_KILL=1 C_READY_FILE=1
		;;
	rust_waits-*.* | parking_lot_waits-*.*)
		n=${case%.*}
		prog=${n%%-*} variant=${case##*.}
		C_ARGS=("${n#"$prog"-}")
		C_KILL=1 C_READY_FILE=1
		;;
	rust_deadlock.*)
		# ABBA on two std::sync::Mutex; killed from outside once both
		# workers are blocked, its oracle beside the core.
		prog=rust_deadlock variant=${case##*.}
		C_KILL=1 C_READY_FILE=1
		;;
	tokio_tasks-boxed.*)
		# The same tasks boxed as dyn Future, and stale fat pointers (main.rs).
		prog=tokio_tasks variant=${case##*.}
		C_ARGS=(boxed)
		;;
	*.*)
		prog=${case%.*} variant=${case##*.}
		;;
	*)
		C_ERROR="unknown case"
		return 1
		;;
	esac
	if [[ -n ${prog:-} ]]; then
		local mprog variants sig threads chain
		row=$(manifest_rows | awk -v p="$prog" '$1 == p')
		if [[ -z $row ]]; then
			C_ERROR="unknown case (no program $prog)"
			return 1
		fi
		read -r mprog variants sig threads chain <<<"$row"
		if [[ $sig == SITE ]]; then
			if [[ $case == bucket-100 ]]; then
				C_ARGS=("${BUCKET_MULTI_SITES[0]}")
			fi
			if [[ ${#C_ARGS[@]} -ne 1 ]] || ! bucket_site "${C_ARGS[0]}"; then
				C_ERROR="unknown case ($prog has no crash site ${C_ARGS[0]:-})"
				return 1
			fi
			sig=$B_SIG
			chain="$B_FN $chain"
		fi
		if [[ $sig == SHAPE ]]; then
			if [[ ${#C_ARGS[@]} -ne 1 ]] || ! async_shape "${C_ARGS[0]}" "$prog"; then
				C_ERROR="unknown case ($prog has no shape ${C_ARGS[0]:-})"
				return 1
			fi
			sig=$A_SIG threads=$A_THREADS chain=$A_CHAIN
		fi
		if [[ $prog == nthreads ]]; then
			if [[ ! $n =~ ^[1-9][0-9]*$ ]]; then
				C_ERROR="unknown case (bad thread count)"
				return 1
			fi
			threads=$((n + 1))
		elif [[ $threads == N+1 || ,$variants, != *,"$variant",* ]]; then
			C_ERROR="unknown case ($prog is not built as $variant)"
			return 1
		fi
		C_EXE=$out/bin/$variant/$mprog
		C_SIG=$(signum "$sig")
		C_THREADS=$threads
		C_CHAIN=$chain
		[[ $variant == stripped ]] && C_DEBUG_DIR=$out/debug
	fi
	C_REALEXE=$(readlink -f "$C_EXE" 2>/dev/null || printf '%s' "$C_EXE")
	return 0
}

# case_up_to_date DEST: DEST holds a core and expect newer than the program
# and than this library.
case_up_to_date() {
	local dest=$1
	[[ -f $dest/core && -f $dest/expect && $dest/expect -nt $C_REALEXE &&
		$dest/expect -nt ${BASH_SOURCE[0]} ]]
}

# multi_up_to_date DEST: the multi-core case in DEST has its expect, newer
# than the program and than this library, and every core it lists.
multi_up_to_date() {
	local dest=$1 n i
	[[ -f $dest/expect && $dest/expect -nt $C_REALEXE &&
		$dest/expect -nt ${BASH_SOURCE[0]} ]] || return 1
	n=$(sed -n 's/^cores=\([0-9][0-9]*\)$/\1/p' "$dest/expect")
	[[ -n $n ]] || return 1
	for ((i = 0; i < n; i++)); do
		[[ -f $dest/$(printf 'core-%03d' "$i") ]] || return 1
	done
}

# read_core_pattern: the kernel's core_pattern.
read_core_pattern() {
	cat /proc/sys/kernel/core_pattern 2>/dev/null || true
}

# core_method: kernel or gcore, from COREQ_CORE_METHOD and core_pattern.
core_method() {
	local pattern
	case ${COREQ_CORE_METHOD:-auto} in
	kernel | gcore) printf '%s\n' "$COREQ_CORE_METHOD"; return ;;
	auto) ;;
	*) die "COREQ_CORE_METHOD must be auto, kernel or gcore" ;;
	esac
	pattern=$(read_core_pattern)
	if [[ $pattern == '|'* || -z $pattern ]]; then
		echo gcore
	else
		echo kernel
	fi
}

# wait_bounded PID SECONDS: wait for our child PID; SIGKILL it after SECONDS.
# Sets WAIT_STATUS to its exit status (128+N: killed by signal N).
wait_bounded() {
	local pid=$1 secs=$2 watchdog
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep "$secs" &
		s=$!
		wait "$s"
		kill -KILL "$pid" 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
	watchdog=$!
	WAIT_STATUS=0
	wait "$pid" 2>/dev/null || WAIT_STATUS=$?
	kill -TERM "$watchdog" 2>/dev/null || true
	wait "$watchdog" 2>/dev/null || true
}

# proc_state PID: the one-letter state of PID (R, S, ...), or nothing.
proc_state() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	printf '%s\n' "${stat%% *}"
}

# wait_ready PID SCRATCH: wait (at most 10 s) until the C_KILL program PID
# is ready to be killed.  Returns 1 if it never is.
wait_ready() {
	local pid=$1 scratch=$2 i
	for ((i = 0; i < 1000; i++)); do
		if [[ /proc/$pid/exe -ef $C_REALEXE ]] &&
			{ [[ -z $C_READY_FILE ]] || [[ -e $scratch/ready ]]; } &&
			{ [[ -z $C_READY_SLEEP ]] || [[ $(proc_state "$pid") == S ]]; }; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# is_elf_core FILE: FILE starts with an ELF header of type ET_CORE.
is_elf_core() {
	local hdr
	hdr=$(od -An -tx1 -N18 "$1" 2>/dev/null | tr -d ' \n')
	[[ $hdr == 7f454c46* && ${hdr:32:4} == 0400 ]]
}

# find_kernel_core SCRATCH PID: print the core the kernel wrote for PID:
# in SCRATCH (its working directory) for a relative core_pattern, else where
# an absolute core_pattern put it.
find_kernel_core() {
	local scratch=$1 pid=$2 pattern f comm glob
	local -a found=()
	pattern=$(read_core_pattern)
	if [[ $pattern != /* ]]; then
		for f in "$scratch"/*; do
			[[ -f $f ]] && is_elf_core "$f" && found+=("$f")
		done
	else
		# Expand what we know; anything else (%t, %c, %d, ...) matches any text.
		comm=$(basename "$C_EXE")
		comm=${comm:0:15}
		glob=
		while [[ -n $pattern ]]; do
			if [[ $pattern == %* && ${#pattern} -ge 2 ]]; then
				case ${pattern:1:1} in
				p | P | i | I) glob+=$pid ;;
				e) glob+=$comm ;;
				s) glob+=$C_SIG ;;
				u) glob+=$(id -u) ;;
				g) glob+=$(id -g) ;;
				h) glob+=$(hostname) ;;
				%) glob+=% ;;
				*) glob+='*' ;;
				esac
				pattern=${pattern:2}
			else
				case ${pattern:0:1} in
				'*' | '?' | '[') glob+="\\${pattern:0:1}" ;;
				*) glob+=${pattern:0:1} ;;
				esac
				pattern=${pattern:1}
			fi
		done
		if [[ $(read_core_pattern) != *%p* &&
			$(cat /proc/sys/kernel/core_uses_pid 2>/dev/null) == 1 ]]; then
			glob+=.$pid
		fi
		for f in $glob; do
			[[ -f $f ]] && is_elf_core "$f" && found+=("$f")
		done
	fi
	[[ ${#found[@]} -eq 1 ]] || return 1
	printf '%s\n' "${found[0]}"
}

# crash_kernel SCRATCH: run the case in SCRATCH with core dumps enabled and
# move the kernel's core to SCRATCH/core.  Sets CASE_PID.  On failure returns
# 1 with REASON set.
crash_kernel() {
	local scratch=$1 core
	(
		cd "$scratch" &&
			{ ulimit -c unlimited 2>/dev/null || ulimit -c hard; } &&
			exec env --default-signal "${C_LAUNCH[@]:-$C_EXE}" "${C_ARGS[@]}"
	) </dev/null >"$scratch/log" 2>&1 &
	CASE_PID=$!
	CHILD_PID=$CASE_PID
	if [[ -n $C_KILL ]]; then
		if ! wait_ready "$CASE_PID" "$scratch"; then
			kill -KILL "$CASE_PID" 2>/dev/null || true
			wait "$CASE_PID" 2>/dev/null || true
			CHILD_PID=
			REASON="$C_EXE never became ready to be killed"
			return 1
		fi
		kill -s "$C_SIG" "$CASE_PID"
	fi
	wait_bounded "$CASE_PID" "$CASE_TIMEOUT"
	CHILD_PID=
	if [[ $WAIT_STATUS -ne $((128 + C_SIG)) ]]; then
		REASON="exit status $WAIT_STATUS, wanted death by signal $C_SIG"
		[[ $WAIT_STATUS -eq 137 ]] && REASON+=" (killed after ${CASE_TIMEOUT}s?)"
		REASON+=": $(tail -n 2 "$scratch/log" | tr '\n' ' ')"
		return 1
	fi
	if ! core=$(find_kernel_core "$scratch" "$CASE_PID"); then
		REASON="the kernel wrote no core (core_pattern '$(read_core_pattern)')"
		return 1
	fi
	[[ $core == "$scratch/core" ]] || mv -f "$core" "$scratch/core"
}

# crash_gcore SCRATCH: run the case under gdb in SCRATCH, stop it at its fatal
# signal and write SCRATCH/core with gcore.  Sets CASE_PID.  On failure
# returns 1 with REASON set.
crash_gcore() {
	local scratch=$1 gdbpid i s pid
	local -a cmds=(-nx -batch -iex 'set debuginfod enabled off'
		-ex 'set pagination off'
		-ex 'set confirm off')
	if ! command -v gdb >/dev/null; then
		REASON="gdb is not installed"
		return 1
	fi
	# Stop only at the fatal signal; hand every other one to the program
	# (sighandler catches SIGSEGV before it aborts).
	for s in SEGV BUS FPE ILL ABRT; do
		if [[ $(signum "$s") -eq $C_SIG ]]; then
			cmds+=(-ex "handle SIG$s stop print nopass")
		else
			cmds+=(-ex "handle SIG$s nostop noprint pass")
		fi
	done
	cmds+=(-ex run -ex 'info inferiors' -ex "gcore $scratch/core" -ex kill)
	(cd "$scratch" && exec gdb "${cmds[@]}" --args "${C_LAUNCH[@]:-$C_EXE}" "${C_ARGS[@]}") \
		</dev/null >"$scratch/gdb.log" 2>&1 &
	gdbpid=$!
	CHILD_PID=$gdbpid
	if [[ -n $C_KILL ]]; then
		# The inferior is the child of gdb running C_EXE (gdb forks other
		# short-lived children too).
		pid=
		for ((i = 0; i < 1000 && ${#pid} == 0; i++)); do
			for s in $(pgrep -P "$gdbpid" || true); do
				[[ /proc/$s/exe -ef $C_REALEXE ]] && pid=$s && break
			done
			[[ -n $pid ]] || sleep 0.01
		done
		if [[ -z $pid ]] || ! wait_ready "$pid" "$scratch"; then
			kill -KILL "$gdbpid" 2>/dev/null || true
			[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
			wait "$gdbpid" 2>/dev/null || true
			CHILD_PID=
			REASON="$C_EXE never became ready under gdb"
			return 1
		fi
		kill -s "$C_SIG" "$pid"
	fi
	wait_bounded "$gdbpid" $((2 * CASE_TIMEOUT))
	CHILD_PID=
	CASE_PID=$(awk '$1 == "*" && $3 == "process" { print $4; exit }' "$scratch/gdb.log")
	# "Program received signal SIGABRT, ..." or "Thread 0x... received signal ..."
	if ! grep -q "received signal SIG$(kill -l "$C_SIG")," "$scratch/gdb.log"; then
		REASON="gdb did not see SIG$(kill -l "$C_SIG"): $(grep -m1 -E 'received signal|^\[Inferior' "$scratch/gdb.log" || true)"
		return 1
	fi
	if [[ ! $CASE_PID =~ ^[0-9]+$ || ! -s $scratch/core ]] || ! is_elf_core "$scratch/core"; then
		REASON="gcore wrote no core: $(grep -m1 -iE 'error|cannot|fail' "$scratch/gdb.log" || true)"
		return 1
	fi
}

# expect_line KEY VALUE: one line of the expect file.
expect_line() {
	local key=$1 value=$2
	if [[ $value == *[\"\$\`\\]* || $value == *$'\n'* ]]; then
		die "cannot write $key: value has quotes, \$, \` or \\: $value"
	fi
	if [[ $key == crash_chain || ! $value =~ ^[A-Za-z0-9_./+,:@%=-]*$ ]]; then
		printf '%s="%s"\n' "$key" "$value"
	else
		printf '%s=%s\n' "$key" "$value"
	fi
}

# generate_case CASE DEST: crash CASE (already described by case_setup) into
# DEST/core and write DEST/expect.  On failure returns 1 with REASON set.
generate_case() {
	local case=$1 dest=$2 method scratch
	REASON=
	if [[ ! -x $C_EXE ]]; then
		REASON="$C_EXE is missing (build the corpus first)"
		return 1
	fi
	mkdir -p "$dest"
	rm -f "$dest/core" "$dest/expect" "$dest/oracle"
	scratch=$dest/.scratch
	rm -rf "$scratch"
	mkdir "$scratch"
	SCRATCH_DIR=$scratch
	method=$(core_method)
	if [[ $method == gcore ]]; then
		info "$case: core_pattern is '$(read_core_pattern)' (or COREQ_CORE_METHOD=gcore): using the gdb gcore fallback"
	elif ! crash_kernel "$scratch" &&
		! { info "$case: $REASON: trying once more" &&
			rm -rf "$scratch" && mkdir "$scratch" && crash_kernel "$scratch"; }; then
		# A kernel core is the faithful one (gcore under gdb misses pages);
		# on a loaded machine one run in hundreds got none, so one retry first.
		info "$case: $REASON: falling back to gdb gcore"
		rm -rf "$scratch"
		mkdir "$scratch"
		method=gcore
	fi
	if [[ $method == gcore ]] && ! crash_gcore "$scratch"; then
		rm -rf "$scratch"
		SCRATCH_DIR=
		return 1
	fi
	mv -f "$scratch/core" "$dest/core"
	# A program's own account of its state (deadlock's oracle), kept beside the core.
	if [[ -f $scratch/oracle ]]; then
		mv -f "$scratch/oracle" "$dest/oracle"
	fi
	rm -rf "$scratch"
	SCRATCH_DIR=
	if [[ $C_THREADS == counted ]]; then # one NT_PRSTATUS note per thread
		C_THREADS=$(eu-readelf -n "$dest/core" | grep -c 'CORE .* PRSTATUS')
	fi
	{
		expect_line case "$case"
		expect_line exe "$C_REALEXE"
		expect_line debug_dir "$C_DEBUG_DIR"
		expect_line pid "$CASE_PID"
		expect_line signal "$C_SIG"
		expect_line threads "$C_THREADS"
		expect_line crash_chain "$C_CHAIN"
		expect_line method "$method"
	} >"$dest/expect.tmp"
	mv -f "$dest/expect.tmp" "$dest/expect"
	CASE_METHOD=$method
}

# multi_jobs: how many cores of a multi-core case to make at once.  One if
# the kernel writes every core to the same absolute path (no %p and
# core_uses_pid off): parallel crashes would overwrite each other's core.
multi_jobs() {
	local pattern cpus
	if [[ ${COREQ_CORE_JOBS:-} =~ ^[1-9][0-9]*$ ]]; then
		echo "$COREQ_CORE_JOBS"
		return
	fi
	pattern=$(read_core_pattern)
	cpus=$(nproc 2>/dev/null || echo 1)
	if [[ $(core_method) == kernel && $pattern == /* && $pattern != *%p* &&
		$(cat /proc/sys/kernel/core_uses_pid 2>/dev/null) != 1 ]]; then
		echo 1
	elif [[ $(core_method) == gcore ]]; then
		echo "$cpus"
	else
		echo $((cpus * 4 > 16 ? 16 : cpus * 4))
	fi
}

# generate_multi_case CASE DEST OUT: make the cores of the multi-core case
# CASE (bucket-100: bucket_multi at the sites of bucket_order) as
# DEST/core-000, DEST/core-001, ... and write DEST/expect (see README.md).
# Each core is made like a single case (generate_case, with its gcore
# fallback), several at once.  On failure returns 1 with REASON set.
MULTI_PIDS=()
generate_multi_case() {
	local case=$1 dest=$2 out=$3 work i name max n=0 pid methods
	local -a sites pids=() signals=() ms=()
	mapfile -t sites < <(bucket_order)
	REASON=
	rm -rf "$dest"
	mkdir -p "$dest"
	work=$dest/.work
	mkdir "$work"
	SCRATCH_DIR=$work
	max=$(multi_jobs)
	MULTI_PIDS=()
	for i in "${!sites[@]}"; do
		name=$(printf 'core-%03d' "$i")
		(
			if ! case_setup "bucket_multi-${sites[i]}" "$out"; then
				echo "$C_ERROR" >"$work/$name.reason"
				exit 1
			fi
			if ! generate_case "$name" "$work/$name" >"$work/$name.log" 2>&1; then
				echo "$REASON" >"$work/$name.reason"
				exit 1
			fi
		) </dev/null &
		MULTI_PIDS+=($!)
		n=$((n + 1))
		if ((n >= max)); then
			wait -n 2>/dev/null || true
			n=$((n - 1))
		fi
	done
	for pid in "${MULTI_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	MULTI_PIDS=()
	for i in "${!sites[@]}"; do
		name=$(printf 'core-%03d' "$i")
		if [[ ! -f $work/$name/core || ! -f $work/$name/expect ]]; then
			REASON="$name (site ${sites[i]}): $(cat "$work/$name.reason" 2>/dev/null || echo 'no core')"
			rm -rf "$work"
			SCRATCH_DIR=
			return 1
		fi
		pids+=("$(sed -n 's/^pid=//p' "$work/$name/expect")")
		signals+=("$(sed -n 's/^signal=//p' "$work/$name/expect")")
		ms+=("$(sed -n 's/^method=//p' "$work/$name/expect")")
		mv -f "$work/$name/core" "$dest/$name"
	done
	rm -rf "$work"
	SCRATCH_DIR=
	methods=$(printf '%s\n' "${ms[@]}" | sort -u)
	[[ $methods == *$'\n'* ]] && methods=mixed
	case_setup "$case" "$out" || return 1
	{
		expect_line case "$case"
		expect_line exe "$C_REALEXE"
		expect_line debug_dir "$C_DEBUG_DIR"
		expect_line cores "${#sites[@]}"
		expect_line threads "$C_THREADS"
		expect_line sites "${sites[*]}"
		expect_line pids "${pids[*]}"
		expect_line signals "${signals[*]}"
		for name in "${BUCKET_MULTI_SITES[@]}"; do
			case_setup "bucket_multi-$name" "$out" || return 1
			expect_line "chain_$name" "$C_CHAIN"
		done
		expect_line method "$methods"
	} >"$dest/expect.tmp"
	mv -f "$dest/expect.tmp" "$dest/expect"
	case_setup "$case" "$out"
	CASE_METHOD=$methods
}

# cleanup_on_exit: kill the child still running (if any) and remove the
# scratch directory.  Install with: trap cleanup_on_exit EXIT
CHILD_PID=
SCRATCH_DIR=
cleanup_on_exit() {
	local pid
	if [[ -n $CHILD_PID ]]; then
		kill -KILL "$CHILD_PID" 2>/dev/null || true
		wait "$CHILD_PID" 2>/dev/null || true
	fi
	for pid in "${MULTI_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [[ -n $SCRATCH_DIR ]]; then
		rm -rf "$SCRATCH_DIR"
	fi
}
