import Foundation
import SonoraCore
import SonoraFile
import Testing

/// Core Audio's AudioStreamPacketDescription as a value callers create, the one type the
/// packet APIs of AudioFile and AudioFileStream use.
@Suite("AudioStreamPacketDescription")
struct AudioStreamPacketDescriptionTests {
    @Test func callersCreateCompareAndCodeDescriptions() throws {
        let first = AudioStreamPacketDescription(startOffset: 0, variableFramesInPacket: 1024, dataByteSize: 371)
        let second = AudioStreamPacketDescription(startOffset: 371, dataByteSize: 402)
        #expect(second.variableFramesInPacket == 0)
        #expect(first != second && Set([first, second, first]).count == 2)
        // Core Audio's field widths: a 64-bit offset, 32-bit counts.
        let far = AudioStreamPacketDescription(startOffset: 1 << 40, variableFramesInPacket: .max, dataByteSize: .max)
        #expect(far.startOffset == 1_099_511_627_776)
        #expect(MemoryLayout<AudioStreamPacketDescription>.size == 16)
        let coded = try JSONDecoder().decode([AudioStreamPacketDescription].self, from: JSONEncoder().encode([first, second, far]))
        #expect(coded == [first, second, far])
    }

    @Test func thePacketAPIsTakeTheSameType() {
        let fromStream: AudioFileStream.PacketDescription = AudioStreamPacketDescription(startOffset: 8, dataByteSize: 34)
        let handler: AudioFileStream.PacketsHandler = { _, descriptions in
            let _: [AudioStreamPacketDescription]? = descriptions
        }
        handler(UnsafeRawBufferPointer(start: nil, count: 0), [fromStream])
        #expect(fromStream.dataByteSize == 34)
    }
}
