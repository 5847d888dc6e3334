import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Encode then decode through two AudioConverters, the encoder's cookie and prime info handed to
/// the decoder as a file would carry them: the lossy codecs come back sample-aligned (the
/// cross-correlation with the source peaks at lag 0) and as long as the source; ALAC and FLAC
/// come back bit for bit.
@Suite("Codec round trips")
struct CodecRoundTripTests {
    /// Encodes `interleaved` (float32) with the pull form, 1000 frames per input call.
    static func encode(
        _ interleaved: [Float], to destination: StreamFormat, bitRate: Int? = nil
    ) throws -> (packets: AudioConverterPackets, cookie: [UInt8]?, prime: AudioConverterPrimeInfo) {
        let channels = Int(destination.channelsPerFrame)
        let source = StreamFormat.linearPCM(sampleRate: destination.sampleRate, channels: channels, sample: .float32)
        let converter = try AudioConverter(from: source, to: destination)
        if let bitRate { try converter.setBitRate(bitRate) }
        var next = 0
        var packets = AudioConverterPackets()
        while true {
            let made = try converter.fillPackets(packetCount: 7) {
                let end = min(next + 1000 * channels, interleaved.count)
                defer { next = end }
                return interleaved[next..<end].withUnsafeBytes { Array($0) }
            }
            #expect(made.count <= 7)
            if made.count == 0 { break }
            packets.append(contentsOf: made)
        }
        return (packets, try converter.compressionMagicCookie, converter.primeInfo)
    }

    /// Decodes all `packets` at once (the push form), dropping `prime`.
    static func decode(
        _ packets: AudioConverterPackets, from format: StreamFormat, cookie: [UInt8]?, prime: AudioConverterPrimeInfo,
        rate: Double? = nil
    ) throws -> [Float] {
        let destination = StreamFormat.linearPCM(sampleRate: rate ?? format.sampleRate, channels: Int(format.channelsPerFrame), sample: .float32)
        let converter = try AudioConverter(from: format, to: destination)
        converter.decompressionMagicCookie = cookie
        converter.primeInfo = prime
        let bytes = try converter.convert(packets: packets) + converter.flush()
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Chirp (left) and seeded noise (right), interleaved, quantized to `bits` when given.
    static func signal(frames: Int, rate: Double, bits: Int? = nil) -> [Float] {
        let noise = TestSignal.whiteNoise(count: frames, seed: 7, amplitude: 0.3)
        var result = [Float](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let t = Double(frame) / rate
            result[2 * frame] = Float(0.4 * sin(2 * Double.pi * (100 + 3000 * t) * t))
            result[2 * frame + 1] = noise[frame]
        }
        guard let bits else { return result }
        let scale = Float(1 << (bits - 1))
        return result.map { ($0 * scale).rounded() / scale + 0 }  // + 0: no -0.0, which integers cannot hold
    }

    /// The lag in −range…range where the cross-correlation of `b` against `a` (channel `channel`) peaks.
    static func peakLag(_ a: [Float], _ b: [Float], channel: Int, channels: Int, range: Int = 64) -> Int {
        let frames = min(a.count, b.count) / channels
        var best = (lag: 0, value: -Double.infinity)
        for lag in -range...range {
            var sum = 0.0
            for frame in range..<(frames - range) {
                sum += Double(a[frame * channels + channel]) * Double(b[(frame + lag) * channels + channel])
            }
            if sum > best.value { best = (lag, sum) }
        }
        return best.lag
    }

    struct LossyCase: CustomTestStringConvertible, Sendable {
        var formatID: AudioFormatID
        var rate: Double
        var bitRate: Int
        var priming: Int
        var testDescription: String { "\(formatID)" }
    }

    @Test(arguments: [
        LossyCase(formatID: .mpeg4AAC, rate: 44100, bitRate: 160_000, priming: 1024),
        LossyCase(formatID: .mpegLayer3, rate: 44100, bitRate: 192_000, priming: 1105),
        LossyCase(formatID: .opus, rate: 48000, bitRate: 160_000, priming: 312),
    ])
    func lossyRoundTripIsSampleAligned(_ test: LossyCase) throws {
        let frames = Int(test.rate * 1.5) + 123
        let input = Self.signal(frames: frames, rate: test.rate)
        let format = StreamFormat.compressed(test.formatID, sampleRate: test.rate, channels: 2)
        let encoded = try Self.encode(input, to: format, bitRate: test.bitRate)
        #expect(encoded.prime.leadingFrames == test.priming)
        let packetFrames = Int(format.framesPerPacket == 0 ? 960 : format.framesPerPacket)
        #expect(encoded.packets.count * packetFrames == test.priming + frames + encoded.prime.trailingFrames)
        let output = try Self.decode(encoded.packets, from: format, cookie: encoded.cookie, prime: encoded.prime)
        #expect(output.count == input.count, "decoded \(output.count / 2) frames of \(frames)")
        for channel in 0..<2 {
            #expect(Self.peakLag(input, output, channel: channel, channels: 2) == 0, "channel \(channel)")
        }
        // Without the priming dropped the same stream lags by exactly the encoder delay.
        let raw = try Self.decode(encoded.packets, from: format, cookie: encoded.cookie, prime: .init())
        let shifted = Array(raw[(test.priming * 2)...])
        #expect(Self.peakLag(input, shifted, channel: 0, channels: 2) == 0)
    }

    struct LosslessCase: CustomTestStringConvertible, Sendable {
        var formatID: AudioFormatID
        var bits: Int
        var rate: Double
        var testDescription: String { "\(formatID) \(bits)-bit" }
    }

    @Test(arguments: [
        LosslessCase(formatID: .appleLossless, bits: 16, rate: 44100), LosslessCase(formatID: .appleLossless, bits: 24, rate: 48000),
        LosslessCase(formatID: .flac, bits: 16, rate: 44100), LosslessCase(formatID: .flac, bits: 24, rate: 96000),
    ])
    func losslessRoundTripIsBitExact(_ test: LosslessCase) throws {
        let frames = 10_000 + 77  // not a whole number of packets: the short last packet
        let input = Self.signal(frames: frames, rate: test.rate, bits: test.bits)
        var format = StreamFormat.compressed(test.formatID, sampleRate: test.rate, channels: 2)
        format.formatFlags = AudioFormatFlags(rawValue: test.bits == 16 ? 1 : 3)  // kAppleLosslessFormatFlag_16/24BitSourceData
        let encoded = try Self.encode(input, to: format)
        #expect(encoded.prime == AudioConverterPrimeInfo(leadingFrames: 0, trailingFrames: 0))
        #expect(encoded.cookie?.count == (test.formatID == .flac ? 34 : 24))
        let frameSum = encoded.packets.descriptions.indices.reduce(0) { sum, index in
            let variable = Int(encoded.packets.descriptions[index].variableFramesInPacket)
            return sum + (variable > 0 ? variable : Int(format.framesPerPacket))
        }
        #expect(frameSum == frames)
        let output = try Self.decode(encoded.packets, from: format, cookie: encoded.cookie, prime: encoded.prime)
        #expect(output.count == input.count)
        let difference = FFmpegReference.firstDifference(input, output, offset: 0)
        #expect(difference == nil, "first differing sample \(difference ?? -1): \(difference.map { "\(input[$0]) became \(output[$0])" } ?? "")")
    }

    /// Decoding to another rate resamples after the decoder (AAC at 44.1 kHz read at 48 kHz).
    @Test func decodingResamplesToTheDestinationRate() throws {
        let frames = 44100
        let input = Self.signal(frames: frames, rate: 44100)
        let format = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
        let encoded = try Self.encode(input, to: format)
        let output = try Self.decode(encoded.packets, from: format, cookie: encoded.cookie, prime: encoded.prime, rate: 48000)
        #expect(abs(output.count / 2 - 48000) <= 2, "\(output.count / 2) frames at 48 kHz for 1 s")
    }

    /// Encoding from another rate resamples before the encoder (44.1 kHz PCM into 48 kHz Opus).
    @Test func encodingResamplesToTheCodecsRate() throws {
        let input = Self.signal(frames: 44100, rate: 44100)
        let opus = StreamFormat.compressed(.opus, sampleRate: 48000, channels: 2)
        let converter = try AudioConverter(from: .linearPCM(sampleRate: 44100, channels: 2, sample: .float32), to: opus)
        var packets = try converter.convertToPackets(input.withUnsafeBytes { Array($0) })
        packets.append(contentsOf: try converter.flushPackets())
        let prime = converter.primeInfo
        let output = try Self.decode(packets, from: opus, cookie: try converter.compressionMagicCookie, prime: prime)
        #expect(abs(output.count / 2 - 48000) <= 2, "\(output.count / 2) frames at 48 kHz for 1 s")
    }

    @Test func cookiesHaveCoreAudiosForms() throws {
        let input = Self.signal(frames: 4800, rate: 48000)
        let aac = try Self.encode(input, to: .compressed(.mpeg4AAC, sampleRate: 48000, channels: 2)).cookie
        #expect(aac?.first == 0x03)  // an ES_Descriptor
        let opus = try Self.encode(input, to: .compressed(.opus, sampleRate: 48000, channels: 2)).cookie
        #expect(opus.map { Array($0.prefix(8)) } == Array("OpusHead".utf8))
        let mp3 = try Self.encode(input, to: .compressed(.mpegLayer3, sampleRate: 48000, channels: 2)).cookie
        #expect(mp3 == nil)
    }

    @Test func bitRateTakesEffect() throws {
        let input = Self.signal(frames: 44100, rate: 44100)
        let format = StreamFormat.compressed(.mpegLayer3, sampleRate: 44100, channels: 2)
        let low = try Self.encode(input, to: format, bitRate: 64000).packets.data.count
        let high = try Self.encode(input, to: format, bitRate: 256_000).packets.data.count
        #expect(Double(high) / Double(low) > 3.5, "\(low) vs \(high) bytes")
    }
}
