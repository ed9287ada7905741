# libfabric-psm2: a libfabric "psm2" provider written in Go.
#
#   make          build build/lib/libfabric.so.1 and the DL plugin
#   make demo     install what is missing, build, run the demo
#   make check    install what is missing, build, run every test
#   make mpich    build MPICH (ch4:ofi) on our library, for make check
#   make install  PREFIX (/usr/local) and DESTDIR: scripts/install.sh says where
#   make uninstall
#   make deb      the Debian package, in build/deb (scripts/deb.sh)
#
# Everything is built under build/.

GO       ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
CC       ?= gcc
BUILD    := build
LIBDIR   := $(BUILD)/lib
CMD      := ./cmd/libfabric-psm2
SHIM     := cmd/libfabric-psm2
LIB      := $(LIBDIR)/libfabric.so.1
DLLIB    := $(LIBDIR)/libfabric/libpsm2-fi.so
GOSRC    := $(shell find . -name '*.go' -not -path './build/*') \
            $(wildcard $(SHIM)/*.c $(SHIM)/*.h $(SHIM)/fast/*.c $(SHIM)/fast/*.h $(SHIM)/*.map $(SHIM)/*.sh) go.mod go.sum \
            $(shell find include -name '*.h')
CTEST_CFLAGS := -std=gnu11 -O1 -g -Wall -Werror -Iinclude

export CGO_ENABLED := 1

.PHONY: multihost all deps demo check test lint gotest ctest abi mpi mpich bench bench-tools clean \
	man install uninstall installcheck deb debcheck

PREFIX  ?= /usr/local
DESTDIR ?=
MAN     := $(BUILD)/man/fi_psm2go.7

all: $(LIB) $(DLLIB)

deps:
	@scripts/deps.sh

$(LIB): $(GOSRC)
	@mkdir -p $(LIBDIR)
	$(GO) build -buildmode=c-shared -trimpath \
	  -ldflags "-extld=$(CURDIR)/$(SHIM)/extld.sh -extldflags '-Wl,--version-script=$(CURDIR)/$(SHIM)/libfabric.map -Wl,-soname,libfabric.so.1 -Wl,-z,nodelete'" \
	  -o $@ $(CMD)
	@readelf -SW $@ | grep -q psm2_goinit || { echo "$@: the Go runtime would start at load (no psm2_goinit)"; rm -f $@; exit 1; }
	@rm -f $(LIBDIR)/libfabric.so.1.h
	ln -sf libfabric.so.1 $(LIBDIR)/libfabric.so

$(DLLIB): $(GOSRC)
	@mkdir -p $(dir $@)
	$(GO) build -tags dl -buildmode=c-shared -trimpath \
	  -ldflags "-extld=$(CURDIR)/$(SHIM)/extld.sh -extldflags '-Wl,--version-script=$(CURDIR)/$(SHIM)/dl.map -Wl,-z,nodelete'" \
	  -o $@ $(CMD)
	@readelf -SW $@ | grep -q psm2_goinit || { echo "$@: the Go runtime would start at load (no psm2_goinit)"; rm -f $@; exit 1; }
	@rm -f $(DLLIB:.so=.h)

# The manual page, from docs/ (internal/mangen).
man: $(MAN)
$(MAN): docs/config.md docs/compat.md $(wildcard internal/mangen/*.go)
	$(GO) run ./internal/mangen -o $@ docs/config.md docs/compat.md

install: all man
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) scripts/install.sh install

uninstall:
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) scripts/install.sh uninstall

# make install into a staging root and a private prefix, used from there.
installcheck: all man
	scripts/installcheck.sh

# The Debian package (debian/), and a test that installs it into a fresh
# overlay root and uses it from there.
deb: all
	scripts/deb.sh

debcheck: deb
	scripts/debcheck.sh

demo: deps all
	@scripts/demo.sh

# The C programs of ctest/ are built against our headers only.
CTESTS := $(patsubst ctest/%.c,$(BUILD)/ctest/%,$(wildcard ctest/*.c))
$(BUILD)/ctest/%: ctest/%.c ctest/*.h $(SHIM)/fast/layout.h $(shell find include -name '*.h') | $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CTEST_CFLAGS) -o $@ $< -L$(LIBDIR) -lfabric

# fastfuzz (delivery), servefuzz (the target's serve path) and answerfuzz
# (the initiator's answers) drive the C fast path's own translation units.
FASTC := $(wildcard $(SHIM)/fast/*.c)
FUZZ  := $(BUILD)/ctest/fastfuzz $(BUILD)/ctest/servefuzz $(BUILD)/ctest/answerfuzz
$(FUZZ): $(BUILD)/ctest/%: ctest/%.c ctest/*.h $(FASTC) $(wildcard $(SHIM)/fast/*.h) | $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CTEST_CFLAGS) -o $@ $< $(FASTC) -L$(LIBDIR) -lfabric

# The same with AddressSanitizer and UBSan, which see what neither the
# guard pages nor valgrind do: an overrun of one of the fast path's own
# stack buffers. scripts/ctest.sh runs them (natively).
ASAN_FUZZ := $(patsubst $(BUILD)/ctest/%,$(BUILD)/ctest-asan/%,$(FUZZ))
$(ASAN_FUZZ): $(BUILD)/ctest-asan/%: ctest/%.c ctest/*.h $(FASTC) $(wildcard $(SHIM)/fast/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CTEST_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	  -o $@ $< $(FASTC)

# staticcheck, at a version the Go module proxy serves, built into build/bin
# the first time (go.mod is not touched).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BUILD)/bin/staticcheck-$(STATICCHECK_VERSION)

$(STATICCHECK):
	@mkdir -p $(BUILD)/bin
	GOBIN=$(CURDIR)/$(BUILD)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BUILD)/bin/staticcheck $@

lint: $(STATICCHECK)
	$(GO) vet ./...
	$(STATICCHECK) ./...

gotest: lint
	CGO_ENABLED=0 $(GO) test ./internal/... ./provider/... ./shm/...
	$(GO) test -race ./...

abi:
	ctest/abi/run.sh include $(BUILD)/abi

ctest: all $(CTESTS) $(ASAN_FUZZ)
	scripts/ctest.sh

# Unmodified fi_pingpong, Open MPI (conformance, NetPIPE, hpcc) on our library.
mpi: all
	scripts/mpi.sh

# The inter-node wire across namespace "hosts" (fi_pingpong, MPI, loss).
multihost: all
	scripts/multihost.sh

# MPICH 4.0 (ch4:ofi) from Debian's source package, built against our
# headers and library outside the repo (~/.cache/libfabric-psm2); once it
# exists, make mpi and make multihost run the MPI programs on it too.
mpich: all
	scripts/mpich.sh

# Benchmarks beside the references (Debian's libfabric shm, Open MPI's vader).
bench: deps all bench-tools
	@scripts/deps.sh bench
	bench/bench.sh

# The C benchmarks of bench/, built with one set of flags; those that use
# libfabric link our library (LD_LIBRARY_PATH picks the one a run wants).
BENCH_CFLAGS := -std=gnu11 -O2 -Wall -Werror -Iinclude
BENCHBIN := $(BUILD)/bench/bin
BENCH_FI := $(addprefix $(BENCHBIN)/,msgrate rmabench mtlpp ctxrate hotpoll)
BENCH_PLAIN := $(addprefix $(BENCHBIN)/,udppp floor)

bench-tools: $(BENCH_FI) $(BENCH_PLAIN)

$(BENCH_FI): $(BENCHBIN)/%: bench/%.c bench/benchutil.h ctest/node.h $(shell find include -name '*.h') | $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< -L$(LIBDIR) -lfabric -lpthread

$(BENCH_PLAIN): $(BENCHBIN)/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $<

check: deps all gotest abi ctest installcheck debcheck bench-tools mpi multihost

test: check

clean:
	rm -rf $(BUILD)
