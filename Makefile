# coreq build.  `make` builds a release binary (build/coreq); `make test`
# builds with ASan+UBSan and runs every test; `make demo` crashes a corpus
# program and analyses its core.  `make deps` installs what is missing.
#
# Layers, lowest first; a file includes only from its own layer and those
# below it (tests/check-layers enforces this on every build and in make test):
#   libcore/base      errors, architecture facts, bytes, paths, JSON writer,
#                     the address space (memory), named statistics
#   unwind            the target interface (target.h), frame model, CFI
#                     tables, expressions, the native walker, and
#   unwind/async        the async runtimes (one file each, one table line);
#                       both see the process only through struct cq_unwind_target
#   libcore/formats   lws codec, lws log lines, the stack blob
#   libcore/model     the core file: source, notes, modules, TLS
#   libcore/db        SQLite opening, migrations, the unwind/symbol cache
#   libcore/symbols   debuginfo finder, demangler, symbolizer, provenance
#   libcore/analysis  the target over a core, every thread's stack
#   libcore/triage    crash buckets
#   libcore/capture   systemd/hook metadata, core spooling
#   libcore/store     the crash database: writes and queries
#   libcore/pipeline  capture -> analyse -> bucket -> store, lws ingest
#   cmd               the coreq executable: options, one call, output

PREFIX   ?= /usr/local
# `make CROSS=aarch64` builds coreq for aarch64 with Debian's cross compiler
# into build/aarch64 (see "cross build" below); CROSS empty builds for this host.
CROSS    ?=
ifneq ($(CROSS),)
BUILD    ?= build/$(CROSS)
CROSS_TRIPLET := $(CROSS)-linux-gnu
CC       := $(CROSS_TRIPLET)-gcc
AR       := $(CROSS_TRIPLET)-ar
# The target's own .pc files (its -dev packages, installed as :arm64 beside
# the host's), never the host's include paths.
PKG_CONFIG := PKG_CONFIG_LIBDIR=/usr/lib/$(CROSS_TRIPLET)/pkgconfig:/usr/share/pkgconfig pkg-config
endif
BUILD    ?= build
CC       ?= cc
CXX      ?= c++
PKG_CONFIG ?= pkg-config
PKGS     := libelf libdw libarchive sqlite3 libdeflate libcurl libdebuginfod
FUZZ_SECONDS ?= 30
VERSION  := 0.1.0

# The aarch64 build's libraries, installed beside the host's (make deps runs
# dpkg --add-architecture arm64 first); its unit tests' cmocka and sanitizer
# runtimes, which qemu-aarch64 loads from the same multiarch directories.
ARM64_PKGS := libelf-dev:arm64 libdw-dev:arm64 libarchive-dev:arm64 libsqlite3-dev:arm64 \
	libdeflate-dev:arm64 libzstd-dev:arm64 libiberty-dev:arm64 zlib1g-dev:arm64 libcurl4-openssl-dev:arm64 \
	libdebuginfod-dev:arm64 libcmocka-dev:arm64 libasan8:arm64 libubsan1:arm64
# Debian packages: libraries, test oracles (eu-readelf, eu-stack, gdb,
# gdb-multiarch), the compressors the tests feed coreq, and the aarch64 cross
# toolchain and qemu-user that make the aarch64 corpus.
DEPS_PKGS := build-essential pkg-config libelf-dev libdw-dev libarchive-dev \
	libsqlite3-dev libdeflate-dev libzstd-dev libiberty-dev libcmocka-dev elfutils gdb zstd xz-utils \
	lz4 bzip2 attr python3 clang libclang-rt-14-dev binutils sqlite3 time libc6-dbg \
	systemd gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user \
	gdb-multiarch libcurl4-openssl-dev clickhouse-server clickhouse-client \
	libdebuginfod-dev debuginfod bash-completion chromium librust-tokio-dev \
	libasio-dev libboost1.74-dev librust-smol-dev librust-futures-executor-dev librust-num-cpus-dev \
	librust-async-std-dev librust-parking-lot-dev $(ARM64_PKGS) file dpkg-dev lintian strace
# Real programs nobody on the team wrote, with their debuginfo, for the
# corpus cases real-syslog-ng and real-python3d (corpus/real/), and the
# servers tests/e2e/test_real_servers.py crashes under load.
DEPS_PKGS += syslog-ng-core syslog-ng-dbg python3.11-dbg redis-server redis-tools memcached
# More real servers for tests/e2e/test_real_server_corpus.py (nginx under ab, a postgresql-15 backend).
DEPS_PKGS += nginx-light apache2-utils postgresql-15
# tests/fresh-root/run and tests/systemd-real/run (which .ci/run runs) make
# fresh Debian 12 roots with it; the second boots its root with systemd-nspawn.
DEPS_PKGS += mmdebstrap systemd-container
# Go (issue 48): the toolchain that builds corpus/go (make go-corpus), delve
# (dlv core: the goroutine oracle of tests/e2e/test_go_goroutines.py), and a
# real Debian Go servers (caddy, prometheus: both stripped) crashed under
# load; corpus/go_crash (make go-crash-corpus) for tests/e2e/test_go_buckets.py;
# make bench's goroutine row.
DEPS_PKGS += golang-go delve caddy prometheus curl
# Python (issue 49): real Debian Python servers tests/e2e/test_python.py kills
# under load (Twisted's twistd3 web, an aiohttp server).
DEPS_PKGS += python3-twisted python3-aiohttp

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wformat=2 -Wno-format-nonliteral
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
# libarchive, libcurl and libdebuginfod are loaded when a command needs
# them (libcore/base/dynlib.h), not linked: their headers only.  dlopen is
# in glibc's libc (2.34 and later), so no -ldl.
LINK_PKGS := libelf libdw sqlite3 libdeflate libzstd
PKG_LIBS   = $(shell $(PKG_CONFIG) --libs $(LINK_PKGS) 2>/dev/null) -liberty -lz
# The unit tests read the stored core back with libarchive directly.
TEST_LIBS  = $(shell $(PKG_CONFIG) --libs libarchive 2>/dev/null)
INCLUDES := -I. -I$(BUILD)/gen
BASE_CFLAGS = -std=gnu11 -D_GNU_SOURCE -DCOREQ_VERSION=\"$(VERSION)\" $(WARN) $(INCLUDES) $(PKG_CFLAGS) -MMD -MP

# Asserts stay on in release too (no -DNDEBUG): they guard coreq's own
# invariants, never what a core's bytes decide (docs/invariants.md).
REL_CFLAGS  = $(BASE_CFLAGS) -O2 -g
ASAN_CFLAGS = $(BASE_CFLAGS) -DCQ_TEST_RUNTIMES -O1 -g -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
ASAN_LDFLAGS = -fsanitize=address,undefined

LIB_SRCS := $(sort $(wildcard libcore/*/*.c unwind/*.c unwind/async/*.c))
CMD_SRCS := $(sort $(wildcard cmd/*.c))
GEN_SRCS := $(BUILD)/gen/schema_sql.c $(BUILD)/gen/schema_snapshot.c $(BUILD)/gen/default_rules.c
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
SCHEMA_SQL := $(sort $(wildcard schema/*.sql))

REL_OBJS  := $(patsubst %.c,$(BUILD)/release/%.o,$(LIB_SRCS) $(GEN_SRCS:$(BUILD)/%=%))
ASAN_OBJS := $(patsubst %.c,$(BUILD)/asan/%.o,$(LIB_SRCS) $(GEN_SRCS:$(BUILD)/%=%))
REL_CMD   := $(patsubst %.c,$(BUILD)/release/%.o,$(CMD_SRCS))
ASAN_CMD  := $(patsubst %.c,$(BUILD)/asan/%.o,$(CMD_SRCS))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/asan/tests/%,$(UNIT_SRCS))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all deps demo-deps test demo bench fuzz fuzz-build install format clean corpus go-corpus go-crash-corpus layers man hostile \
	aarch64 test-aarch64 deb

all: $(BUILD)/coreq $(BUILD)/layers.ok $(BUILD)/functions.ok man

# The layer check (see the layer list above): includes, cmd/'s includes of
# the library's public headers (libcore/public-headers), and, from the
# release objects' symbols, calls upward and file-level call cycles.
LAYER_FILES := $(sort $(wildcard libcore/*/*.[ch] unwind/*.[ch] unwind/async/*.[ch] cmd/*.[ch]))
$(BUILD)/layers.ok: tests/check-layers libcore/public-headers $(LAYER_FILES) $(REL_OBJS) $(REL_CMD)
	@mkdir -p $(BUILD)
	tests/check-layers --objects $(BUILD)/release && touch $@
layers: $(BUILD)/layers.ok

# No cmd/ function over 60 lines (issue 47; tests/check-functions).
$(BUILD)/functions.ok: tests/check-functions $(CMD_SRCS)
	@mkdir -p $(BUILD)
	tests/check-functions && touch $@

# ---- man pages ------------------------------------------------------------
# coreq.1 is the overview; each man/coreq-CMD.1.in is a command's page,
# whose SYNOPSIS and OPTIONS the release binary prints from the option
# table (coreq CMD --help-man), the one source of --help too.
MAN_IN    := $(sort $(wildcard man/*.1.in))
MAN_PAGES := $(patsubst man/%.1.in,$(BUILD)/man/%.1,$(MAN_IN))
$(BUILD)/man/%.1: man/%.1.in man/build-page $(BUILD)/coreq
	@mkdir -p $(dir $@)
	man/build-page $(BUILD)/coreq $< > $@.tmp && mv $@.tmp $@
man: $(MAN_PAGES)

# ---- dependencies -------------------------------------------------------
# What `make demo` runs needs far less: the build (with libcurl's and
# libdebuginfod's headers, and the sqlite3 shell that snapshots the schema),
# the two corpus programs it crashes (C and C++), and gdb for gcore where the
# kernel cannot dump a core.  tests/fresh-root/run checks this list on a
# fresh Debian 12 root.
DEMO_PKGS := build-essential pkg-config libelf-dev libdw-dev libarchive-dev libsqlite3-dev \
	libdeflate-dev libzstd-dev libiberty-dev libcurl4-openssl-dev libdebuginfod-dev sqlite3 gdb

deps: INSTALL_PKGS = $(DEPS_PKGS)
demo-deps: INSTALL_PKGS = $(DEMO_PKGS)
deps demo-deps:
	@missing=""; for p in $(INSTALL_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' \
			|| missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root (or install:$$missing)"; exit 1; fi; \
		case "$$missing" in *:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 \
			|| dpkg --add-architecture arm64 || exit 1;; esac; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
			|| { echo "make deps: apt-get failed"; exit 1; }; \
	fi

# ---- generated sources --------------------------------------------------
# The schema migrations are compiled into the binary as C strings.
# The default bucketing rules (dist/coreq.rules) as one C string.
$(BUILD)/gen/default_rules.c: dist/coreq.rules
	@mkdir -p $(dir $@)
	{ echo '/* Generated from dist/coreq.rules by the Makefile. */'; \
	  echo 'const char cq_bucket_default_rules[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/gen/schema_sql.c: $(SCHEMA_SQL) schema/embed.sh
	@mkdir -p $(dir $@)
	sh schema/embed.sh $(SCHEMA_SQL) > $@.tmp && mv $@.tmp $@
# What each migration leaves in sqlite_schema (the schema check's fast path).
$(BUILD)/gen/schema_snapshot.c: $(SCHEMA_SQL) schema/snapshot.sh
	@mkdir -p $(dir $@)
	sh schema/snapshot.sh $(SCHEMA_SQL) > $@.tmp && mv $@.tmp $@

# ---- release ------------------------------------------------------------
$(BUILD)/release/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -c $< -o $@
$(BUILD)/release/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -c $< -o $@
$(BUILD)/release/libcoreq.a: $(REL_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/coreq: $(REL_CMD) $(BUILD)/release/libcoreq.a
	$(CC) -Wl,-z,relro,-z,now -o $@ $^ $(PKG_LIBS)

# ---- sanitized build for tests -------------------------------------------
$(BUILD)/asan/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -c $< -o $@
$(BUILD)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -c $< -o $@
$(BUILD)/asan/libcoreq.a: $(ASAN_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/asan/coreq: $(ASAN_CMD) $(BUILD)/asan/libcoreq.a
	$(CC) $(ASAN_LDFLAGS) -o $@ $^ $(PKG_LIBS)
$(BUILD)/asan/tests/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -c $< -o $@
$(BUILD)/asan/tests/%: $(BUILD)/asan/tests/%.o $(BUILD)/asan/libcoreq.a
	$(CC) $(ASAN_LDFLAGS) -o $@ $^ $(PKG_LIBS) $(TEST_LIBS) -lcmocka
# Unit tests of cmd/ code link its object too.
$(BUILD)/asan/tests/test_task_groups: $(BUILD)/asan/cmd/task_groups.o

# ---- fuzz targets (clang + libFuzzer) --------------------------------------
FUZZ_CFLAGS = -std=gnu11 -D_GNU_SOURCE -DCOREQ_VERSION=\"$(VERSION)\" $(INCLUDES) $(PKG_CFLAGS) -g -O1 \
	-fsanitize=fuzzer,address,undefined
# The library is compiled once for every fuzz target (instrumented for
# coverage, without libFuzzer's main) and each target links that archive.
FUZZ_LIB_CFLAGS = $(subst -fsanitize=fuzzer,-fsanitize=fuzzer-no-link,$(FUZZ_CFLAGS))
FUZZ_OBJS := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(LIB_SRCS) $(GEN_SRCS:$(BUILD)/%=%))
$(BUILD)/fuzz/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_LIB_CFLAGS) -c $< -o $@
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_LIB_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/fuzz/libcoreq.a: $(FUZZ_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/fuzz/%: tests/fuzz/%.c $(BUILD)/fuzz/libcoreq.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(BUILD)/fuzz/libcoreq.a $(PKG_LIBS)
fuzz-build: $(FUZZ_BINS)
fuzz: deps fuzz-build
	@for f in $(FUZZ_BINS); do \
		n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus-$$n; \
		echo "fuzz: $$n for $(FUZZ_SECONDS)s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
			$(BUILD)/fuzz/corpus-$$n tests/fuzz/seeds/$$n 2>&1 | tail -n 3 || exit 1; \
	done

# ---- corpus, tests, demo, bench ------------------------------------------
corpus:
	$(MAKE) -C corpus OUT=$(abspath $(BUILD))/corpus

# The Go programs of corpus/go and their cores (tests/e2e/test_go_goroutines.py makes them too).
go-corpus:
	corpus/go/make-go-cores $(abspath $(BUILD))/go-corpus

# corpus/go_crash's Go program, crashed once per mode and flag set
# (tests/e2e/test_go_buckets.py makes them too).
go-crash-corpus:
	corpus/go_crash/make-go-crash-cores $(abspath $(BUILD))/go-crash-corpus

# The builds use every CPU (JOBS); the corpus is built one program at a time.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/layers.ok $(BUILD)/functions.ok $(BUILD)/asan/coreq \
		$(UNIT_BINS) $(BUILD)/coreq
	@$(MAKE) --no-print-directory man
	@$(MAKE) --no-print-directory -j$(JOBS) CROSS=aarch64 BUILD=$(A64) $(A64)/coreq \
		$(patsubst %,$(A64)/asan/tests/%,$(A64_UNIT_SAMPLE))
	@$(MAKE) --no-print-directory corpus
	@$(MAKE) --no-print-directory -j$(JOBS) fuzz-build
	@tests/run $(BUILD)

# ---- aarch64 and the Debian packages --------------------------------------
# `make CROSS=aarch64` (or `make aarch64`) builds build/aarch64/coreq with
# aarch64-linux-gnu-gcc and the arm64 libraries (make deps installs them).
# make test runs a sample of its unit tests and cores under qemu-aarch64
# (tests/e2e/test_aarch64_build.py); make test-aarch64 runs all of them.
A64 := $(BUILD)/aarch64
A64_UNIT_SAMPLE := test_arch test_notes test_frames test_unwinder test_lws_codec \
	test_stack_blob test_store test_capture test_bucket test_json test_cfi_table \
	test_symbolizer
# Every unit test runs under qemu: test_cfi_table has aarch64 twins of its
# .cfi fixtures, and test_symbolizer's crashing child unmaps the ASan shadow
# first (qemu-user writes a guest's core of every readable page: 56 GB).
A64_UNIT_SRCS := $(UNIT_SRCS)
aarch64:
	@$(MAKE) --no-print-directory CROSS=aarch64 BUILD=$(A64) $(A64)/coreq
test-aarch64: deps
	@$(MAKE) --no-print-directory $(BUILD)/coreq corpus
	@$(MAKE) --no-print-directory CROSS=aarch64 BUILD=$(A64) $(A64)/coreq \
		$(patsubst tests/unit/%.c,$(A64)/asan/tests/%,$(A64_UNIT_SRCS))
	COREQ_AARCH64_ALL=1 COREQ_RELEASE=$(abspath $(BUILD))/coreq CORPUS=$(abspath $(BUILD))/corpus \
		COREQ_BUILD=$(abspath $(BUILD)) COREQ_ROOT=$(CURDIR) tests/e2e/test_aarch64_build.py

# `make deb`: build/deb/coreq_VERSION_amd64.deb and _arm64.deb, staged by
# dist/debian/build-deb from the two release builds, then lintian on both.
DEB_DATE = $(shell dpkg-parsechangelog -l dist/debian/changelog -S Timestamp)
deb: $(BUILD)/coreq
	@$(MAKE) --no-print-directory CROSS=aarch64 BUILD=$(A64) $(A64)/coreq
	@mkdir -p $(BUILD)/deb
	@$(MAKE) --no-print-directory man
	SOURCE_DATE_EPOCH=$(DEB_DATE) dist/debian/build-deb amd64 $(BUILD)/coreq $(BUILD)/deb $(BUILD)/man
	SOURCE_DATE_EPOCH=$(DEB_DATE) dist/debian/build-deb arm64 $(A64)/coreq $(BUILD)/deb $(BUILD)/man
	lintian --fail-on error,warning $(BUILD)/deb/coreq_*_amd64.deb $(BUILD)/deb/coreq_*_arm64.deb

# The demo builds and crashes only the corpus programs it shows.
DEMO_BINS := $(abspath $(BUILD))/corpus/bin/O0/abort_deep $(abspath $(BUILD))/corpus/bin/O2key32/async_coro
demo: demo-deps
	@$(MAKE) --no-print-directory $(BUILD)/coreq
	@$(MAKE) --no-print-directory -C corpus OUT=$(abspath $(BUILD))/corpus $(DEMO_BINS)
	@corpus/demo $(BUILD)

# Damaged inputs of every class at scale: N per class (tests/hostile/hostile.py;
# make test runs 25 per class).
N ?= 200
hostile: deps
	@$(MAKE) --no-print-directory $(BUILD)/asan/coreq $(BUILD)/coreq corpus
	COREQ=$(abspath $(BUILD))/asan/coreq COREQ_RELEASE=$(abspath $(BUILD))/coreq \
		tests/hostile/hostile.py --corpus $(abspath $(BUILD))/corpus \
		--out $(abspath $(BUILD))/hostile --per-class $(N) --seed $${SEED:-16}

bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/coreq corpus
	@tests/bench/run $(BUILD)

# systemd units go under $(PREFIX)/lib/systemd/system, ExecStart naming the
# installed binary.
UNITDIR ?= $(PREFIX)/lib/systemd/system
install: $(BUILD)/coreq man
	install -D -m 0755 $(BUILD)/coreq $(DESTDIR)$(PREFIX)/bin/coreq
	install -D -m 0644 coreq.1 $(DESTDIR)$(PREFIX)/share/man/man1/coreq.1
	for f in $(MAN_PAGES); do \
		install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/man/man1/$${f##*/} || exit 1; \
	done
	install -D -m 0644 dist/bash-completion/coreq $(DESTDIR)$(PREFIX)/share/bash-completion/completions/coreq
	install -D -m 0644 dist/coreq.rules $(DESTDIR)$(PREFIX)/share/coreq/rules
	install -D -m 0644 dist/systemd/coreq-ingest.path $(DESTDIR)$(UNITDIR)/coreq-ingest.path
	sed 's|@BINDIR@|$(PREFIX)/bin|g' dist/systemd/coreq-ingest.service.in > $(BUILD)/coreq-ingest.service
	install -D -m 0644 $(BUILD)/coreq-ingest.service $(DESTDIR)$(UNITDIR)/coreq-ingest.service
	sed 's|@BINDIR@|$(PREFIX)/bin|g' dist/systemd/coreq-push.service.in > $(BUILD)/coreq-push.service
	install -D -m 0644 $(BUILD)/coreq-push.service $(DESTDIR)$(UNITDIR)/coreq-push.service
	install -D -m 0644 dist/systemd/coreq-push.timer $(DESTDIR)$(UNITDIR)/coreq-push.timer
	for f in schema/clickhouse/*.sql; do \
		install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/coreq/clickhouse/$${f##*/} || exit 1; \
	done
	install -D -m 0644 'dist/systemd/systemd-coredump@.service.d/coreq.conf' \
		'$(DESTDIR)$(UNITDIR)/systemd-coredump@.service.d/coreq.conf'
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/coreq/README.md
	for f in docs/*.md; do \
		install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/doc/coreq/$$f || exit 1; \
	done

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -path '$(BUILD)/hostile' -prune -o -path '$(BUILD)/aarch64' -prune -o -path '$(BUILD)/corpus' -prune -o -type f -name '*.d' -print 2>/dev/null)
