import Foundation
import Glibc
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// No per-packet leak in the libavcodec wrappers (AVPacket, AVFrame, buffers): 10,000 packets
/// through a decoder and an encoder, in five rounds, must not grow the heap in every round by
/// what a leak of even one small allocation per packet would (≥ 200 bytes per packet). Judged on
/// the resident size (RSS), not on time; other suites running alongside may move it either way
/// in one round, but not up in all four.
@Suite("Codec leaks", .serialized)
struct CodecLeakTests {
    static let rounds = 5
    static let packetsPerRound = 2000

    /// Resident set size in bytes (/proc/self/statm's second field, in pages).
    static func heapInUse() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }

    /// True when the heap grew by at least `bytesPerPacket` × packets in every round after the first.
    static func growsEveryRound(_ samples: [Int], bytesPerPacket: Int) -> Bool {
        zip(samples, samples.dropFirst()).allSatisfy { $1 - $0 >= bytesPerPacket * packetsPerRound }
    }

    @Test func decodingTenThousandPacketsDoesNotLeak() throws {
        let aac = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
        let encoded = try CodecRoundTripTests.encode(CodecRoundTripTests.signal(frames: 44100, rate: 44100), to: aac)
        let converter = try AudioConverter(from: aac, to: .linearPCM(sampleRate: 44100, channels: 2, sample: .float32))
        converter.decompressionMagicCookie = encoded.cookie
        var samples: [Int] = []
        var index = 0
        for _ in 0..<Self.rounds {
            for _ in 0..<Self.packetsPerRound {
                var one = AudioConverterPackets()
                one.append(Array(encoded.packets.packet(index % encoded.packets.count)))
                index += 1
                _ = try converter.convert(packets: one)
            }
            samples.append(Self.heapInUse())
        }
        #expect(index == 10_000)
        #expect(!Self.growsEveryRound(samples, bytesPerPacket: 200), "heap in use after each round: \(samples)")
    }

    @Test func encodingTenThousandPacketsDoesNotLeak() throws {
        let aac = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 1)
        let converter = try AudioConverter(from: .linearPCM(sampleRate: 44100, channels: 1, sample: .float32), to: aac)
        let block = TestSignal.whiteNoise(count: 1024, seed: 3, amplitude: 0.2).withUnsafeBytes { Array($0) }
        var samples: [Int] = []
        var packets = 0
        for _ in 0..<Self.rounds {
            for _ in 0..<Self.packetsPerRound { packets += try converter.convertToPackets(block).count }
            samples.append(Self.heapInUse())
        }
        packets += try converter.flushPackets().count
        #expect(packets >= 10_000)
        #expect(!Self.growsEveryRound(samples, bytesPerPacket: 200), "heap in use after each round: \(samples)")
    }
}
