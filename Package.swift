// swift-tools-version:6.1
// Sonora: Core Audio's model on Linux — audio units, graphs, files, queues — over ALSA and LV2.
// Layers (lowest first; a module imports only layers below it) are described in ARCHITECTURE.md.
import PackageDescription

let package = Package(
    name: "Sonora",
    products: [
        .library(name: "SonoraCore", targets: ["SonoraCore"]),
        .library(name: "SonoraDSP", targets: ["SonoraDSP"]),
        .library(name: "SonoraHAL", targets: ["SonoraHAL"]),
        .library(name: "SonoraFile", targets: ["SonoraFile"]),
        .library(name: "SonoraUnits", targets: ["SonoraUnits"]),
        .library(name: "SonoraLV2", targets: ["SonoraLV2"]),
        .library(name: "SonoraPipeline", targets: ["SonoraPipeline"]),
        .library(name: "SonoraVoice", targets: ["SonoraVoice"]),
        .library(name: "SonoraToolbox", targets: ["SonoraToolbox"]),
        .executable(name: "sonora", targets: ["sonora"]),
        // The benchmarks and their anchors (JACK, SpeexDSP, KissFFT, C loops), kept out of `sonora`.
        .executable(name: "sonora-bench", targets: ["sonora-bench"]),
        // Sonora's timer-paced loopback ALSA plugin (`pcm.X { type sonoraloop loop "x" }`),
        // found beside the binaries by `ALSAConfiguration`; alsa-lib loads it by this name.
        .library(name: "asound_module_pcm_sonoraloop", type: .dynamic, targets: ["SonoraLoopPCM"]),
        // Sonora's own LV2 plugin (bundle: Plugins/sonora-gain.lv2; `make plugins` stages it).
        .library(name: "SonoraGainLV2", type: .dynamic, targets: ["SonoraGainPlugin"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        // `sonora ctl metrics` and the opt-in /metrics endpoint: Prometheus' text exposition (swift-prometheus brings swift-metrics' CoreMetrics).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),  // MetricNameDescriptor
    ],
    targets: [
        // C layer: a module map and a shim header per system library, found through pkg-config.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CLilv", pkgConfig: "lilv-0", providers: [.apt(["liblilv-dev", "lv2-dev"])]),
        .systemLibrary(name: "CSndfile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        // libmysofa: HRTF sets from SOFA files (the 3D mixer's binaural rendering).
        .systemLibrary(name: "CMySofa", pkgConfig: "libmysofa", providers: [.apt(["libmysofa-dev"])]),
        // FFmpeg: the AAC/MP3/ALAC/FLAC/Opus codecs (LAME and libopus encoders through it) and the MP4/Ogg containers.
        .systemLibrary(
            name: "CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libmp3lame-dev", "libopus-dev"])]
        ),
        // FFmpeg's functions as Sonora calls them, forwarding to libavformat opened on first use
        // (dlopen): a process that never touches FFmpeg does not map its ~90 libraries.
        .target(name: "CFFmpegLoader", linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        // JACK's ring buffer and client API, linked: the anchors of `sonora-bench ring`, `io` and `server`.
        .systemLibrary(name: "CJack", pkgConfig: "jack", providers: [.apt(["libjack-jackd2-dev"])]),
        // libjack and libjacknet (netjack2) as the HAL's `jack:` and `netjack:` devices call them,
        // forwarding to the libraries opened on first use (dlopen): a process that never opens
        // such a device does not map them (or libdb, libsamplerate and libopus behind them).
        .target(name: "CJackLoader", linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        // SpeexDSP's echo canceller, the anchor of `sonora-bench voice`.
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
        // OpenAL Soft (1.19 on Debian 12): the reference the positional API is checked against, through its
        // loopback device. Used by the tests and sonora-bench only, never by a library module.
        .systemLibrary(name: "COpenALSoft", pkgConfig: "openal", providers: [.apt(["libopenal-dev"])]),
        // No pkgConfig: its -D flags are refused by SwiftPM; the shim defines the scalar type itself.
        .systemLibrary(name: "CKissFFT", providers: [.apt(["libkissfft-dev"])]),
        // The anchors of `sonora-bench files`: libsndfile, libsoxr and libavformat/libavcodec called directly from C.
        .target(
            name: "CFileBenchAnchor",
            linkerSettings: [.linkedLibrary("sndfile"), .linkedLibrary("soxr"), .linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("avutil")]
        ),
        // The loopback ALSA plugin (ioplug, C). PIC must be defined or alsa-lib cannot load it.
        // Its unsafe flag is allowed: SwiftPM refuses unsafe flags only in the targets of a product
        // another package uses from a versioned dependency, and no library product reaches this target.
        .target(
            name: "SonoraLoopPCM",
            cSettings: [.define("PIC"), .unsafeFlags(["-fPIC"])],
            linkerSettings: [.linkedLibrary("asound"), .linkedLibrary("pthread"), .linkedLibrary("m")]
        ),
        // alsa-lib's variadic error handler, routed to a plain callback (Swift cannot define one).
        .target(name: "CSonoraALSA", linkerSettings: [.linkedLibrary("asound")]),
        // The few Linux calls Swift cannot reach directly (CPU_SET macros, MXCSR/FPCR, memfd).
        .target(name: "CSonoraSystem", linkerSettings: [.linkedLibrary("dl")]),

        // Core: formats, errors, time, buffers, lock-free rings and queues, realtime threads.
        .target(
            name: "SonoraCore",
            dependencies: [
                "CSonoraSystem",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // DSP: stateless and small-state kernels (biquads, ramps, mixing, meters, sample conversion, generators).
        .target(name: "SonoraDSP", dependencies: ["SonoraCore", "CSoxr"]),

        // HAL: audio devices (ALSA mmap I/O thread, null, offline, in-process loopback), enumeration, xrun accounting.
        .target(
            name: "SonoraHAL",
            dependencies: ["SonoraCore", "SonoraDSP", "CALSA", "CSonoraALSA", "CSonoraSystem", "CJackLoader", .product(name: "Logging", package: "swift-log")]
        ),

        // Files: AudioFile, ExtAudioFile, AudioFileStream, AudioConverter, codecs (IMA4 ours; AAC, MP3, ALAC,
        // FLAC, Opus through FFmpeg) over libsndfile, libsoxr and libavcodec/libavformat.
        .target(name: "SonoraFile", dependencies: ["SonoraCore", "SonoraDSP", "CSndfile", "CSoxr", "CFFmpeg", "CFFmpegLoader", "CMySofa"]),

        // Units: the AudioUnit model (properties, parameters, render), built-in units, AudioGraph, offline render.
        .target(
            name: "SonoraUnits",
            dependencies: ["SonoraCore", "SonoraDSP", "SonoraHAL", "SonoraFile", "CSonoraSystem", "CSoxr", .product(name: "Logging", package: "swift-log")]
        ),

        // Pipelines: config files (YAML) → validated graphs on devices; the appliance runtime and its control socket.
        .target(
            name: "SonoraPipeline",
            dependencies: [
                "SonoraCore", "SonoraDSP", "SonoraHAL", "SonoraFile", "SonoraUnits", "SonoraLV2", "SonoraVoice",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),

        // LV2 host support in C: log:log's variadic printf callbacks.
        .target(name: "CLV2Support", dependencies: ["CLilv"]),
        // LV2 plugins as audio units: a lilv host with Sonora's features.
        .target(
            name: "SonoraLV2",
            dependencies: [
                "SonoraCore", "SonoraDSP", "SonoraUnits", "CLilv", "CLV2Support",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // An LV2 plugin written in Swift: the Swift runtime linked in statically, so any host can load and unload it.
        .target(name: "CLV2Core", path: "Plugins/CLV2Core"),
        .target(
            name: "SonoraGainPlugin", dependencies: ["CLV2Core"], path: "Plugins/SonoraGain",
            linkerSettings: [.unsafeFlags(["-static-stdlib"])]
        ),

        // The anchor of `sonora-bench lv2`: a bare C loop around a plugin's run().
        .target(name: "CLV2BenchAnchor"),
        // `sonora-bench refcounts`: counts the Swift runtime's retains and releases per thread by
        // defining their entry points in the benchmark executable (never linked into anything else).
        .target(name: "CRefcountCounter"),
        // `sonora-bench server`'s anchors: jack_simple_client-style JACK2 clients, and the
        // sine source every contender runs.
        .target(name: "CServerBenchAnchor", linkerSettings: [.linkedLibrary("jack"), .linkedLibrary("m")]),

        // Voice: echo canceller (delay estimation, partitioned adaptive filter, residual echo
        // suppression, drift) and the voice-processing units built on SonoraUnits' model.
        .target(
            name: "SonoraVoice",
            dependencies: ["SonoraCore", "SonoraDSP", "SonoraHAL", "SonoraUnits"]
        ),

        // Toolbox: the high-level services' API façades (Audio Queue Services first), one folder per service.
        .target(
            name: "SonoraToolbox",
            // CALSA: the audio session reads the card's control names (route roles) and volume.
            dependencies: ["SonoraCore", "SonoraDSP", "SonoraHAL", "SonoraFile", "SonoraUnits", "CALSA"]
        ),

        // The one CLI: only what it uses (no benchmark anchors).
        .executableTarget(
            name: "sonora",
            dependencies: [
                "SonoraCore",
                "SonoraDSP",
                "SonoraFile",
                "SonoraUnits",
                "SonoraHAL",
                "SonoraLV2",
                "SonoraPipeline",
                "SonoraVoice",
                "SonoraToolbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Records with AudioRecorder until killed (the recorder-survives-SIGKILL test).
        .executableTarget(
            name: "sonora-test-recorder", dependencies: ["SonoraCore", "SonoraToolbox"], path: "Tests/Support/RecorderProcess"
        ),

        // The benchmarks, each beside its anchor (`sonora-bench ring|graph|files|io|lv2|voice|queue|sounds|server`).
        .executableTarget(
            name: "sonora-bench",
            dependencies: [
                "SonoraCore",
                "SonoraDSP",
                "SonoraFile",
                "SonoraUnits",
                "SonoraHAL",
                "SonoraLV2",
                "SonoraVoice",
                "SonoraToolbox",
                // `refcounts` serves appliance clients in process (the appliance's I/O thread).
                "SonoraPipeline",
                "CSndfile",
                "CSpeexDSP",
                "CKissFFT",
                "CJack",
                "CFileBenchAnchor",
                "CLV2BenchAnchor",
                "CRefcountCounter",
                "CServerBenchAnchor",
                "CSonoraSystem",
                "SonoraPositionalTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Test support: counts heap allocations per thread by overriding malloc in the test binary.
        .target(name: "CAllocationCounter", path: "Tests/Support/CAllocationCounter"),
        // Test support for every suite (as NIOTestUtils is for NIO): allocation counting, a seeded
        // generator, test signals and measurements, temporary folders, the package root, a CLI runner.
        // It imports no Sonora module, so any test target can use it without linking more.
        .target(name: "SonoraTestSupport", dependencies: ["CAllocationCounter"], path: "Tests/Support/SonoraTestSupport"),
        // Test support that needs the HAL (a scriptable device, an I/O probe): only suites at or above HAL link it.
        .target(
            name: "SonoraHALTestSupport", dependencies: ["SonoraTestSupport", "SonoraCore", "SonoraHAL"],
            path: "Tests/Support/SonoraHALTestSupport"
        ),
        // OpenAL Soft's loopback device and positional scenes rendered through it and through Sonora's
        // OpenAL-style API: the comparison tests and `sonora-bench positional` share it.
        .target(
            name: "SonoraPositionalTestSupport", dependencies: ["COpenALSoft", "SonoraToolbox"],
            path: "Tests/Support/SonoraPositionalTestSupport"
        ),
        // CAllocationCounter stays declared where suites imported it before the support targets existed.
        .testTarget(name: "SonoraTestSupportTests", dependencies: ["SonoraTestSupport", "SonoraHALTestSupport", "SonoraCore", "SonoraHAL"]),
        .testTarget(name: "SonoraCoreTests", dependencies: ["SonoraCore", "SonoraTestSupport", "CAllocationCounter"]),
        .testTarget(name: "SonoraDSPTests", dependencies: ["SonoraCore", "SonoraDSP", "SonoraTestSupport"]),
        .testTarget(
            name: "SonoraHALTests",
            dependencies: ["SonoraCore", "SonoraHAL", "SonoraTestSupport", "SonoraHALTestSupport", "CAllocationCounter", "CSonoraSystem", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "SonoraPipelineTests",
            dependencies: [
                "SonoraPipeline", "SonoraLV2", "SonoraToolbox", "SonoraUnits", "SonoraFile", "SonoraHAL", "SonoraCore", "SonoraTestSupport",
                "SonoraHALTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SonoraFileTests",
            dependencies: ["SonoraCore", "SonoraDSP", "SonoraFile", "CSndfile", "CFFmpeg", "CMySofa", "SonoraTestSupport"], exclude: ["Corpus"]
        ),
        .testTarget(
            name: "SonoraUnitsTests",
            dependencies: ["SonoraCore", "SonoraDSP", "SonoraFile", "SonoraUnits", "SonoraHAL", "SonoraTestSupport", "SonoraHALTestSupport", "CAllocationCounter"]
        ),
        .testTarget(
            name: "SonoraLV2Tests",
            dependencies: ["SonoraCore", "SonoraLV2", "SonoraUnits", "SonoraFile", "CLilv", "CLV2Support", "SonoraTestSupport", "CAllocationCounter"]
        ),
        .testTarget(
            name: "SonoraVoiceTests",
            dependencies: ["SonoraCore", "SonoraVoice", "SonoraUnits", "SonoraHAL", "SonoraDSP", "SonoraTestSupport", "SonoraHALTestSupport", "CAllocationCounter"]
        ),
        .testTarget(
            name: "SonoraToolboxTests",
            dependencies: [
                "SonoraToolbox", "SonoraCore", "SonoraDSP", "SonoraHAL", "SonoraFile", "SonoraUnits", "SonoraTestSupport", "SonoraHALTestSupport",
                "SonoraPositionalTestSupport", "COpenALSoft", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Runs the built `sonora` binary (help, JSON output, exit statuses).
        .testTarget(name: "CLITests", dependencies: ["SonoraTestSupport"]),
        .testTarget(name: "SystemLibraryTests", dependencies: ["CALSA", "CLilv", "CSndfile", "CSoxr", "CJack"]),
    ]
)

// SONORA_TEST_TARGETS (comma-separated names) declares only those test targets. `make tsan`
// uses it: its suites live in six test targets, and building the others (files, DSP, voice, the
// CLI's) under ThreadSanitizer was minutes of `make test` spent on tests it never runs there.
// Unset, every test target is declared.
if let selected = Context.environment["SONORA_TEST_TARGETS"] {
    let names = Set(selected.split(separator: ",").map(String.init))
    package.targets.removeAll { $0.type == .test && !names.contains($0.name) }
}
