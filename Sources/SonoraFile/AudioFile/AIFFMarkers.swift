import SonoraCore

/// AIFF `MARK` (markers) and `INST` (a sustain and a release loop, each between two
/// markers), read and written by Sonora: libsndfile does not keep AIFF markers.
///
/// Loops point at markers; the markers a loop uses are reported as the loop, not
/// again as markers, so what was set is what is read back.
enum AIFFMarkers {
    /// INST play modes.
    private static let noLooping: UInt16 = 0, forward: UInt16 = 1, forwardBackward: UInt16 = 2

    static func read(_ directory: ChunkDirectory) throws(AudioError) -> (markers: [AudioFileMarker], loops: [AudioFileLoop]) {
        var all: [AudioFileMarker] = []
        if let entry = directory.first("MARK") {
            let chunk = try directory.body(of: entry)
            let count = Int(try chunk.u16(0))
            var offset = 2
            for _ in 0..<count {
                let id = Int(Int16(bitPattern: try chunk.u16(offset)))
                let position = Int(try chunk.u32(offset + 2))
                let length = Int(try chunk.u8(offset + 6))
                try chunk.require(offset + 7..<offset + 7 + length)
                let name = String(decoding: chunk.bytes[offset + 7..<offset + 7 + length], as: UTF8.self)
                all.append(AudioFileMarker(id: id, frame: position, name: name))
                // The name is a Pascal string padded to an even length.
                offset += 6 + (1 + length + 1) / 2 * 2
            }
        }
        var loops: [AudioFileLoop] = []
        var loopMarkerIDs: Set<Int> = []
        if let entry = directory.first("INST") {
            let chunk = try directory.body(of: entry)
            try chunk.require(0..<20)
            for (offset, role) in [(8, "sustain"), (14, "release")] {
                let mode = try chunk.u16(offset)
                guard mode != noLooping else { continue }
                guard mode == forward || mode == forwardBackward else {
                    throw AudioError(.invalidChunk, "\(chunk.context): the \(role) loop has play mode \(mode) (0, 1 or 2)")
                }
                let ids = (Int(Int16(bitPattern: try chunk.u16(offset + 2))), Int(Int16(bitPattern: try chunk.u16(offset + 4))))
                guard let start = all.first(where: { $0.id == ids.0 }), let end = all.first(where: { $0.id == ids.1 }) else {
                    throw AudioError(.invalidChunk, "\(chunk.context): the \(role) loop names markers \(ids.0) and \(ids.1), which MARK does not have")
                }
                // AIFF: a loop whose start is not before its end is ignored.
                guard start.frame < end.frame else { continue }
                loops.append(AudioFileLoop(mode: mode == forward ? .forward : .alternating, start: start.frame, end: end.frame))
                loopMarkerIDs.formUnion([ids.0, ids.1])
            }
        }
        return (all.filter { !loopMarkerIDs.contains($0.id) }, loops)
    }

    /// Why `markers` and `loops` cannot be written into AIFF, or nil if they can.
    static func problem(markers: [AudioFileMarker], loops: [AudioFileLoop]) -> String? {
        if let bad = markers.first(where: { !(1...Int(Int16.max)).contains($0.id) }) {
            return "AIFF marker ids are 1…32767, not \(bad.id)"
        }
        if Set(markers.map(\.id)).count != markers.count { return "AIFF marker ids must differ" }
        if markers.contains(where: { !(0...Int(UInt32.max)).contains($0.frame) }) { return "AIFF markers lie at frames 0…\(UInt32.max)" }
        if markers.count + 2 * loops.count > Int(Int16.max) { return "too many AIFF markers" }
        if loops.count > 2 { return "AIFF holds two loops (sustain and release), not \(loops.count)" }
        for loop in loops {
            guard loop.mode == .forward || loop.mode == .alternating else { return "AIFF loops play forward or alternating, not \(loop.mode)" }
            guard loop.count == 0 else { return "AIFF loops have no play count (\(loop.count) given)" }
            guard 0 <= loop.start, loop.start < loop.end, loop.end <= Int(UInt32.max) else {
                return "an AIFF loop needs 0 ≤ start < end ≤ \(UInt32.max)"
            }
        }
        if (markers.map(\.id).max() ?? 0) + 2 * loops.count > Int(Int16.max) { return "no marker ids left for the loops" }
        return nil
    }

    /// The `MARK` and `INST` chunks (whole, with headers) for validated markers and loops.
    static func chunks(markers: [AudioFileMarker], loops: [AudioFileLoop]) -> [UInt8] {
        var all = markers
        var nextID = (markers.map(\.id).max() ?? 0) + 1
        var loopIDs: [(UInt16, UInt16)] = []
        for loop in loops {
            all.append(AudioFileMarker(id: nextID, frame: loop.start, name: "beg loop"))
            all.append(AudioFileMarker(id: nextID + 1, frame: loop.end, name: "end loop"))
            loopIDs.append((UInt16(nextID), UInt16(nextID + 1)))
            nextID += 2
        }
        var mark = ChunkWriter()
        mark.u16(UInt16(all.count))
        for marker in all {
            mark.u16(UInt16(marker.id))
            mark.u32(UInt32(marker.frame))
            let name = Array(marker.name.utf8Prefix(255))
            mark.u8(UInt8(name.count))
            mark.bytes += name
            if name.count % 2 == 0 { mark.u8(0) }  // count byte + text padded to even
        }
        var result = ChunkWriter.chunk("MARK", mark.bytes, caf: false)
        guard !loops.isEmpty else { return result }
        var inst = ChunkWriter()
        // Base note 60, no detune, the whole key and velocity range, no gain.
        inst.bytes += [60, 0, 0, 127, 1, 127]
        inst.u16(0)
        for index in 0..<2 {
            if index < loops.count {
                inst.u16(loops[index].mode == .forward ? forward : forwardBackward)
                inst.u16(loopIDs[index].0)
                inst.u16(loopIDs[index].1)
            } else {
                inst.u16(noLooping); inst.u16(0); inst.u16(0)
            }
        }
        result += ChunkWriter.chunk("INST", inst.bytes, caf: false)
        return result
    }
}

extension String {
    /// The longest prefix of whole characters whose UTF-8 fits in `limit` bytes.
    func utf8Prefix(_ limit: Int) -> String.UTF8View {
        var end = startIndex
        var bytes = 0
        for index in indices {
            let size = self[index...index].utf8.count
            guard bytes + size <= limit else { break }
            bytes += size
            end = self.index(after: index)
        }
        return String(self[startIndex..<end]).utf8
    }
}
