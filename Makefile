# simfs: `make test` and `make demo` each do the whole set-up on a fresh Debian machine (as root).
# The interpreter: the distribution's own python3 where there is one. Debian builds it with
# profile-guided and link-time optimisation, linked statically; a default build from source
# (pyenv's: no --enable-optimizations, a shared libpython) takes about a fifth more real time
# for the same simulation (docs/speed.md). `make PYTHON=...` picks another.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
VENV   := .venv
PY     := $(VENV)/bin/python
SYSTEM_PKGS := fuse3 libfuse3-dev pkg-config e2fsprogs gcc python3-venv python3-dev chromium jq bison flex blktrace fio curl patch
STAMP  := $(VENV)/.installed

# fsx and pjdfstest (POSIX suites run by tests/mount/test_fsx.py, tests/mount/test_pjdfstest.py) are Rust
# crates, built with cargo into $(TOOLS) (pinned versions, --locked), once: a stamp per version.
# They need Rust >= 1.85: a rustup cargo (CARGO_HOME or ~/.cargo) is preferred to one on PATH.
TOOLS             := .cargo-tools
FSX_VERSION       := 0.3.2
PJDFSTEST_VERSION := 0.2.2
FSX_STAMP         := $(TOOLS)/.fsx-$(FSX_VERSION)-munmap
TOOL_STAMPS       := $(FSX_STAMP) $(TOOLS)/.pjdfstest-$(PJDFSTEST_VERSION)
# fsx is built from its crate with one fix (third_party/fsx/README.md), the crate checked by SHA-256
# (fetched from crates.io's CDN, else from where the registry's index says crates are)
FSX_CRATE_URL     ?= https://static.crates.io/crates/fsx/fsx-$(FSX_VERSION).crate
FSX_CRATE_SHA256  := 72680bb1e43d40729d5f6e9de5bbe604820ff51e4707e109cb5082ec67d022a2
ifeq ($(origin CARGO),undefined)
CARGO := $(firstword $(wildcard $(if $(CARGO_HOME),$(CARGO_HOME)/bin/cargo) $(HOME)/.cargo/bin/cargo \
                                /root/.cargo/bin/cargo) $(shell command -v cargo 2>/dev/null))
endif
SOAK_OPS       ?= 1000000
SOAK_ALLOC_OPS ?= 100000

# xfstests (tests/xfstests/run.py; README.fuse: FSTYP=fuse, FUSE_SUBTYP=.simfs): the Debian
# packages its README lists (linux-headers-$(uname -r) left out: not needed to build, and not
# packaged for every kernel), the source a git repository, bundle or URL (default: the bundle in
# ../shared/third_party beside the checkout), built once into $(XFSTESTS_DIR) (a stamp names the
# source and commit). `make xfstests` runs $(XFSTESTS_ARGS) on simfs, `make xfstests-ext2` on the
# kernel's ext2 (loop devices), each into $(XFSTESTS_OUT)/FS; `make test` builds it when the
# bundle is there and runs tests/mount/test_xfstests.py's fixed subset.
XFSTESTS_PKGS := acl attr automake bc dbench dump e2fsprogs fio gawk gcc git indent libacl1-dev \
                 libaio-dev libcap-dev libgdbm-dev libgdbm-compat-dev libtool libtool-bin \
                 liburing-dev libuuid1 lvm2 make psmisc python3 quota sed sqlite3 uuid-dev \
                 uuid-runtime xfsprogs xfslibs-dev
XFSTESTS_SOURCE ?=
export XFSTESTS_SOURCE
XFSTESTS_DIR    := .xfstests
XFSTESTS_ARGS   ?= -g quick
XFSTESTS_OUT    ?= results/xfstests
XFSTESTS_RUN     = $(PY) tests/xfstests/run.py
XFSTESTS_SRCOPT  = $(if $(XFSTESTS_SOURCE),--source $(XFSTESTS_SOURCE))
XFSTESTS_STORE   = --failures-store $(XFSTESTS_OUT)/failures

.PHONY: all system venv compiled tools test test-long docs demo bench bench-compare soak soak-alloc soak-writeback clean \
        xfstests-system xfstests-build xfstests-build-if-present xfstests xfstests-ext2 xfstests-ext4 xfstests-simfs-ext4 lint test-split

all: venv

# Debian packages $(1), installed only where missing (apt-get update first); $(2) says for what.
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages$(2):$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

system:
	$(call apt_install,$(SYSTEM_PKGS),)

xfstests-system:
	$(call apt_install,$(XFSTESTS_PKGS), for xfstests)

EXAMPLE_PLUGINS := examples/simfs-example-plugins

$(STAMP): setup.cfg pyproject.toml constraints-dev.txt $(EXAMPLE_PLUGINS)/setup.cfg $(EXAMPLE_PLUGINS)/pyproject.toml
	$(MAKE) system
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints-dev.txt -e '.[test,compiled]'
	# the example plug-in package (entry points: allocator stride, dirorder newest-first,
	# disk model ssd/x25-m); tests/mount/test_plugin_mount.py mounts with it
	$(PY) -m pip install -q -e $(EXAMPLE_PLUGINS)
	# /sbin/mount.fuse.simfs: `mount -t fuse.simfs` and fstab lines (root only; docs/mounting.md)
	# machine-wide, so installed here only where none works (none, or its clone is gone):
	# `make install-helper` points it at this clone
	if [ "$$(id -u)" = 0 ]; then $(PY) -m simfs.cli install-helper --if-missing || echo "(mount -t fuse.simfs needs make install-helper)"; fi
	touch $@

# /sbin/mount.fuse.simfs runs this clone from now on, for every user (simfs install-helper --status)
install-helper: $(STAMP)
	$(PY) -m simfs.cli install-helper

venv: $(STAMP) compiled

# the compiled hot path (simfs/compiled): Cython builds of the data-path modules into
# build/compiled, remade for what changed (a second or so when nothing did); a module edited
# since its build runs from its source, never from the stale build
compiled: $(STAMP)
	$(PY) -m simfs.compiled build -j $$(nproc)

# cargo install TOOL VERSION, into $(TOOLS)/bin; the stamp records the version installed.
define cargo_install
	@test -n "$(CARGO)" || { echo "cargo not found: install Rust >= 1.85 (rustup) or run make CARGO=/path/to/cargo" >&2; exit 1; }
	$(CARGO) install --quiet --locked --root $(TOOLS) --version =$(2) $(1)
	@touch $@
endef

$(FSX_STAMP): third_party/fsx/domapread-munmap.patch
	@test -n "$(CARGO)" || { echo "cargo not found: install Rust >= 1.85 (rustup) or run make CARGO=/path/to/cargo" >&2; exit 1; }
	rm -rf $(TOOLS)/src/fsx-$(FSX_VERSION) && mkdir -p $(TOOLS)/src
	curl -sfL -o $(TOOLS)/src/fsx.crate $(FSX_CRATE_URL) || curl -sfL -o $(TOOLS)/src/fsx.crate \
	  "$$(curl -sf https://index.crates.io/config.json | sed -n 's/.*"dl": *"\([^"]*\)".*/\1/p')/fsx/$(FSX_VERSION)/download"
	echo "$(FSX_CRATE_SHA256)  $(TOOLS)/src/fsx.crate" | sha256sum -c --quiet
	tar -xzf $(TOOLS)/src/fsx.crate -C $(TOOLS)/src
	patch -s -d $(TOOLS)/src/fsx-$(FSX_VERSION) -p1 < third_party/fsx/domapread-munmap.patch
	$(CARGO) install --quiet --locked --force --root $(TOOLS) --path $(TOOLS)/src/fsx-$(FSX_VERSION)
	@touch $@

$(TOOLS)/.pjdfstest-$(PJDFSTEST_VERSION):
	$(call cargo_install,pjdfstest,$(PJDFSTEST_VERSION))

tools: $(TOOL_STAMPS)

# clone + make (a no-op when the stamp matches the source)
xfstests-build: $(STAMP) xfstests-system
	$(XFSTESTS_RUN) build $(XFSTESTS_SRCOPT) --dir $(XFSTESTS_DIR)

# for `make test`: built only where the source is there (tests/mount/test_xfstests.py says why
# it skips otherwise); CI has ../shared beside its clone
xfstests-build-if-present: $(STAMP)
	@if $(XFSTESTS_RUN) build $(XFSTESTS_SRCOPT) --dir $(XFSTESTS_DIR) --check-source; then \
	  $(MAKE) --no-print-directory xfstests-build; \
	else echo "xfstests: no source, tests/mount/test_xfstests.py will skip"; fi

xfstests: xfstests-build compiled
	$(XFSTESTS_RUN) run $(XFSTESTS_SRCOPT) --dir $(XFSTESTS_DIR) --fs simfs --out $(XFSTESTS_OUT)/simfs $(XFSTESTS_STORE) -- $(XFSTESTS_ARGS)

xfstests-ext2: xfstests-build
	$(XFSTESTS_RUN) run $(XFSTESTS_SRCOPT) --dir $(XFSTESTS_DIR) --fs ext2 --out $(XFSTESTS_OUT)/ext2 $(XFSTESTS_STORE) -- $(XFSTESTS_ARGS)

# the second baseline: the kernel's ext4 without a journal (simfs's ext4 profile's features)
# beside simfs on `simfs mkfs --profile ext4` images
xfstests-ext4: xfstests-build
	$(XFSTESTS_RUN) run $(XFSTESTS_SRCOPT) --dir $(XFSTESTS_DIR) --fs ext4 --out $(XFSTESTS_OUT)/ext4 $(XFSTESTS_STORE) -- $(XFSTESTS_ARGS)

xfstests-simfs-ext4: xfstests-build compiled
	$(XFSTESTS_RUN) run $(XFSTESTS_SRCOPT) --dir $(XFSTESTS_DIR) --fs simfs --profile ext4 --out $(XFSTESTS_OUT)/simfs-ext4 $(XFSTESTS_STORE) -- $(XFSTESTS_ARGS)

# ruff with the rules pyproject.toml chooses (bugs, not style); a finding fails make test first
RUFF_STAMP := $(VENV)/.ruff-0.17.5
$(RUFF_STAMP): $(STAMP)
	$(PY) -m pip install -q ruff==0.17.5
	touch $@
# then mypy on the plug-in contracts and the layers below FUSE (pyproject.toml's [tool.mypy]):
# a finding not in tools/mypy_baseline.txt fails (tools/mypy_baseline.py; cache in .mypy_cache)
MYPY_STAMP := $(VENV)/.mypy-2.4.1
$(MYPY_STAMP): $(STAMP)
	$(PY) -m pip install -q mypy==2.4.1
	touch $@
lint: $(RUFF_STAMP) $(MYPY_STAMP)
	$(PY) -m ruff check --no-cache .
	$(PY) tools/mypy_baseline.py

# two pytest runs over tests/, both without the `long` cases: on every CPU (pytest-xdist, a
# worker a CPU, each file on one worker) the in-process tests and the FUSE mounts of a test's own
# image, then the `serial` ones one at a time: what shares machine-wide state (loop devices and
# kernel mounts, /sbin/mount.fuse.simfs, a real-time bound, xfstests; tests/conftest.py says
# which). Both always run; make test fails if either did, or if tests/suite_split.py finds a test
# in both parts or in neither; a file or part over its budget (tests/test_budget.toml) is a
# warning line (a timing is a benchmark's figure, not a test's verdict). The
# per-file durations stay in build/test-record/ (durations.txt: the slowest files of each part).
# make test's temporary files on a tmpfs where there is one (/dev/shm): its images are fsync'd at
# every commit, half of some files' time on a shared disk; setup.cfg keeps only failed tests' dirs
TEST_TMPDIR := $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})
PYTEST_TEST := TMPDIR=$(TEST_TMPDIR) $(PY) -m pytest -q -p no:cacheprovider --durations=25
TEST_RECORD := build/test-record
test: $(STAMP) compiled $(TOOL_STAMPS) lint docs xfstests-build-if-present
	status=0; rm -rf $(TEST_RECORD); \
	SIMFS_TEST_RECORD=$(TEST_RECORD)/parallel \
	  $(PYTEST_TEST) -m "not long and not serial" -n $$(nproc) --dist loadfile || status=1; \
	SIMFS_TEST_RECORD=$(TEST_RECORD)/serial $(PYTEST_TEST) -m "not long and serial" || status=1; \
	$(PY) -m tests.suite_split $(TEST_RECORD)/parallel $(TEST_RECORD)/serial > $(TEST_RECORD)/durations.txt \
	  || status=1; cat $(TEST_RECORD)/durations.txt; \
	exit $$status

# the split alone, from two collections (no test run; about half a minute): after changing marks
test-split: $(STAMP)
	rm -rf $(TEST_RECORD)-collect
	SIMFS_TEST_RECORD=$(TEST_RECORD)-collect/parallel $(PY) -m pytest -q -p no:cacheprovider --collect-only \
	  -m "not long and not serial" > /dev/null
	SIMFS_TEST_RECORD=$(TEST_RECORD)-collect/serial $(PY) -m pytest -q -p no:cacheprovider --collect-only \
	  -m "not long and serial" > /dev/null
	$(PY) -m tests.suite_split $(TEST_RECORD)-collect/parallel $(TEST_RECORD)-collect/serial

# the cases left out of `make test` for its time (marked `long`; each has a shorter sibling there):
# fsx under the less used allocators (on both profiles), the corruption corpus's second base
# beyond its block-pointer cases, the htree-against-the-kernel property and the 100,000-entry
# directory
test-long: $(STAMP) compiled $(TOOL_STAMPS)
	$(PY) -m pytest -q -p no:cacheprovider --durations=10 -m long

# the manual: docs/ built into site/ with MkDocs (Material theme); --strict turns every warning
# (a broken link or anchor, a page left out of the nav) into a failure. The command pages and the
# option, policy and preset tables are made from the code at each build (docs/gen_pages.py).
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP) setup.cfg
	$(PY) -m pip install -q -e '.[docs]'
	touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(PY) -m mkdocs build --strict

demo: $(STAMP) compiled
	$(PY) -m experiments.demo

bench: $(STAMP) compiled
	$(PY) -m benchmarks.run

# BASE (and HEAD, else the working tree) side by side in one run: least CPU time of ROUNDS runs
# of each probe on each, in turns (benchmarks/compare.py; not a gate, CI does not run it)
ROUNDS ?= 3
bench-compare: $(STAMP) compiled
	@test -n "$(BASE)" || { echo "make bench-compare BASE=<commit> [HEAD=<commit>] [ROUNDS=3]" >&2; exit 2; }
	$(PY) -m benchmarks.compare $(BASE) $(if $(HEAD),--head $(HEAD)) --rounds $(ROUNDS)

# fsx with $(SOAK_OPS) operations (mmap on) on a default mount, then unmount, e2fsck -fn and
# the file read back from the image; soak-alloc, soak-writeback: $(SOAK_ALLOC_OPS) operations for
# each allocator, each write-back mode (alloc=ext2, a 256 KiB cache).
soak: $(STAMP) compiled $(FSX_STAMP)
	SIMFS_SOAK_OPS=$(SOAK_OPS) $(PY) -m pytest -q -p no:cacheprovider -o timeout=0 -rA \
	  tests/mount/test_fsx.py::test_fsx_soak

soak-alloc: $(STAMP) compiled $(FSX_STAMP)
	SIMFS_SOAK_OPS=$(SOAK_ALLOC_OPS) $(PY) -m pytest -q -p no:cacheprovider -o timeout=0 -rA \
	  tests/mount/test_fsx.py::test_fsx_soak_alloc

soak-writeback: $(STAMP) compiled $(FSX_STAMP)
	SIMFS_SOAK_OPS=$(SOAK_ALLOC_OPS) $(PY) -m pytest -q -p no:cacheprovider -o timeout=0 -rA \
	  tests/mount/test_fsx.py::test_fsx_soak_writeback

# mutation testing (tools/mutation/README.md): a seeded sample of MUTATION_N small bugs per core
# module (tools/mutation/targets.toml) planted one at a time in a copy of HEAD's tree, the
# module's fast tests run against each (from source: SIMFS_PURE=1); the per-module table of
# killed, timed out and surviving mutants goes to tools/mutation/results.md
MUTATION_N    ?= 15
MUTATION_SEED ?= 1
.PHONY: mutation
mutation: $(STAMP)
	nice -n 15 $(PY) tools/mutation/mutation.py --per-module $(MUTATION_N) --seed $(MUTATION_SEED) \
	  --out tools/mutation/results.md --json tools/mutation/results.jsonl

clean:
	rm -rf $(VENV) $(TOOLS) build *.egg-info $(EXAMPLE_PLUGINS)/*.egg-info $(EXAMPLE_PLUGINS)/build .pytest_cache .hypothesis .mypy_cache
