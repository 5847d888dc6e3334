# Sonora's two commands: `make run` (the main job) and `make test`.
# Both first install the Debian packages the build needs (only those missing).

SWIFT ?= swift
# C libraries the package links (found through pkg-config) and the JACK ring the benchmark compares with.
DEBIAN_PACKAGES := pkg-config libasound2-dev liblilv-dev lv2-dev libsndfile1-dev libsoxr-dev libjack-jackd2-dev
# Tools the tests compare against (files written by other encoders).
TEST_PACKAGES := sox
# LV2: lilv's lv2apply (the conformance anchor) and the plugin packages the LV2 suites host.
TEST_PACKAGES += lilv-utils lv2-examples mda-lv2 swh-lv2 x42-plugins lsp-plugins-lv2 calf-plugins zam-plugins fomp \
	invada-studio-plugins-lv2 dragonfly-reverb-lv2
# Suites that also run under ThreadSanitizer (a separate build folder keeps both builds warm).
TSAN_FILTER := RingStressTests|SampleRingTests|ByteRingTests|MessageQueueTests|GraphTests|URIDMapTests|WorkerTests|ConcurrentControlTests|SamplerWorkerTests

.PHONY: run test deps release build tsan bench clean plugins

deps:
	@command -v $(SWIFT) >/dev/null || { echo "sonora: '$(SWIFT)' not found; install Swift 6.1 or later (swift.org) and put it on PATH" >&2; exit 1; }
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

release: deps
	$(SWIFT) build -c release --product sonora

# The main job. Until the pipeline runtime exists it is the ring benchmark.
run: release
	.build/release/sonora bench ring

build: deps
	@scripts/install-deps.sh $(TEST_PACKAGES)
	$(SWIFT) build --build-tests

test: build
	$(SWIFT) test --skip-build --disable-xctest
	$(MAKE) --no-print-directory tsan

tsan: deps
	$(SWIFT) test --disable-xctest --sanitize=thread --scratch-path .build-tsan --filter '$(TSAN_FILTER)'

bench: release
	.build/release/sonora bench ring
	.build/release/sonora bench graph
	.build/release/sonora bench files
	@scripts/install-deps.sh $(TEST_PACKAGES)
	.build/release/sonora bench lv2

# Sonora's own LV2 plugins as installable bundles in .build/lv2 (put it on LV2_PATH).
plugins: deps
	$(SWIFT) build -c release --product SonoraGainLV2
	mkdir -p .build/lv2/sonora-gain.lv2
	cp Plugins/sonora-gain.lv2/*.ttl .build/release/libSonoraGainLV2.so .build/lv2/sonora-gain.lv2/

clean:
	rm -rf .build .build-tsan
