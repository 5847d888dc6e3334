import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// AudioConverterFillComplexBuffer's contract on compressed input, and every error path of the
/// codec converters with its Core Audio status.
@Suite("Codec converter contract and errors")
struct CodecConverterContractTests {
    static let aac = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
    static let pcm = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .float32)

    /// A second of AAC made by Sonora's encoder: packets and cookie.
    static func aacStream() throws -> (packets: AudioConverterPackets, cookie: [UInt8]?) {
        let encoded = try CodecRoundTripTests.encode(CodecRoundTripTests.signal(frames: 44100, rate: 44100), to: aac)
        return (encoded.packets, encoded.cookie)
    }

    static func code(_ body: () throws -> Void) -> AudioError.Code? {
        do { try body() } catch let error as AudioError { return error.code } catch { return nil }
        return nil
    }

    static func message(_ body: () throws -> Void) -> String {
        do { try body() } catch let error as AudioError { return error.message } catch { return "\(error)" }
        return ""
    }

    @Test func fillAsksForPacketsAndStopsAtTheEnd() throws {
        let stream = try Self.aacStream()
        let converter = try AudioConverter(from: Self.aac, to: Self.pcm)
        converter.decompressionMagicCookie = stream.cookie
        var next = 0
        var requests: [Int] = []
        var calls = 0
        var total = 0
        while true {
            let bytes = try converter.fill(frameCount: 1000) { count in
                calls += 1
                requests.append(count)
                let end = min(next + count, stream.packets.count)
                defer { next = end }
                var packets = AudioConverterPackets()
                for index in next..<end { packets.append(Array(stream.packets.packet(index))) }
                return packets
            }
            #expect(bytes.count <= 1000 * 8)  // never more than asked
            if bytes.isEmpty { break }
            total += bytes.count / 8
        }
        #expect(requests.allSatisfy { $0 >= 1 })
        let callsAtEnd = calls
        // After the end of the stream the callback is not called again.
        let after = try converter.fill(frameCount: 1000) { _ in
            calls += 1
            return AudioConverterPackets()
        }
        #expect(after.isEmpty && calls == callsAtEnd)
        // Everything decoded: as many frames as the packets hold (priming not dropped).
        #expect(total == stream.packets.count * 1024)
    }

    struct CallbackFailure: Error, Equatable {}

    @Test func aCallbackErrorStopsTheFillWithThatError() throws {
        let stream = try Self.aacStream()
        let converter = try AudioConverter(from: Self.aac, to: Self.pcm)
        converter.decompressionMagicCookie = stream.cookie
        #expect(throws: CallbackFailure()) {
            _ = try converter.fill(frameCount: 4096) { _ in throw CallbackFailure() }
        }
    }

    @Test func variableSizePacketsNeedDescriptions() throws {
        let stream = try Self.aacStream()
        let converter = try AudioConverter(from: Self.aac, to: Self.pcm)
        converter.decompressionMagicCookie = stream.cookie
        let bare = AudioConverterPackets(data: stream.packets.data, descriptions: [])
        #expect(Self.code { _ = try converter.convert(packets: bare) } == .requiresPacketDescriptions)
        #expect(Self.code { _ = try converter.fill(frameCount: 100) { _ in bare } } == .requiresPacketDescriptions)
        // The byte-only forms cannot carry descriptions.
        #expect(Self.code { _ = try converter.convert(stream.packets.data) } == .requiresPacketDescriptions)
        #expect(Self.code { _ = try converter.fill(frameCount: 100) { stream.packets.data } } == .requiresPacketDescriptions)
        let encoder = try AudioConverter(from: Self.pcm, to: Self.aac)
        #expect(Self.code { _ = try encoder.convert([UInt8](repeating: 0, count: 800)) } == .requiresPacketDescriptions)
    }

    @Test func aDescriptionOutsideTheDataIsRefused() throws {
        let converter = try AudioConverter(from: Self.aac, to: Self.pcm)
        let packets = AudioConverterPackets(data: [1, 2, 3], descriptions: [AudioStreamPacketDescription(startOffset: 2, dataByteSize: 5)])
        #expect(Self.code { _ = try converter.convert(packets: packets) } == .invalidInputSize)
        #expect(Self.message { _ = try converter.convert(packets: packets) }.contains("packet description 0"))
    }

    @Test func unsupportedFormatsAreFmtErrors() throws {
        // Opus is 48 kHz only; the error names the rate it takes.
        let opus = StreamFormat.compressed(.opus, sampleRate: 44100, channels: 2)
        #expect(Self.code { _ = try AudioConverter(from: Self.pcm, to: opus) } == .unsupportedDataFormat)
        #expect(Self.message { _ = try AudioConverter(from: Self.pcm, to: opus) }.contains("48000"))
        // LAME: mono or stereo.
        let pcm3 = StreamFormat.linearPCM(sampleRate: 44100, channels: 3, sample: .float32)
        let mp3 = StreamFormat.compressed(.mpegLayer3, sampleRate: 44100, channels: 3)
        #expect(Self.message { _ = try AudioConverter(from: pcm3, to: mp3) }.contains("libmp3lame"))
        // AAC at a rate it has no table for.
        let odd = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44000, channels: 2)
        let pcmOdd = StreamFormat.linearPCM(sampleRate: 44000, channels: 2, sample: .float32)
        #expect(Self.code { _ = try AudioConverter(from: pcmOdd, to: odd) } == .unsupportedDataFormat)
        // Compressed to compressed, and formats without a codec.
        #expect(Self.code { _ = try AudioConverter(from: Self.aac, to: .compressed(.flac, sampleRate: 44100, channels: 2)) } == .unsupportedDataFormat)
        #expect(Self.code { _ = try AudioConverter(from: .compressed(.vorbis, sampleRate: 44100, channels: 2), to: Self.pcm) } == .unsupportedDataFormat)
        #expect(Self.code { _ = try AudioConverter(from: Self.pcm, to: .compressed(.mpeg4AAC_HE, sampleRate: 44100, channels: 2)) } == .unsupportedDataFormat)
        // 20-bit ALAC source data.
        var alac20 = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)
        alac20.formatFlags = AudioFormatFlags(rawValue: 2)
        #expect(Self.code { _ = try AudioConverter(from: Self.pcm, to: alac20) } == .unsupportedDataFormat)
    }

    @Test func cookiesAreCheckedWhenDecodingStarts() throws {
        let alac = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)
        let packet = AudioConverterPackets(data: [0, 1, 2, 3], descriptions: [AudioStreamPacketDescription(startOffset: 0, dataByteSize: 4)])
        let missing = try AudioConverter(from: alac, to: Self.pcm)
        #expect(Self.code { _ = try missing.convert(packets: packet) } == .invalidFileData)
        let bad = try AudioConverter(from: alac, to: Self.pcm)
        bad.decompressionMagicCookie = [1, 2, 3, 4, 5]
        #expect(Self.code { _ = try bad.convert(packets: packet) } == .invalidFileData)
        #expect(Self.message { _ = try bad.convert(packets: packet) }.contains("Apple Lossless magic cookie"))
        let aac = try AudioConverter(from: Self.aac, to: Self.pcm)
        aac.decompressionMagicCookie = [0x03, 0x80]  // an ES_Descriptor cut short
        #expect(Self.code { _ = try aac.convert(packets: packet) } == .invalidFileData)
    }

    @Test func aCorruptPacketIsNamed() throws {
        let stream = try Self.aacStream()
        let converter = try AudioConverter(from: Self.aac, to: Self.pcm)
        converter.decompressionMagicCookie = stream.cookie
        var packets = AudioConverterPackets()
        packets.append(Array(stream.packets.packet(0)))
        packets.append([UInt8](repeating: 0xFF, count: 300))
        #expect(Self.code { _ = try converter.convert(packets: packets) } == .invalidFileData)
        #expect(Self.message { _ = try converter.convert(packets: packets) }.contains("packet"))
        let flac = StreamFormat.compressed(.flac, sampleRate: 44100, channels: 2)
        let lossless = try CodecRoundTripTests.encode(CodecRoundTripTests.signal(frames: 5000, rate: 44100, bits: 16), to: flac)
        let decoder = try AudioConverter(from: flac, to: Self.pcm)
        decoder.decompressionMagicCookie = lossless.cookie
        var garbage = AudioConverterPackets()
        garbage.append([UInt8](repeating: 0x55, count: 200))
        let message = Self.message { _ = try decoder.convert(packets: garbage) }
        #expect(Self.code { _ = try decoder.convert(packets: garbage) } == .invalidFileData)
        #expect(message.contains("packet"), "\(message)")
    }

    @Test func codecPropertiesAndTheirErrors() throws {
        let encoder = try AudioConverter(from: Self.pcm, to: Self.aac)
        #expect(!encoder.applicableBitRates.isEmpty)
        try encoder.setBitRate(96000)
        #expect(encoder.bitRate == 96000)
        #expect(Self.code { try encoder.setBitRate(1) } == .parameterError)
        #expect(Self.code { try encoder.setQuality(64) } == .converterPropertyNotSupported)
        #expect(Self.code { try encoder.setComplexity(5) } == .converterPropertyNotSupported)
        _ = try encoder.convertToPackets([UInt8](repeating: 0, count: 8 * 2048))
        #expect(Self.code { try encoder.setBitRate(128_000) } == .illegalOperation)
        encoder.reset()
        try encoder.setBitRate(128_000)

        let alac = try AudioConverter(from: Self.pcm, to: .compressed(.appleLossless, sampleRate: 44100, channels: 2))
        #expect(alac.bitRate == nil && alac.applicableBitRates.isEmpty)
        #expect(Self.code { try alac.setBitRate(128_000) } == .converterPropertyNotSupported)

        let mp3 = try AudioConverter(from: Self.pcm, to: .compressed(.mpegLayer3, sampleRate: 44100, channels: 2))
        try mp3.setQuality(127)
        #expect(mp3.quality == 127)
        #expect(Self.code { try mp3.setQuality(128) } == .parameterError)
        #expect(Self.code { try mp3.setBitRate(100_000) } == .parameterError)  // not a layer III bit rate

        let opus = try AudioConverter(from: .linearPCM(sampleRate: 48000, channels: 1, sample: .float32), to: .compressed(.opus, sampleRate: 48000, channels: 1))
        try opus.setComplexity(10)
        #expect(Self.code { try opus.setComplexity(11) } == .parameterError)
        #expect(try opus.compressionMagicCookie != nil)

        let decoder = try AudioConverter(from: Self.aac, to: Self.pcm)
        #expect(Self.code { _ = try decoder.compressionMagicCookie } == .converterPropertyNotSupported)
        #expect(Self.code { try decoder.setBitRate(128_000) } == .converterPropertyNotSupported)
    }

    /// Encoder delay as each codec reports it (libavcodec's initial_padding), before any input.
    @Test func encoderDelayIsReported() throws {
        let expected: [(AudioFormatID, Double, Int)] = [(.mpeg4AAC, 44100, 1024), (.mpegLayer3, 44100, 1105), (.opus, 48000, 312), (.appleLossless, 44100, 0), (.flac, 44100, 0)]
        for (formatID, rate, priming) in expected {
            let converter = try AudioConverter(from: .linearPCM(sampleRate: rate, channels: 2, sample: .float32), to: .compressed(formatID, sampleRate: rate, channels: 2))
            #expect(converter.primeInfo.leadingFrames == priming, "\(formatID)")
        }
    }
}
