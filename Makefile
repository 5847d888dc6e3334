# Sonora's two commands: `make run` (the main job) and `make test`.
# Both first install the Debian packages the build needs (only those missing).

SWIFT ?= swift
# C libraries the package links (found through pkg-config) and the anchors `sonora-bench` compares with
# (JACK's ring, SpeexDSP, KissFFT; linked into sonora-bench only).
DEBIAN_PACKAGES := pkg-config libasound2-dev liblilv-dev lv2-dev libsndfile1-dev libsoxr-dev libjack-jackd2-dev libspeexdsp-dev libkissfft-dev \
	libavformat-dev libavcodec-dev libavutil-dev libmp3lame-dev libopus-dev libmysofa-dev libopenal-dev
# Tools the tests compare against: files written by other encoders (sox), and a second
# real ALSA path through JACK2's dummy backend (jackd2, libasound2-plugins' jack PCM).
# sox with its MP3 writer (libsox-fmt-mp3 is only a recommendation of sox) makes the
# foreign files the file tests read.
TEST_PACKAGES := sox libsox-fmt-mp3 jackd2 libasound2-plugins ffmpeg
# LV2: lilv's lv2apply (the conformance anchor) and the plugin packages the LV2 suites host.
TEST_PACKAGES += lilv-utils lv2-examples mda-lv2 swh-lv2 x42-plugins lsp-plugins-lv2 calf-plugins zam-plugins fomp \
	invada-studio-plugins-lv2 dragonfly-reverb-lv2
# Suites that also run under ThreadSanitizer (a separate build folder keeps both builds warm).
TSAN_FILTER := RingStressTests|SampleRingTests|ByteRingTests|MessageQueueTests|GraphTests|ALSAFailureTests|TimerDeviceTests|URIDMapTests|WorkerTests|WorkerPrimitiveTests|RecorderDataSafetyTests|ControlServerTests|DeviceRecoveryTests|SonoraToolboxTests|ApplianceTransportTests|ApplianceProtocolTests|ApplianceRecoveryTests|ApplianceKeptGainTests|ApplianceSessionServerTests|SessionCoordinatorTests

.PHONY: run test deps release build tsan tsan-build bench clean plugins check-imports check-package check-package-graph

deps:
	@command -v $(SWIFT) >/dev/null || { echo "sonora: '$(SWIFT)' not found; install Swift 6.1 or later (swift.org) and put it on PATH" >&2; exit 1; }
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

# The loopback ALSA plugin is a product of its own; `sonora` finds it beside itself.
LOOP_PLUGIN := asound_module_pcm_sonoraloop

release: deps
	$(SWIFT) build -c release --product sonora
	$(SWIFT) build -c release --product $(LOOP_PLUGIN)

# The main job: Configs/default.yaml — a melody through the EQ and the mixer, on ALSA
# `default` if this machine has a card, else on the null device; live meters for a few
# seconds; what it played is in played.wav.
RUN_SECONDS ?= 6
run: release
	.build/release/sonora run Configs/default.yaml --seconds $(RUN_SECONDS)
	@echo "sonora: what was played is in played.wav (sonora info played.wav)"

build: deps
	@scripts/install-deps.sh $(TEST_PACKAGES)
	$(SWIFT) build --build-tests
	$(SWIFT) build --product $(LOOP_PLUGIN)

# Suites that run devices in real time go second and alone: the stress tests of the
# first run keep both cores busy, which a 2.7 ms period cannot ride out on a small VM.
REALTIME_SUITES := SonoraHALTests|VoiceProcessingLoopTests|LatencyCLITests|VoiceIOGraphTests|VoiceIOALSALoopTests|IOUnitConversionALSATests|AudioQueueLoopbackALSATests|QueueBenchCLITests|AudioQueueALSALoopTests|AudioQueueMixRateALSATests|AudioPlayerALSATests|AudioRecorderALSATests|PlayAndRecordALSATests|AudioSessionALSATests|SoundsBenchCLITests|ServerBenchCLITests|SessionServerCLITests|ServiceNotifyCLITests|SoakBenchCLITests|NetJackNetworkTests|TimerWakeUpDeviceTests|JACKDeviceTests|JACKCLITests|IOUnitJACKFormatChangeTests|NetJackLatencyCLITests|NetworkBenchCLITests
# With them, alone, the suites that judge the whole process's memory (other suites' allocations would move it).
ALONE_SUITES := $(REALTIME_SUITES)|CodecLeakTests|MemoryLockFootprintTests

# Each phase runs line-buffered and under a time limit (scripts/bounded.sh): a hang fails
# its phase with a reason and the name of the test that hung, within CI's budget. The limits
# are 3-4 times what a phase takes on 2 cores.
# The .deb, the ThreadSanitizer build and the versioned-dependency check (check-package-graph)
# build in the background from the start, on the CPU the foreground leaves idle
# (scripts/idle-builds.sh: a scheduling group of their own at nice 19, the package's serial build
# first within it); the package's checks run as soon as it is built, while the sanitizer's build
# may still be going. The packages are resolved first, so the three builds only read
# Package.resolved. A phase that fails stops the background builds.
STOP_BUILDS_ON_FAILURE = || { status=$$?; scripts/idle-builds.sh stop; exit $$status; }
test: deps check-imports
	@scripts/install-deps.sh $(TEST_PACKAGES) lintian patchelf
	$(SWIFT) package resolve
	SWIFT=$(SWIFT) scripts/idle-builds.sh start
	$(MAKE) --no-print-directory build $(STOP_BUILDS_ON_FAILURE)
	scripts/bounded.sh 20m $(SWIFT) test --skip-build --disable-xctest --skip '$(ALONE_SUITES)' $(STOP_BUILDS_ON_FAILURE)
	scripts/bounded.sh 25m $(SWIFT) test --skip-build --disable-xctest --no-parallel --filter '$(ALONE_SUITES)' $(STOP_BUILDS_ON_FAILURE)
	scripts/idle-builds.sh wait deb 40m $(STOP_BUILDS_ON_FAILURE)
	$(MAKE) --no-print-directory deb-test DEB="$$(scripts/idle-builds.sh deb)" $(STOP_BUILDS_ON_FAILURE)
	scripts/idle-builds.sh wait 40m
	$(MAKE) --no-print-directory tsan

# Every module a target imports is declared in Package.swift (not reached through another target).
check-imports:
	scripts/check-imports.py

# Every library product builds from a package that depends on Sonora by version (no unsafe flags).
check-package:
	scripts/check-package-by-version.sh
# `make test`'s form: SwiftPM refuses a versioned dependency's unsafe flags when it loads the
# graph, so the consumer's graph is loaded, not built (~200 s of CPU less), and a canary copy
# with an unsafe flag must be refused the same way (scripts/check-package-by-version.sh).
check-package-graph:
	scripts/check-package-by-version.sh --graph

# The test targets TSAN_FILTER's suites live in: the sanitizer's build declares only these
# (SONORA_TEST_TARGETS, read by Package.swift) and builds the test bundle and the loopback
# plugin, not the executables. `tsan` checks that every name of the filter still matches a test
# of the build, so a suite moved or added elsewhere fails loudly instead of silently not running.
TSAN_TEST_TARGETS := SonoraCoreTests,SonoraHALTests,SonoraLV2Tests,SonoraPipelineTests,SonoraToolboxTests,SonoraUnitsTests
TSAN_SWIFT = SONORA_TEST_TARGETS=$(TSAN_TEST_TARGETS) $(SWIFT)

tsan-build: deps
	$(TSAN_SWIFT) build --sanitize=thread --scratch-path .build-tsan --product SonoraPackageTests
	$(TSAN_SWIFT) build --sanitize=thread --scratch-path .build-tsan --product $(LOOP_PLUGIN)

# The ring stress suites move 10⁷ samples under the sanitizer (10⁸ in the first phase): every
# chunk exercises the same acquire/release pairs, and 10⁸ took 2.5 of its minutes.
# Without the suites on a real ALSA device or a paced voice device (the filter GraphTests matches
# VoiceIOGraphTests): under the sanitizer's slowdown they measure xruns and deadlines, not races.
# The sanitizer's reports go to files and are printed last on failure, so the end of the
# log (all a CI summary shows) names the race, not only "reported 1 warnings".
tsan: tsan-build
	@mkdir -p .build-tsan && rm -f .build-tsan/tsan-report.*
	@listed=$$($(TSAN_SWIFT) test list --skip-build --sanitize=thread --scratch-path .build-tsan) || exit 1; \
	for suite in $$(echo '$(TSAN_FILTER)' | tr '|' ' '); do \
		echo "$$listed" | grep -q -E "$$suite" || { echo "tsan: no test in $(TSAN_TEST_TARGETS) matches '$$suite' (add its test target to TSAN_TEST_TARGETS)" >&2; exit 1; }; \
	done
	TSAN_OPTIONS="log_path=$(CURDIR)/.build-tsan/tsan-report $$TSAN_OPTIONS" SONORA_STRESS_SAMPLES=$${SONORA_STRESS_SAMPLES:-10000000} \
	scripts/bounded.sh 45m env SONORA_TEST_TARGETS=$(TSAN_TEST_TARGETS) $(SWIFT) test --skip-build --disable-xctest --sanitize=thread --scratch-path .build-tsan --filter '$(TSAN_FILTER)' --skip 'ALSATests|ALSALoopTests|VoiceIOGraphTests' \
	|| { status=$$?; for report in .build-tsan/tsan-report.*; do [ -f "$$report" ] && { echo "== $$report" >&2; cat "$$report" >&2; }; done; exit $$status; }

# The benchmarks are their own program (the anchors' libraries stay out of `sonora`).
bench: release
	$(SWIFT) build -c release --product sonora-bench
	.build/release/sonora-bench ring
	.build/release/sonora-bench graph
	.build/release/sonora-bench files
	.build/release/sonora-bench io
	.build/release/sonora-bench voice
	.build/release/sonora-bench queue
	.build/release/sonora-bench sounds
	.build/release/sonora-bench network
	@scripts/install-deps.sh $(TEST_PACKAGES)
	.build/release/sonora-bench lv2
	.build/release/sonora-bench server
	.build/release/sonora-bench positional
	.build/release/sonora-bench scale

# Sonora's own LV2 plugins as installable bundles in .build/lv2 (put it on LV2_PATH).
plugins: deps
	$(SWIFT) build -c release --product SonoraGainLV2
	mkdir -p .build/lv2/sonora-gain.lv2
	cp Plugins/sonora-gain.lv2/*.ttl .build/release/libSonoraGainLV2.so .build/lv2/sonora-gain.lv2/

clean:
	rm -rf .build .build-tsan

# The Debian package: sonora with the Swift runtime linked in, the loopback ALSA plugin, the LV2
# bundle, the unit file, /etc/sonora/sonora.yaml (scripts/build-deb.sh; its own release build in
# .build-deb). `make deb-test` builds, checks (dpkg-deb, lintian), installs it, runs the installed
# binary with the toolchain hidden, measures its memory, and purges it again (root). Part of
# `make test` (about 6 minutes cold on 2 cores, 26 s of it the checks). A sonora package already
# installed on the machine is left alone: the install checks are skipped, not run over it.
.PHONY: deb deb-test
deb: deps
	@scripts/install-deps.sh patchelf
	scripts/build-deb.sh

# DEB: a package already built (make test builds it beside the realtime suites); else built here.
deb-test: deps
	@scripts/install-deps.sh $(TEST_PACKAGES) lintian patchelf
	scripts/deb-test.sh $(DEB)
