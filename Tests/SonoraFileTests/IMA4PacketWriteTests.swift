import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// IMA4 packets encoded elsewhere (an input queue's encoder) written with `writePackets`:
/// the file holds those packets unchanged, with the frame count they carry.
@Suite("IMA4 packets written directly")
struct IMA4PacketWriteTests {
    @Test func packetsFromTheConverterGoIntoACafUnchanged() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("packets.caf")
        let format = StreamFormat.appleIMA4(sampleRate: 16000, channels: 1)
        let encoder = try AudioConverter(from: .linearPCM(sampleRate: 16000, channels: 1, sample: .float32), to: format)
        let tone = TestSignal.sine(frequency: 300, sampleRate: 16000, count: 6400, amplitude: 0.5)
        let packets = try encoder.convert(tone.withUnsafeBytes { Array($0) }) + encoder.flush()
        #expect(packets.count == 100 * 34)
        let file = try AudioFile.create(path, type: .caf, format: format)
        try file.writePackets(Array(packets[0..<34 * 40]))
        try file.writePackets(Array(packets[(34 * 40)...]))
        #expect(throws: AudioError.self) { try file.writePackets([1, 2, 3]) }  // not whole packets
        try file.close()
        let reread = try AudioFile.open(path)
        #expect(reread.dataFormat.formatID == .appleIMA4 && reread.frameCount == 6400)
        #expect(try reread.readPackets(from: 0, count: 100).bytes == packets)
    }
}
