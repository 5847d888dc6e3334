import Foundation
import SonoraCore
@testable import SonoraFile
import SonoraTestSupport
import Testing

/// CodecDecoder and CodecEncoder as the file layer calls them (without the converter).
@Suite("CodecDecoder and CodecEncoder")
struct CodecDirectTests {
    @Test func encoderAndDecoderMeetInPackets() throws {
        let format = StreamFormat.compressed(.mpeg4AAC, sampleRate: 48000, channels: 2)
        let encoder = try CodecEncoder(format: format, bitRate: 128_000, quality: nil, complexity: nil)
        #expect(encoder.framesPerPacket == 1024 && encoder.primingFrames == 1024)
        let input = CodecRoundTripTests.signal(frames: 5000, rate: 48000)
        var packets = try input.withUnsafeBufferPointer { try encoder.encode($0, frameCount: 5000) }
        #expect(packets.count == 3)  // 1024 priming + 5000 frames: 3 whole packets so far
        packets += try encoder.finish()
        #expect(packets.allSatisfy { $0.frames == 1024 && !$0.bytes.isEmpty })
        #expect(packets.count * 1024 == 1024 + 5000 + encoder.remainderFrames)

        let decoder = try CodecDecoder(format: format, magicCookie: encoder.magicCookie)
        #expect(decoder.outputFormat == .linearPCM(sampleRate: 48000, channels: 2, sample: .float32))
        var output: [Float] = []
        for packet in packets {
            let frames = try packet.bytes.withUnsafeBytes { try decoder.decode($0, into: &output) }
            #expect(frames == 1024)
        }
        #expect(output.count == packets.count * 1024 * 2)
        decoder.reset()
        var again: [Float] = []
        _ = try packets[0].bytes.withUnsafeBytes { try decoder.decode($0, into: &again) }
        #expect(again.count == 2048)
    }

    @Test func heAACReportsTheRateItDecodesAt() throws {
        let decoder = try CodecDecoder(format: .compressed(.mpeg4AAC_HE, sampleRate: 22050, channels: 2), magicCookie: HEAACDecodingTests.explicitSBRConfig)
        #expect(decoder.outputFormat.sampleRate == 44100)
    }

    @Test func errorsNameWhatAndTheCodec() throws {
        #expect(throws: AudioError.self) { try CodecDecoder(format: .compressed(.vorbis, sampleRate: 44100, channels: 2), magicCookie: nil) }
        #expect(throws: AudioError.self) { try CodecDecoder(format: .compressed(.flac, sampleRate: 44100, channels: 2), magicCookie: nil) }
        do {
            _ = try CodecEncoder(format: .compressed(.opus, sampleRate: 32000, channels: 2), bitRate: nil, quality: nil, complexity: nil)
            Issue.record("Opus at 32 kHz was accepted")
        } catch {
            #expect(error.code == .unsupportedDataFormat)
            #expect(error.message.contains("libopus") && error.message.contains("48000"))
        }
        let decoder = try CodecDecoder(format: .compressed(.mpegLayer3, sampleRate: 44100, channels: 2), magicCookie: nil)
        var output: [Float] = []
        do {
            _ = try [UInt8]().withUnsafeBytes { try decoder.decode($0, into: &output) }
            Issue.record("an empty packet decoded")
        } catch let error as AudioError {
            #expect(error.code == .invalidFileData && error.message.contains("packet 0"))
        }
    }
}
