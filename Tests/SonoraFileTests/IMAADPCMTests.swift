import CSndfile
import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Whether sox is installed (make test installs it).
let soxPath = ["/usr/bin/sox", "/usr/local/bin/sox"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// Runs a tool (sox, …) and fails with its stderr if it does.
func run(_ tool: String, _ arguments: [String]) throws {
    let outcome = try CLIRunner(executable: tool).run(arguments)
    guard outcome.status == 0 else { throw AudioError(.unspecified, "\(tool) \(arguments) failed: \(outcome.stderr.prefix(500))") }
}

@Suite("IMA ADPCM")
struct IMAADPCMTests {
    /// sox encodes a known signal as WAV IMA ADPCM; Sonora's decoder must produce
    /// exactly the samples libsndfile decodes from the same file, and stay close to
    /// the original.
    @Test(.enabled(if: soxPath != nil, "sox is not installed"))
    func decodesWhatSoxEncodedBitForBitLikeLibsndfile() throws {
        let folder = try TemporaryFolder(prefix: "sonora-ima")
        let directory = folder.url
        let source = directory.appendingPathComponent("source.wav").path
        let encoded = directory.appendingPathComponent("ima.wav").path
        try run(soxPath!, ["-n", "-r", "44100", "-c", "2", "-b", "16", "-e", "signed", source, "synth", "1", "sine", "440", "sine", "1000", "gain", "-6"])
        try run(soxPath!, [source, "-e", "ima-adpcm", encoded])

        // Parse the WAV far enough to find fmt and data (the file layer proper is issue 6's).
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: encoded)))
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        var offset = 12
        var blockAlign = 0
        var channels = 0
        var data = 0..<0
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            if id == "fmt " {
                #expect(u16(offset + 8) == 0x11)
                channels = u16(offset + 10)
                blockAlign = u16(offset + 20)
            } else if id == "data" {
                data = (offset + 8)..<min(bytes.count, offset + 8 + size)
            }
            offset += 8 + size + (size & 1)
        }
        #expect(channels == 2 && blockAlign == 512)
        var ours: [[Int16]] = [[], []]
        var start = data.lowerBound
        while start + blockAlign <= data.upperBound {
            let block = try bytes[start..<start + blockAlign].withUnsafeBytes { raw in
                try WAVIMAADPCM.decode(block: raw, channels: channels)
            }
            #expect(block[0].count == WAVIMAADPCM.framesPerBlock(blockAlign: blockAlign, channels: channels))
            for channel in 0..<channels { ours[channel] += block[channel] }
            start += blockAlign
        }

        // libsndfile's decode of the same file.
        var info = SF_INFO()
        let file = try? SndfileOpening.open(encoded, mode: Int32(SFM_READ), info: &info).get()
        #expect(file != nil)
        var theirs = [Int16](repeating: 0, count: Int(info.frames) * Int(info.channels))
        let read = theirs.withUnsafeMutableBufferPointer { sf_readf_short(file, $0.baseAddress, info.frames) }
        sf_close(file)
        let frames = min(Int(read), ours[0].count)
        #expect(frames > 40000)
        var mismatches = 0
        for frame in 0..<frames {
            for channel in 0..<channels where ours[channel][frame] != theirs[frame * channels + channel] { mismatches += 1 }
        }
        #expect(mismatches == 0, "\(mismatches) samples differ from libsndfile's decode")

        // And close to what went in.
        var originalInfo = SF_INFO()
        let original = try? SndfileOpening.open(source, mode: Int32(SFM_READ), info: &originalInfo).get()
        var pcm = [Int16](repeating: 0, count: Int(originalInfo.frames) * 2)
        _ = pcm.withUnsafeMutableBufferPointer { sf_readf_short(original, $0.baseAddress, originalInfo.frames) }
        sf_close(original)
        let compared = min(frames, Int(originalInfo.frames))
        let left = (0..<compared).map { Float(pcm[$0 * 2]) }
        let decodedLeft = (0..<compared).map { Float(ours[0][$0]) }
        #expect(SignalMeasurement.snr(reference: left, test: decodedLeft) > 20)
    }

    @Test func appleIMA4RoundTripsAndKeepsItsPacketLayout() throws {
        let channels = 2
        let packets = 200
        let source = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
        let decoded = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
        var states = Array(repeating: IMAADPCMChannel(), count: channels)
        var decoderInput: [Float] = []
        var decoderOutput: [Float] = []
        var packet = [UInt8](repeating: 0, count: 34 * channels)
        for index in 0..<packets {
            for frame in 0..<64 {
                let t = Double(index * 64 + frame) / 44100
                source.list[0][frame] = Float(0.5 * sin(2 * .pi * 440 * t))
                source.list[1][frame] = Float(0.3 * sin(2 * .pi * 1250 * t))
            }
            try packet.withUnsafeMutableBytes { try AppleIMA4.encode(source.list, states: &states, into: $0) }
            // The header's low 7 bits are the step index, the top 9 the predictor.
            #expect(Int(packet[1] & 0x7F) <= 88)
            try packet.withUnsafeBytes { try AppleIMA4.decode(packet: $0, channels: channels, into: decoded.list) }
            if index > 0 {
                decoderInput += Array(source.list[0])
                decoderOutput += Array(decoded.list[0])
            }
        }
        #expect(SignalMeasurement.snr(reference: decoderInput, test: decoderOutput) > 20)
        // The encoder's state after the last packet is what the decoder reconstructed.
        #expect(AppleIMA4.pcm16(decoded.list[0][63]) == Int16(states[0].predictor))
        let wrong = [UInt8](repeating: 0, count: 33)
        let error = #expect(throws: AudioError.self) {
            try wrong.withUnsafeBytes { try AppleIMA4.decode(packet: $0, channels: 1, into: decoded.list) }
        }
        #expect(error?.code == .invalidPacketOffset)
    }

    @Test func malformedWAVBlocksAreErrors() {
        let short = [UInt8](repeating: 0, count: 6)
        #expect(throws: AudioError.self) { try short.withUnsafeBytes { try WAVIMAADPCM.decode(block: $0, channels: 2) } }
        var badIndex = [UInt8](repeating: 0, count: 12)
        badIndex[2] = 200
        let error = #expect(throws: AudioError.self) { try badIndex.withUnsafeBytes { try WAVIMAADPCM.decode(block: $0, channels: 1) } }
        #expect(error?.message.contains("step index 200") == true)
    }
}
