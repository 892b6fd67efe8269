# C / C++ binding targets (crate redlatch-ffi). Included by the root Makefile
# (`include bindings/c/c.mk`), or used alone from anywhere: `make -f bindings/c/c.mk c-test`.
#
#   c-header        regenerate include/redlatch.h with the pinned cbindgen
#   c-header-check  regenerate into target/c and fail if include/redlatch.h differs
#   c-install       PREFIX=/usr/local (and DESTDIR): release libraries (stripped), headers,
#                   pkg-config, CMake config; C_INSTALL_PROFILE=debug installs the debug build
#   c-dist          the release tarball dist/redlatch-c-<version>-x86_64-linux-gnu.tar.gz: the
#                   same tree under redlatch-<version>/, with a relocatable redlatch.pc
#   c-test          build, then run the C and C++ suites (and the family suites: fair, read/write,
#                   semaphores, latch, multi-lock) against a Redis fleet, the C deployments
#                   suite against `redlatch-fleet --deployments` (TLS, Cluster, Sentinel), the C
#                   suites and the family suites again under valgrind, and the install test
#                   (c-install-test)
#   c-install-test  install into a temporary prefix; build a C program with pkg-config (shared,
#                   and fully static from `pkg-config --static`) and a C++ program (plus a static
#                   C one) with CMake find_package; run them on a fleet
#   c-demo-worker   the C worker of `make demo` (target/c/c_worker)
#   c-bench         release library, then bench/bench.c on a Redis fleet: sequential acquire +
#                   release through the C ABI (rows for `make bench` when REDLATCH_BENCH_ROWS is set)
#
# Library names: the crate's lib is `redlatch_ffi` (the core crate is already `redlatch`), so
# cargo writes libredlatch_ffi.{so,a}; installation renames them to libredlatch.so.<version>
# (+ SONAME and dev symlinks) and libredlatch.a. Tests link against an installed copy of the
# debug build in target/c/stage, so they exercise the install layout too; installs and the
# tarball carry the release build.

# Included first, this file must not steal the including Makefile's default goal.
C_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

C_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
C_ROOT := $(abspath $(C_DIR)/../..)
CARGO ?= cargo
C_PROFILE ?= debug
C_CARGO_PROFILE := $(if $(filter release,$(C_PROFILE)),--release,)
C_TARGET_DIR := $(if $(CARGO_TARGET_DIR),$(abspath $(CARGO_TARGET_DIR)),$(C_ROOT)/target)
C_BUILD := $(C_TARGET_DIR)/$(C_PROFILE)
C_INSTALL_PROFILE ?= release
C_INSTALL_BUILD := $(C_TARGET_DIR)/$(C_INSTALL_PROFILE)
C_OUT := $(C_TARGET_DIR)/c
C_STAGE := $(C_OUT)/stage
C_FLEET := $(C_TARGET_DIR)/debug/redlatch-fleet --quorum 3 --
C_DEPLOYMENTS_FLEET := $(C_TARGET_DIR)/debug/redlatch-fleet --quorum 1 --deployments --
C_HEADER := $(C_ROOT)/include/redlatch.h
C_VERSION := $(shell sed -n 's/^\#define REDLATCH_VERSION_STRING "\(.*\)"/\1/p' $(C_HEADER))
C_MAJOR := $(word 1,$(subst ., ,$(C_VERSION)))
C_MINOR := $(word 2,$(subst ., ,$(C_VERSION)))
# ABI version in the SONAME; bindings/c/build.rs computes the same.
C_ABI := $(if $(filter 0,$(C_MAJOR)),0.$(C_MINOR),$(C_MAJOR))
PREFIX ?= /usr/local
C_DIST_DIR ?= $(C_ROOT)/dist
C_DIST_NAME = redlatch-c-$(C_VERSION)-x86_64-linux-gnu
C_CC ?= gcc
C_CXX ?= g++
C_CFLAGS ?= -std=c11 -g -O1 -Wall -Wextra -Werror
C_CXXFLAGS ?= -std=c++17 -g -O1 -Wall -Wextra -Werror
C_VALGRIND ?= valgrind --quiet --error-exitcode=99 --leak-check=full \
	--show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
	--num-callers=40 --suppressions=$(C_DIR)/tests/valgrind.supp
# Timing slack multiplier for the suite under valgrind (everything runs ~20x slower).
C_VALGRIND_SLOW ?= 6

.PHONY: c-setup-cbindgen c-setup-tools c-lib c-lib-install c-fleet c-header c-header-check c-install \
	c-dist c-stage c-test-build c-test c-install-test c-demo-worker c-bench c-clean

c-setup-cbindgen:
	@$(C_DIR)/setup.sh cbindgen

c-setup-tools:
	@$(C_DIR)/setup.sh tools

c-lib:
	$(CARGO) build -p redlatch-ffi $(C_CARGO_PROFILE)

c-lib-install:
	$(CARGO) build -p redlatch-ffi $(if $(filter release,$(C_INSTALL_PROFILE)),--release,)

c-fleet:
	$(CARGO) build -p redlatch-fleet

c-header: c-setup-cbindgen
	cd $(C_ROOT) && cbindgen --quiet --config bindings/c/cbindgen.toml --crate redlatch-ffi \
		-o include/redlatch.h bindings/c

c-header-check: c-setup-cbindgen
	@mkdir -p $(C_OUT)
	cd $(C_ROOT) && cbindgen --quiet --config bindings/c/cbindgen.toml --crate redlatch-ffi \
		-o $(C_OUT)/redlatch.h.new bindings/c
	@diff -u $(C_HEADER) $(C_OUT)/redlatch.h.new \
		|| { echo "include/redlatch.h is stale: run 'make c-header' and commit it" >&2; exit 1; }
	@echo "include/redlatch.h is current"

# $(1) = where to write (DESTDIR + prefix), $(2) = the prefix recorded in redlatch.pc,
# $(3) = the cargo output directory (target/debug or target/release). Release libraries are
# stripped: the symbol table of the .so (its exported functions stay) and the debug info of
# the Rust standard library that the .a carries (about a quarter of it).
define c_install_to
	test -n "$(C_VERSION)" || { echo "cannot read the version from $(C_HEADER)" >&2; exit 1; }
	install -d $(1)/include $(1)/lib/pkgconfig $(1)/lib/cmake/redlatch
	install -m 644 $(C_ROOT)/include/redlatch.h $(C_ROOT)/include/redlatch.hpp \
		$(C_ROOT)/include/redlatch_family.hpp $(C_ROOT)/include/redlatch_semaphores.hpp $(1)/include/
	install -m 755 $(3)/libredlatch_ffi.so $(1)/lib/libredlatch.so.$(C_VERSION)
	ln -sf libredlatch.so.$(C_VERSION) $(1)/lib/libredlatch.so.$(C_ABI)
	ln -sf libredlatch.so.$(C_ABI) $(1)/lib/libredlatch.so
	install -m 644 $(3)/libredlatch_ffi.a $(1)/lib/libredlatch.a
	$(if $(filter %/release,$(3)),strip --strip-unneeded $(1)/lib/libredlatch.so.$(C_VERSION))
	$(if $(filter %/release,$(3)),strip --strip-debug $(1)/lib/libredlatch.a)
	sed -e 's|@PREFIX@|$(2)|g' -e 's|@VERSION@|$(C_VERSION)|g' \
		$(C_DIR)/pkg/redlatch.pc.in > $(1)/lib/pkgconfig/redlatch.pc
	sed -e 's|@VERSION@|$(C_VERSION)|g' -e 's|@ABI@|$(C_ABI)|g' \
		$(C_DIR)/pkg/redlatchConfig.cmake.in > $(1)/lib/cmake/redlatch/redlatchConfig.cmake
	sed -e 's|@VERSION@|$(C_VERSION)|g' -e 's|@MAJOR@|$(C_MAJOR)|g' -e 's|@MINOR@|$(C_MINOR)|g' \
		$(C_DIR)/pkg/redlatchConfigVersion.cmake.in > $(1)/lib/cmake/redlatch/redlatchConfigVersion.cmake
endef

c-install: c-lib-install
	$(call c_install_to,$(DESTDIR)$(PREFIX),$(PREFIX),$(C_INSTALL_BUILD))
	@echo "installed redlatch $(C_VERSION) ($(C_INSTALL_PROFILE) build) into $(DESTDIR)$(PREFIX)"

# The tarball unpacks to redlatch-<version>/{include,lib}; its redlatch.pc finds the prefix from
# its own place (pkg-config's ${pcfiledir}), and the CMake config does the same, so it works
# wherever it is unpacked.
c-dist: c-lib-install
	rm -rf $(C_OUT)/dist && mkdir -p $(C_DIST_DIR)
	$(call c_install_to,$(C_OUT)/dist/redlatch-$(C_VERSION),$${pcfiledir}/../..,$(C_INSTALL_BUILD))
	tar -C $(C_OUT)/dist -czf $(C_DIST_DIR)/$(C_DIST_NAME).tar.gz --owner=0 --group=0 redlatch-$(C_VERSION)
	@echo "c-dist: $(C_DIST_DIR)/$(C_DIST_NAME).tar.gz"

c-stage: c-lib
	@rm -rf $(C_STAGE)
	@$(call c_install_to,$(C_STAGE),$(C_STAGE),$(C_BUILD))

C_TEST_LINK = -I$(C_STAGE)/include -L$(C_STAGE)/lib -lredlatch -Wl,-rpath,$(C_STAGE)/lib -lpthread

c-test-build: c-setup-tools c-stage
	@mkdir -p $(C_OUT)/tests
	@echo "== redlatch.h compiles as strict C99 and C++11"
	printf '#include <redlatch.h>\nint main(void) { return redlatch_version() == 0; }\n' \
		| $(C_CC) -std=c99 -pedantic -Wall -Wextra -Werror -I$(C_STAGE)/include -fsyntax-only -x c -
	printf '#include <redlatch.h>\nint main() { return redlatch_version() == nullptr; }\n' \
		| $(C_CXX) -std=c++11 -pedantic -Wall -Wextra -Werror -I$(C_STAGE)/include -fsyntax-only -x c++ -
	$(C_CC) $(C_CFLAGS) -o $(C_OUT)/tests/test_redlatch $(C_DIR)/tests/c/test_redlatch.c $(C_TEST_LINK)
	$(C_CC) $(C_CFLAGS) -o $(C_OUT)/tests/test_outcomes $(C_DIR)/tests/c/test_outcomes.c $(C_TEST_LINK)
	$(C_CC) $(C_CFLAGS) -o $(C_OUT)/tests/test_deployments $(C_DIR)/tests/c/test_deployments.c $(C_TEST_LINK)
	$(C_CXX) $(C_CXXFLAGS) -o $(C_OUT)/tests/test_redlatch_cpp $(C_DIR)/tests/cpp/test_redlatch.cpp \
		$(C_TEST_LINK)
	$(C_CC) $(C_CFLAGS) -o $(C_OUT)/tests/test_fair_rw $(C_DIR)/tests/c/test_fair_rw.c $(C_TEST_LINK)
	$(C_CC) $(C_CFLAGS) -o $(C_OUT)/tests/test_semaphores $(C_DIR)/tests/c/test_semaphores.c $(C_TEST_LINK)
	$(C_CXX) $(C_CXXFLAGS) -o $(C_OUT)/tests/test_family_cpp $(C_DIR)/tests/cpp/test_family.cpp $(C_TEST_LINK)

c-test: c-header-check c-fleet c-test-build
	@echo "== C suite"
	$(C_FLEET) $(C_OUT)/tests/test_redlatch
	@echo "== C outcomes suite (reasons, retryable release, key conflicts)"
	$(C_FLEET) $(C_OUT)/tests/test_outcomes
	@echo "== C++ suite"
	$(C_TARGET_DIR)/debug/redlatch-fleet --quorum 3 --deployments -- $(C_OUT)/tests/test_redlatch_cpp
	@echo "== C family suites (fair and read/write locks; semaphores, latch, multi-lock) and C++"
	$(C_FLEET) $(C_OUT)/tests/test_fair_rw
	$(C_FLEET) $(C_OUT)/tests/test_semaphores
	$(C_FLEET) $(C_OUT)/tests/test_family_cpp
	@echo "== C deployments suite (TLS, Cluster, Sentinel, warnings), also under valgrind"
	$(C_DEPLOYMENTS_FLEET) $(C_OUT)/tests/test_deployments
	REDLATCH_TEST_SLOW=$(C_VALGRIND_SLOW) $(C_DEPLOYMENTS_FLEET) $(C_VALGRIND) $(C_OUT)/tests/test_deployments
	@echo "== C suite under valgrind"
	REDLATCH_TEST_SLOW=$(C_VALGRIND_SLOW) $(C_FLEET) $(C_VALGRIND) $(C_OUT)/tests/test_redlatch
	@echo "== C family suites and C++ family suite under valgrind (their children run natively)"
	REDLATCH_TEST_SLOW=$(C_VALGRIND_SLOW) $(C_FLEET) $(C_VALGRIND) $(C_OUT)/tests/test_fair_rw
	REDLATCH_TEST_SLOW=$(C_VALGRIND_SLOW) $(C_FLEET) $(C_VALGRIND) $(C_OUT)/tests/test_semaphores
	REDLATCH_TEST_SLOW=$(C_VALGRIND_SLOW) $(C_FLEET) $(C_VALGRIND) $(C_OUT)/tests/test_family_cpp
	@$(MAKE) --no-print-directory -f $(C_DIR)/c.mk c-install-test
	@echo "c-test: C, C++, valgrind and install suites passed"

C_IT := $(C_OUT)/install-test

c-install-test: c-setup-tools c-lib-install c-fleet
	rm -rf $(C_IT)
	$(MAKE) --no-print-directory -f $(C_DIR)/c.mk c-install PREFIX=$(C_IT)/prefix
	@echo "== C program built with pkg-config"
	mkdir -p $(C_IT)/pc
	PKG_CONFIG_PATH=$(C_IT)/prefix/lib/pkgconfig sh -c '$(C_CC) $(C_CFLAGS) \
		-o $(C_IT)/pc/install_c $(C_DIR)/tests/install/install_c.c \
		$$(pkg-config --cflags --libs redlatch) -Wl,-rpath,$$(pkg-config --variable=libdir redlatch)'
	$(C_FLEET) $(C_IT)/pc/install_c
	@echo "== C program linked statically (cc -static) from pkg-config --static"
	@# glibc warns that getaddrinfo/getpwuid_r in a static program still load NSS modules at
	@# run time; those two lines are expected (bindings/c/README.md, "Static linking").
	PKG_CONFIG_PATH=$(C_IT)/prefix/lib/pkgconfig sh -c '$(C_CC) $(C_CFLAGS) -static \
		-o $(C_IT)/pc/install_c_static $(C_DIR)/tests/install/install_c.c \
		$$(pkg-config --static --cflags --libs redlatch)'
	! readelf -d $(C_IT)/pc/install_c_static | grep -q NEEDED \
		|| { echo "install_c_static needs shared libraries: not a static link" >&2; exit 1; }
	$(C_FLEET) $(C_IT)/pc/install_c_static
	@echo "== C++ (shared) and C (static) programs built with CMake find_package(redlatch)"
	cmake -S $(C_DIR)/tests/install -B $(C_IT)/cmake -DCMAKE_PREFIX_PATH=$(C_IT)/prefix \
		-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=$(C_CXX) -DCMAKE_C_COMPILER=$(C_CC) >/dev/null
	cmake --build $(C_IT)/cmake
	$(C_FLEET) $(C_IT)/cmake/install_cpp
	$(C_FLEET) $(C_IT)/cmake/install_c_static

c-demo-worker: c-stage
	@mkdir -p $(C_OUT)
	$(C_CC) $(C_CFLAGS) -o $(C_OUT)/c_worker $(C_ROOT)/examples/demo/workers/c_worker.c $(C_TEST_LINK)

# Built -O2 against the release library (installed into target/c/bench-stage, as a user
# would link it); run on a fleet like the suites.
C_BENCH_STAGE := $(C_OUT)/bench-stage

c-bench: c-fleet rust-bench-turns
	$(CARGO) build -p redlatch-ffi --release
	@rm -rf $(C_BENCH_STAGE)
	@$(call c_install_to,$(C_BENCH_STAGE),$(C_BENCH_STAGE),$(C_TARGET_DIR)/release)
	$(C_CC) -std=c11 -O2 -Wall -Wextra -Werror -o $(C_OUT)/c_bench $(C_DIR)/bench/bench.c \
		-I$(C_BENCH_STAGE)/include -L$(C_BENCH_STAGE)/lib -lredlatch -Wl,-rpath,$(C_BENCH_STAGE)/lib -lpthread
	REDLATCH_BENCH_RUST_TURNS=$(RUST_BENCH_TURNS) $(C_FLEET) $(C_OUT)/c_bench $(C_BENCH_ARGS)

c-clean:
	rm -rf $(C_OUT)

.DEFAULT_GOAL := $(C_SAVED_DEFAULT_GOAL)
