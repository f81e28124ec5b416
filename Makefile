# SPDX-License-Identifier: GPL-2.0
# scx_miami: the two commands are `make demo` and `make test` (README.md).

SHELL := /bin/bash
export BPF_CLANG ?= clang-19
export PATH := $(CURDIR)/.venv/bin:$(PATH)

BIN := target/release/scx_miami
TOOLS := target/tools/pacer

.PHONY: all deps build test demo host-test vm-test clean

all: build

# Everything a fresh machine lacks: apt packages, virtme-ng, guest kernels. Seconds when present.
deps:
	scripts/deps.sh

build: deps
	cargo build --release
	$(MAKE) --no-print-directory $(TOOLS)

target/tools/pacer: tests/vm/tools/pacer.c
	@mkdir -p $(@D)
	gcc -O2 -Wall -Werror -o $@ $<

# fmt, clippy, host tests, then the VM suite on every kernel of the matrix (the BPF verifier runs
# there); ends with "N passed, N failed".
test: build
	scripts/test.sh

demo: build
	tests/vm/run.sh --timeout 900 -- tests/vm/demo.sh

clean:
	cargo clean
