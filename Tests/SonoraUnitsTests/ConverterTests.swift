import Foundation
import SonoraCore
import SonoraDSP
import SonoraTestSupport
import Testing
@testable import SonoraUnits

@Suite("Converter")
struct ConverterTests {
    final class Sine: RenderCallbackTarget {
        var oscillator: SineOscillator
        let amplitude: Float
        init(_ frequency: Double, rate: Double, amplitude: Float = 0.5) {
            oscillator = SineOscillator(frequency: frequency, sampleRate: rate)
            self.amplitude = amplitude
        }
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let buffers = request.pointee.buffers
            oscillator.render(into: buffers.samples(0), count: request.pointee.frameCount, amplitude: amplitude)
            for channel in 1..<max(1, buffers.channelCount) {
                copySamples(from: buffers.samples(0), to: buffers.samples(channel), count: request.pointee.frameCount)
            }
            return .noError
        }
    }

    static func converter(from inputRate: Double, to outputRate: Double, channels: (Int, Int) = (1, 1), quality: Float = 3) throws -> ConverterUnit {
        let unit = ConverterUnit()
        try unit.setStreamFormat(.canonical(sampleRate: inputRate, channels: channels.0), scope: .input, element: 0)
        try unit.setStreamFormat(.canonical(sampleRate: outputRate, channels: channels.1), scope: .output, element: 0)
        try unit.setParameter(ConverterUnit.Parameter.quality, to: quality)
        return unit
    }

    static func render(_ unit: ConverterUnit, seconds: Double, slice: Int = 480) throws -> [[Float]] {
        let rate = try unit.streamFormat(scope: .output, element: 0).sampleRate
        let channels = Int(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame)
        var out = Array(repeating: [Float](), count: channels)
        var done = 0
        while done < Int(rate * seconds) {
            let block = try renderFrames(unit, frames: slice, sampleTime: Double(done), channels: channels)
            for channel in 0..<channels { out[channel] += block[channel] }
            done += slice
        }
        return out
    }

    @Test func channelMapsAndDefaultMixes() throws {
        final class Stereo: RenderCallbackTarget {
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                request.pointee.buffers[0].update(repeating: 0.2)
                request.pointee.buffers[1].update(repeating: 0.6)
                return .noError
            }
        }
        let down = try Self.converter(from: 48000, to: 48000, channels: (2, 1))
        try down.setRenderCallback(Stereo(), input: 0)
        try down.initialize()
        #expect(try renderFrames(down, frames: 16, channels: 1)[0].allSatisfy { abs($0 - 0.4) < 1e-7 })

        let swapped = try Self.converter(from: 48000, to: 48000, channels: (2, 3))
        swapped.channelMap = [1, 0, -1]
        try swapped.setRenderCallback(Stereo(), input: 0)
        try swapped.initialize()
        let out = try renderFrames(swapped, frames: 16, channels: 3)
        #expect(out[0].allSatisfy { $0 == 0.6 } && out[1].allSatisfy { $0 == 0.2 } && out[2].allSatisfy { $0 == 0 })

        let bad = try Self.converter(from: 48000, to: 48000, channels: (2, 2))
        bad.channelMap = [0, 5]
        let error = #expect(throws: AudioError.self) { try bad.initialize() }
        #expect(error?.message.contains("channel map [0, 5] does not fit 2 → 2 channels") == true)
    }

    @Test(arguments: [(44100.0, 48000.0), (48000.0, 44100.0), (48000.0, 16000.0), (22050.0, 96000.0)])
    func passbandKeepsFrequencyAndLevel(rates: (Double, Double)) throws {
        let unit = try Self.converter(from: rates.0, to: rates.1)
        try unit.setRenderCallback(Sine(1000, rate: rates.0), input: 0)
        try unit.initialize()
        let out = try Self.render(unit, seconds: 1)[0]
        let settled = out[Int(rates.1 * 0.5)...]
        // A 0.5-amplitude sine is -9.03 dB RMS.
        #expect(abs(SignalMeasurement.rmsDBFS(settled) - 20 * log10(0.5 / 2.squareRoot())) < 0.05)
        let crossings = zip(settled, settled.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        let seconds = Double(settled.count) / rates.1
        #expect(abs(Double(crossings) / seconds - 2000) < 5, "\(crossings) crossings in \(seconds) s")
    }

    @Test func stopbandRemovesWhatTheNewRateCannotHold() throws {
        // 15 kHz is above 22050 Hz's Nyquist frequency (11025 Hz): it must vanish, not alias.
        let unit = try Self.converter(from: 48000, to: 22050)
        try unit.setRenderCallback(Sine(15000, rate: 48000), input: 0)
        try unit.initialize()
        let out = try Self.render(unit, seconds: 1)[0]
        #expect(SignalMeasurement.rmsDBFS(out[11025...]) < -100)
    }

    /// 48 kHz → 44.1 kHz → 48 kHz through a graph: the sine comes back at its
    /// frequency and level, and matches the original once the converters' delay is allowed for.
    @Test func roundTripThroughTwoConvertersInAGraph() throws {
        let graph = AudioGraph()
        let tone = ToneGeneratorUnit()
        try tone.setParameter(ToneGeneratorUnit.Parameter.frequency, to: 997)
        try tone.setParameter(ToneGeneratorUnit.Parameter.level, to: -6)
        let down = ConverterUnit()
        try down.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .output, element: 0)
        let up = ConverterUnit()
        try up.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .input, element: 0)
        let source = graph.addNode(tone), d = graph.addNode(down), u = graph.addNode(up), out = graph.addNode(GenericOutputUnit())
        try graph.connect(source, bus: 0, to: d, input: 0)
        try graph.connect(d, bus: 0, to: u, input: 0)
        try graph.connect(u, bus: 0, to: out, input: 0)
        try graph.initialize()
        let result = try graph.renderOffline(frameCount: 48000, sliceFrames: 512)[0]
        let delay = graph.latencyFrames
        #expect(delay > 0 && delay < 4800, "converter delay \(delay) frames")
        // The reference: the same generator alone.
        let reference = ToneGeneratorUnit()
        try reference.setParameter(ToneGeneratorUnit.Parameter.frequency, to: 997)
        try reference.setParameter(ToneGeneratorUnit.Parameter.level, to: -6)
        let referenceOut = GenericOutputUnit()
        try referenceOut.connect(input: 0, from: reference, bus: 0)
        try reference.initialize()
        try referenceOut.initialize()
        let original = try referenceOut.renderOffline(frameCount: 48000)[0]
        // Find the delay that best aligns the two, then compare sample by sample.
        var best = (lag: 0, error: Double.infinity)
        for lag in 0..<4800 {
            var error = 0.0
            for index in stride(from: 24000, to: 24400, by: 1) { error += Double(abs(result[index] - original[index - lag])) }
            if error < best.error { best = (lag, error) }
        }
        var residual = 0.0
        var signal = 0.0
        for index in 24000..<47000 {
            let difference = Double(result[index] - original[index - best.lag])
            residual += difference * difference
            signal += Double(original[index - best.lag]) * Double(original[index - best.lag])
        }
        // Two high-quality conversions of an in-band sine: at least 60 dB signal to error.
        #expect(10 * log10(signal / residual) > 60, "lag \(best.lag), SNR \(10 * log10(signal / residual)) dB")
    }

    @Test func renderingAllocatesNothingAfterWarmUp() throws {
        guard AllocationCounter.isAvailable else { return }
        let unit = try Self.converter(from: 44100, to: 48000, channels: (2, 2))
        try unit.setRenderCallback(Sine(440, rate: 44100), input: 0)
        try unit.setMaximumFramesPerSlice(256)
        try unit.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        var flags = RenderActionFlags()
        for cycle in 0..<100 {
            _ = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * 256)), bus: 0, frameCount: 256, into: buffers.list)
        }
        AllocationCounter.begin()
        var failures = 0
        for cycle in 100..<2100 {
            if unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * 256)), bus: 0, frameCount: 256, into: buffers.list) != .noError {
                failures += 1
            }
        }
        let calls = AllocationCounter.end()
        #expect(failures == 0)
        #expect(calls == 0, "\(calls) heap calls in 2000 converter renders")
    }
}

@Suite("Converter at the edges")
struct ConverterEdgeTests {
    /// Writes an int16 ramp (frame n, channel c → n·2 + c) in whatever layout the list has.
    final class Int16Ramp: PCMInputProvider {
        var next = 0
        override func fill(_ list: PCMBufferList, sampleTime: Double) -> AudioError.Code {
            let channels = Int(list.format.channelsPerFrame)
            for frame in 0..<list.frameCount {
                for channel in 0..<channels {
                    let value = Int16(truncatingIfNeeded: (next + frame) * 2 + channel)
                    let bytes = list.format.isBigEndian ? value.bigEndian : value.littleEndian
                    let offset = list.format.isInterleaved ? (frame * channels + channel) * 2 : frame * 2
                    let buffer = list.format.isInterleaved ? list.buffers[0] : list.buffers[channel]
                    buffer.storeBytes(of: bytes, toByteOffset: offset, as: Int16.self)
                }
            }
            next += list.frameCount
            return .noError
        }
    }

    @Test(arguments: [(true, true), (true, false), (false, true), (false, false)])
    func decodesInterleavedOrNotEitherEndianness(layout: (interleaved: Bool, bigEndian: Bool)) throws {
        let converter = ConverterUnit()
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16, interleaved: layout.interleaved, bigEndian: layout.bigEndian)
        converter.inputProvider = Int16Ramp()
        try converter.setStreamFormat(format, scope: .input, element: 0)
        try converter.initialize()
        let out = try renderFrames(converter, frames: 300)
        for frame in [0, 1, 77, 299] {
            #expect(out[0][frame] == Float(frame * 2) / 32768)
            #expect(out[1][frame] == Float(frame * 2 + 1) / 32768)
        }
    }

    @Test func refusesARawFormatWithoutAProviderAndRawOutputFormats() throws {
        let converter = ConverterUnit()
        try converter.setStreamFormat(.linearPCM(sampleRate: 48000, channels: 2, sample: .int24), scope: .input, element: 0)
        let error = #expect(throws: AudioError.self) { try converter.initialize() }
        #expect(error?.message.contains("needs an inputProvider") == true)
        let output = #expect(throws: AudioError.self) {
            try converter.setStreamFormat(.linearPCM(sampleRate: 48000, channels: 2, sample: .int16), scope: .output, element: 0)
        }
        #expect(output?.code == .formatNotSupported)
    }

    @Test func rendersIntoAnyPCMFormatAtTheOutputEdge() throws {
        // Canonical 44.1 kHz source, resampled to 48 kHz, written as 24-bit packed little-endian interleaved.
        let converter = ConverterUnit()
        try converter.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .input, element: 0)
        try converter.setRenderCallback(ConverterTests.Sine(1000, rate: 44100), input: 0)
        try converter.initialize()
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int24)
        let pcm = try OwnedPCMBufferList(format: format, frameCapacity: 48000)
        #expect(converter.renderPCM(into: pcm.list(frameCount: 48000), frameCount: 48000, timeStamp: AudioTimeStamp(sampleTime: 0)) == .noError)
        let bytes = pcm.bytes(0)
        func sample(_ frame: Int, _ channel: Int) -> Int32 {
            let offset = (frame * 2 + channel) * 3
            let raw = Int32(bytes[offset]) | Int32(bytes[offset + 1]) << 8 | Int32(bytes[offset + 2]) << 16
            return (raw << 8) >> 8
        }
        let peak = (24000..<48000).map { abs(sample($0, 0)) }.max() ?? 0
        #expect(abs(Double(peak) / 8_388_608 - 0.5) < 0.002, "peak \(peak)")
        #expect((24000..<24100).allSatisfy { sample($0, 0) == sample($0, 1) })
        let wrongChannels = try OwnedPCMBufferList(format: .linearPCM(sampleRate: 48000, channels: 1, sample: .int16), frameCapacity: 16)
        #expect(converter.renderPCM(into: wrongChannels.list(frameCount: 16), frameCount: 16, timeStamp: AudioTimeStamp(sampleTime: 0)) == .formatNotSupported)
    }
}
