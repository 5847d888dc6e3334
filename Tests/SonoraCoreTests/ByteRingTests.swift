import SonoraCore
import Testing

@Suite("ByteRing")
struct ByteRingTests {
    @Test(arguments: [false, true])
    func bytesComeOutInOrderAcrossManyWraps(mirrored: Bool) throws {
        let ring = try ByteRing(capacity: 4096, mirrored: mirrored)
        #expect(ring.capacity == 4096 && ring.isMirrored == mirrored)
        var next: UInt8 = 0
        var expected: UInt8 = 0
        var source = [UInt8](repeating: 0, count: 1500)
        var destination = [UInt8](repeating: 0, count: 1000)
        for round in 0..<100 {
            for index in source.indices {
                source[index] = next
                next &+= 1
            }
            let written = source.withUnsafeBytes { ring.write($0) }
            #expect(written == 1500, "round \(round)")
            var drained = 0
            while drained < 1500 {
                let read = destination.withUnsafeMutableBytes { ring.read(into: $0) }
                for byte in destination[..<read] {
                    #expect(byte == expected)
                    expected &+= 1
                }
                drained += read
            }
        }
    }

    @Test func mirroredRegionsAreOneSpanAndAliasTheStart() throws {
        let ring = try ByteRing(capacity: 100, mirrored: true)
        #expect(ring.capacity == 4096)  // at least one page
        let filler = [UInt8](repeating: 9, count: 4000)
        #expect(filler.withUnsafeBytes { ring.write($0) } == 4000)
        var sink = [UInt8](repeating: 0, count: 4000)
        #expect(sink.withUnsafeMutableBytes { ring.read(into: $0) } == 4000)
        let region = ring.writeRegion(maxBytes: 200)
        #expect(region.first.count == 200 && region.second.count == 0)
        for index in 0..<200 { region.first[index] = UInt8(index) }
        try ring.commitWrite(200)
        // Bytes written past the end of the first mapping are the ring's first bytes.
        let read = ring.readRegion()
        #expect(read.count == 200 && read.second.count == 0)
        #expect(Array(read.first) == (0..<200).map(UInt8.init))
    }

    @Test func splitRegionsOnAPlainRing() throws {
        let ring = try ByteRing(capacity: 16)
        #expect(ring.capacity == 16 && !ring.isMirrored)
        try ring.commitWrite(12)
        try ring.commitRead(12)
        let region = ring.writeRegion(maxBytes: 10)
        #expect(region.first.count == 4 && region.second.count == 6)
        #expect(throws: AudioError.self) { try ring.commitWrite(17) }
        #expect(throws: AudioError.self) { try ring.commitRead(1) }
    }

    @Test func emptyWritesAndReads() throws {
        let ring = try ByteRing(capacity: 8)
        #expect(UnsafeRawBufferPointer(start: nil, count: 0).count == 0)
        #expect(ring.write(UnsafeRawBufferPointer(start: nil, count: 0)) == 0)
        var sink = [UInt8](repeating: 0, count: 4)
        #expect(sink.withUnsafeMutableBytes { ring.read(into: $0) } == 0)
        #expect(ring.readableBytes == 0 && ring.writableBytes == 8)
        #expect(throws: AudioError.self) { try ByteRing(capacity: 0) }
    }
}
