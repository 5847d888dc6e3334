#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

/// The reference documents' queue listings on a real ALSA PCM: Sonora's `sonoraloop` plugin
/// (48 kHz, Float32; what playback plays at loop frame F, capture records at loop frame F).
/// An output queue plays a file through it and a capture on the same loop records it back.
/// Realtime: run this suite alone (`make test` does, with the other REALTIME_SUITES).
@Suite("Audio queue listings on the sonoraloop ALSA plugin", .serialized,
       .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct AudioQueueLoopbackALSATests {
    static let loopNumber = Atomic<Int>(0)
    static let period = 256
    static let periods = 3

    static func configuration(input: Int, output: Int) -> AudioDeviceConfiguration {
        AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: period, periods: periods, inputChannels: input, outputChannels: output,
            sampleFormat: .float32LE, requiresExactPeriod: true, realtimePriority: 60)
    }

    static func newLoop(_ label: String) -> String { "sonoraloop:aq\(label)\(loopNumber.add(1, ordering: .relaxed).newValue)" }

    /// A capture-only I/O unit on `loop`, recording into `LoopbackCapture` until stopped.
    static func captureUnit(loop: String, channels: Int, seconds: Double) throws -> (IOUnit, LoopbackCapture, ALSADevice) {
        let device = try ALSADevice(capture: loop, playback: nil, configuration: configuration(input: channels, output: 0))
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: IOUnit.inputElement)
        try io.setIOEnabled(false, scope: .output, element: IOUnit.outputElement)
        try io.setStreamFormat(.canonical(sampleRate: 48000, channels: channels), scope: .output, element: IOUnit.inputElement)
        let capture = LoopbackCapture(unit: io, channels: channels, capacity: Int(48000 * seconds))
        try io.setInputCallback(capture)
        try io.initialize()
        return (io, capture, device)
    }

    /// The playback listing (AQPlayerState + HandleOutputBuffer, three buffers, packets read
    /// with AudioFileReadPackets) on `loop`, while a capture unit on the same loop records;
    /// returns the capture (interleaved) from the first frame that is not silence, and xruns.
    static func playListing(_ path: String, loop: String) throws -> (captured: [Float], xruns: Int) {
        let file = try AudioFile.open(path)
        defer { try? file.close() }
        let channels = Int(file.dataFormat.channelsPerFrame)
        let seconds = file.duration + 1.5
        let (captureIO, capture, captureDevice) = try captureUnit(loop: loop, channels: channels, seconds: seconds)
        let player = try LiveListingPlayer(file: file)
        let playback = try ALSADevice(capture: nil, playback: loop, configuration: configuration(input: 0, output: channels))
        let io = IOUnit()
        try io.setDevice(playback)
        try player.queue.setOutputUnit(io)
        try captureIO.start()
        try player.run()
        // The last frames are still in the loop: keep capturing until the capture is full.
        let deadline = HostTime.now.seconds + 30
        while capture.frames < capture.capacity && HostTime.now.seconds < deadline { usleep(20000) }
        captureIO.stop()
        captureIO.uninitialize()
        let xruns = captureDevice.statistics.xruns + playback.statistics.xruns
        let samples = capture.interleaved
        let first = (0..<(samples.count / channels)).first { frame in (0..<channels).contains { samples[frame * channels + $0] != 0 } } ?? 0
        return (Array(samples[(first * channels)...]), xruns)
    }

    /// The lag (0…`range`) at which `reference`'s first `window` frames correlate best with
    /// `signal` (first channel of interleaved data): where the file begins in the capture.
    static func bestLag(_ signal: [Float], _ reference: [Float], channels: Int, window: Int = 1024, range: Int = 64) -> Int {
        var best = (lag: 0, value: -Double.infinity)
        for lag in 0...range {
            var sum = 0.0
            for frame in 0..<window where (lag + frame) * channels < signal.count {
                sum += Double(signal[(lag + frame) * channels]) * Double(reference[frame * channels])
            }
            if sum > best.value { best = (lag, sum) }
        }
        return best.lag
    }

    /// Plays `path` by the listing until a run without an xrun (a shared VM has some), and
    /// checks the capture equals `expected` frame for frame (`tolerance` 0: bit-exact).
    static func expectRoundTrip(_ path: String, expected: [Float], channels: Int, _ label: String) throws {
        var result = try playListing(path, loop: newLoop(label))
        var attempts = 1
        while result.xruns > 0 && attempts < 4 {
            result = try playListing(path, loop: newLoop(label))
            attempts += 1
        }
        guard result.xruns == 0 else {
            Issue.record("every run had an xrun (\(result.xruns) in the last); the capture was not compared")
            return
        }
        // The capture begins where the file's first non-zero frame does; cross-correlation
        // confirms the file starts there, not a few frames later.
        let leadingZeros = (0..<(expected.count / channels)).first { frame in (0..<channels).contains { expected[frame * channels + $0] != 0 } } ?? 0
        let lag = bestLag(result.captured, Array(expected[(leadingZeros * channels)...]), channels: channels)
        #expect(lag == 0, "\(label): the file begins \(lag) frames after the capture's first sound")
        let aligned = Array(result.captured[(lag * channels)...])
        let body = Array(expected[(leadingZeros * channels)...])
        #expect(aligned.count >= body.count, "\(label): captured \(aligned.count / channels) frames of \(body.count / channels)")
        let compared = Array(aligned.prefix(body.count))
        // Stop after the queued buffers keeps the device running until its buffer has played
        // out: the last buffer's frames are heard too (they were cut before).
        let tail = min(period * periods * channels, body.count)
        let head = body.count - tail
        let firstDifference = zip(compared.prefix(head), body.prefix(head)).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(firstDifference == nil, "\(label): sample \(firstDifference?.offset ?? -1) differs: \(String(describing: firstDifference?.element))")
        let lastDifference = zip(compared.dropFirst(head), body.dropFirst(head)).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(lastDifference == nil, "\(label): sample \(head + (lastDifference?.offset ?? 0)) of the last buffer differs: \(String(describing: lastDifference?.element))")
        // After the file: silence (played once, nothing repeated).
        #expect(aligned.dropFirst(body.count).allSatisfy { $0 == 0 }, "\(label): sound after the file's last frame")
    }

    @Test("the listing plays a 16-bit WAV through ALSA: the capture is the file, bit-exact, once")
    func listingPCM() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("noise.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", path, "synth", "0.8", "whitenoise", "gain", "-6"])
            try Self.expectRoundTrip(path, expected: try decodedSamples(of: path), channels: 2, "LEI16")
        }
    }

    @Test("the listing on one duplex device: the file begins exactly the device's latency (one buffer) into the capture, every frame equal")
    func listingAtKnownLatency() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("noise.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth", "0.5", "whitenoise", "gain", "-6"])
            let expected = try decodedSamples(of: path)
            var outcome: (captured: [Float], xruns: Int)?
            for _ in 0..<4 where outcome?.xruns ?? 1 > 0 {
                let (device, io, capture) = try Self.duplexCapture("duplex", channels: 1, seconds: 2)
                let file = try AudioFile.open(path)
                let player = try LiveListingPlayer(file: file)
                try player.queue.setOutputUnit(io)
                try player.run()
                try file.close()
                outcome = (capture.interleaved, device.statistics.xruns)
            }
            let (captured, xruns) = try #require(outcome)
            guard xruns == 0 else {
                Issue.record("every run had an xrun (\(xruns) in the last); the capture was not compared")
                return
            }
            // Capture and playback start on the same period of one device: a frame played at
            // stream frame F is captured at F + buffer (sonora latency measures the same).
            let latency = Self.period * Self.periods
            let firstSound = try #require(captured.firstIndex { $0 != 0 })
            let leading = try #require(expected.firstIndex { $0 != 0 })
            let lag = Self.bestLag(Array(captured.dropFirst(latency)), expected, channels: 1, range: 256)
            #expect(lag == 0 && firstSound == latency + leading, "the file begins \(lag) frames after the device latency; first sound at \(firstSound)")
            // The unit stops once the device has played its buffer out: the capture holds the whole file.
            let heard = Array(captured.dropFirst(latency + lag).prefix(expected.count))
            #expect(heard.count == expected.count, "captured \(heard.count) of \(expected.count) frames")
            let firstDifference = zip(heard, expected).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(firstDifference == nil, "frame \(firstDifference?.offset ?? -1) differs: \(String(describing: firstDifference?.element))")
        }
    }

    @Test("the listing plays IMA4 and ALAC CAFs through ALSA: the capture is the decoded file, and near the source")
    func listingCodecs() throws {
        try withTemporaryFolder { folder in
            let source = folder.path("source.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", source, "synth", "0.6", "sine", "440", "gain", "-3"])
            let original = try decodedSamples(of: source)
            // IMA4 through sox; ALAC through ffmpeg (both into CAF, as the guide's files are).
            let ima4 = folder.path("tone-ima4.caf"), alac = folder.path("tone-alac.caf")
            try runTool("/usr/bin/sox", [source, "-e", "ima-adpcm", ima4])
            try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", source, "-c:a", "alac", alac])
            for (path, label) in [(ima4, "IMA4"), (alac, "ALAC")] {
                let file = try AudioFile.open(path)
                let frames = file.frameCount
                try file.close()
                let decoded = Array(try decodedSamples(of: path).prefix(frames))
                try Self.expectRoundTrip(path, expected: decoded, channels: 1, label)
                // The codec's own tolerance against the source: ALAC lossless, IMA4 within ADPCM's error.
                let error = zip(decoded, original).map { abs($0 - $1) }.max() ?? 1
                if label == "ALAC" { #expect(decoded == Array(original.prefix(decoded.count))) } else { #expect(error < 0.05, "IMA4 error \(error)") }
            }
        }
    }

    @Test("start latency: start() to the first sample out of the loopback is the device's buffer, exactly")
    func startLatency() throws {
        var measured: Int?
        for _ in 0..<4 where measured == nil {
            let loop = Self.newLoop("latency")
            let device = try ALSADevice(capture: loop, playback: loop, configuration: Self.configuration(input: 1, output: 1))
            let io = IOUnit()
            try io.setDevice(device)
            try io.setIOEnabled(true, scope: .input, element: IOUnit.inputElement)
            try io.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: IOUnit.inputElement)
            let capture = LoopbackCapture(unit: io, channels: 1, capacity: 48000 / 2)
            try io.setInputCallback(capture)
            let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 1, sample: .float32)) { _, _ in }
            defer { try? queue.dispose(immediate: true) }
            try queue.setOutputUnit(io)
            let buffer = try queue.allocateBuffer(byteCapacity: 48000 * 4)
            buffer.fill(with: bytes([Float](repeating: 0.5, count: 48000)))
            try queue.enqueue(buffer)
            try queue.prime()
            try queue.start()
            while capture.frames < capture.capacity { usleep(10000) }
            try queue.stop(immediate: true)
            guard device.statistics.xruns == 0 else { continue }
            measured = capture.interleaved.firstIndex { $0 != 0 }
        }
        let frames = try #require(measured, "no run without an xrun, or nothing came back")
        // The loop's round trip is one buffer (periods × period): sonora latency measures the
        // same on this plugin (LatencyCLITests). Start adds nothing to it.
        #expect(frames == Self.period * Self.periods, "first sample after \(frames) frames")
    }

    @Test("SpeakHere: an input queue records the loop into a CAF, an output queue plays the CAF back through it")
    func recordThenPlayBack() throws {
        try withTemporaryFolder { folder in
            let loop = Self.newLoop("speakhere")
            let signal = sixteenBitSignal(frames: 24000, channels: 1)
            // The sound in the room: a playback-only unit on the loop playing the signal once.
            let (recorded, xruns) = try Self.record(signal, loop: loop, path: folder.path("speakhere.caf"))
            guard xruns == 0 else {
                print("skipped the comparison: \(xruns) xruns while recording on this VM")
                return
            }
            // The recording holds the signal, bit for bit, after the loop's silence.
            let lead = try #require(signal.firstIndex { $0 != 0 })
            let start = try #require(recorded.firstIndex { $0 != 0 }) - lead
            #expect(start >= 0 && recorded.count - start >= signal.count)
            #expect(Array(recorded[start...].prefix(signal.count)) == signal)
            // Played back through an output queue by the listing: the capture is the CAF.
            try Self.expectRoundTrip(folder.path("speakhere.caf"), expected: try decodedSamples(of: folder.path("speakhere.caf")), channels: 1, "SpeakHere")
        }
    }

    /// Plays `signal` into `loop` while an input queue (LEI16, three buffers) records the
    /// loop's capture into a CAF at `path`; returns the CAF's samples and the xruns.
    static func record(_ signal: [Float], loop: String, path: String) throws -> ([Float], Int) {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int16)
        let file = try AudioFile.create(path, type: .caf, format: format)
        let writer = SpeakHereCAFWriter(file: file)
        let input = try AudioInputQueue(format: format) { queue, buffer, _, _ in writer.write(queue, buffer) }
        let captureDevice = try ALSADevice(capture: loop, playback: nil, configuration: configuration(input: 1, output: 0))
        let captureIO = IOUnit()
        try captureIO.setDevice(captureDevice)
        try input.setInputUnit(captureIO)
        for _ in 0..<3 { try input.enqueue(try input.allocateBuffer(byteCapacity: 4800 * 2)) }

        let playback = try ALSADevice(capture: nil, playback: loop, configuration: configuration(input: 0, output: 1))
        let source = LoopbackSignalSource(signal)
        let io = IOUnit()
        try io.setDevice(playback)
        try io.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: IOUnit.outputElement)
        try io.setRenderCallback(source, input: IOUnit.outputElement)
        try io.initialize()
        try input.start()
        try io.start()
        let deadline = HostTime.now.seconds + 30
        while writer.frames < signal.count + 24000 && HostTime.now.seconds < deadline { usleep(20000) }
        io.stop()
        try input.stop(immediate: false)
        writer.stop()
        try input.dispose()
        try file.close()
        let xruns = captureDevice.statistics.xruns + playback.statistics.xruns
        if let failure = writer.failure { throw failure }
        return (try decodedSamples(of: path), xruns)
    }
}
