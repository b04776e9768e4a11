# simfs: `make test` and `make demo` each do the whole set-up on a fresh Debian machine (as root).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
SYSTEM_PKGS := fuse3 libfuse3-dev pkg-config e2fsprogs gcc
STAMP  := $(VENV)/.installed

.PHONY: all system venv test test-quick demo bench clean

all: venv

# Debian packages, installed only where missing (apt-get update first).
system:
	@missing=""; for p in $(SYSTEM_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

EXAMPLE_PLUGINS := examples/simfs-example-plugins

$(STAMP): setup.cfg pyproject.toml $(EXAMPLE_PLUGINS)/setup.cfg $(EXAMPLE_PLUGINS)/pyproject.toml
	$(MAKE) system
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	# the example plug-in package (entry points: allocator stride, dirorder newest-first,
	# disk model ssd/x25-m); tests/mount/test_plugin_mount.py mounts with it
	$(PY) -m pip install -q -e $(EXAMPLE_PLUGINS)
	touch $@

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

demo: $(STAMP)
	$(PY) -m experiments.demo

bench: $(STAMP)
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) *.egg-info $(EXAMPLE_PLUGINS)/*.egg-info $(EXAMPLE_PLUGINS)/build .pytest_cache .hypothesis
