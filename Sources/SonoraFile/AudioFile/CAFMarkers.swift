import SonoraCore

/// CAF `mark` (markers; names in `strg` under the marker's id) and `regn` (regions;
/// a looping region is a loop between its 'rbeg' and 'rend' markers), read and
/// written by Sonora: libsndfile keeps neither.
enum CAFMarkers {
    private static let markerBytes = 28
    private static let regionStart: UInt32 = 0x7262_6567  // 'rbeg'
    private static let regionEnd: UInt32 = 0x7265_6E64  // 'rend'
    /// Region flags: loop enable, play forward, play backward.
    private static let loopEnable: UInt32 = 1, playForward: UInt32 = 2, playBackward: UInt32 = 4

    private struct Marker {
        var type: UInt32
        var frame: Int
        var id: UInt32
    }

    static func read(_ directory: ChunkDirectory) throws(AudioError) -> (markers: [AudioFileMarker], loops: [AudioFileLoop]) {
        var names: [UInt32: String] = [:]
        for entry in directory.entries where entry.id == "strg" {
            let chunk = try directory.body(of: entry)
            let count = Int(try chunk.u32(0))
            try chunk.require(4..<4 + 12 * count)
            let stringsStart = 4 + 12 * count
            for index in 0..<count {
                let id = try chunk.u32(4 + 12 * index)
                let offset = try chunk.u64(8 + 12 * index)
                guard offset < UInt64(chunk.bytes.count - stringsStart) else {
                    throw AudioError(.invalidChunk, "\(chunk.context): string \(id) starts past the chunk's end")
                }
                let start = stringsStart + Int(offset)
                guard let end = chunk.bytes[start...].firstIndex(of: 0) else {
                    throw AudioError(.invalidChunk, "\(chunk.context): string \(id) has no terminating zero")
                }
                names[id] = String(decoding: chunk.bytes[start..<end], as: UTF8.self)
            }
        }
        var markers: [AudioFileMarker] = []
        if let entry = directory.first("mark") {
            let chunk = try directory.body(of: entry)
            let count = Int(try chunk.u32(4))
            try chunk.require(8..<8 + markerBytes * count)
            for index in 0..<count {
                let marker = try readMarker(chunk, at: 8 + markerBytes * index)
                markers.append(AudioFileMarker(id: Int(marker.id), frame: marker.frame, name: names[marker.id] ?? ""))
            }
        }
        var loops: [AudioFileLoop] = []
        if let entry = directory.first("regn") {
            let chunk = try directory.body(of: entry)
            let count = Int(try chunk.u32(4))
            var offset = 8
            for _ in 0..<count {
                let id = try chunk.u32(offset)
                let flags = try chunk.u32(offset + 4)
                let markerCount = Int(try chunk.u32(offset + 8))
                try chunk.require(offset + 12..<offset + 12 + markerBytes * markerCount)
                var start: Int?, end: Int?
                for index in 0..<markerCount {
                    let marker = try readMarker(chunk, at: offset + 12 + markerBytes * index)
                    if marker.type == regionStart { start = marker.frame }
                    if marker.type == regionEnd { end = marker.frame }
                }
                offset += 12 + markerBytes * markerCount
                guard flags & loopEnable != 0 else { continue }
                guard let start, let end, start <= end else {
                    throw AudioError(.invalidChunk, "\(chunk.context): looping region \(id) lacks an ordered start and end marker")
                }
                let mode: AudioFileLoop.Mode = switch (flags & playForward != 0, flags & playBackward != 0) {
                case (true, true): .alternating
                case (false, true): .backward
                default: .forward
                }
                loops.append(AudioFileLoop(mode: mode, start: start, end: end))
            }
        }
        return (markers, loops)
    }

    private static func readMarker(_ chunk: ChunkReader, at offset: Int) throws(AudioError) -> Marker {
        let position = Double(bitPattern: try chunk.u64(offset + 4))
        guard position.isFinite, position >= 0, position <= 0x1p53 else {
            throw AudioError(.invalidChunk, "\(chunk.context): a marker at frame \(position)")
        }
        return Marker(type: try chunk.u32(offset), frame: Int(position), id: try chunk.u32(offset + 12))
    }

    /// Why `markers` and `loops` cannot be written into CAF, or nil if they can.
    static func problem(markers: [AudioFileMarker], loops: [AudioFileLoop]) -> String? {
        if let bad = markers.first(where: { !(0...Int(UInt32.max)).contains($0.id) }) { return "CAF marker ids are 0…\(UInt32.max), not \(bad.id)" }
        if Set(markers.map(\.id)).count != markers.count { return "CAF marker ids must differ (names are stored under them)" }
        if markers.contains(where: { !(0...(1 << 53)).contains($0.frame) }) { return "CAF markers lie at frames 0…2^53" }
        for loop in loops {
            guard loop.mode != .none else { return "a CAF loop region must loop (mode none given)" }
            guard loop.count == 0 else { return "CAF regions have no play count (\(loop.count) given)" }
            guard 0 <= loop.start, loop.start <= loop.end, loop.end <= 1 << 53 else { return "a CAF loop needs 0 ≤ start ≤ end" }
        }
        return nil
    }

    /// The `mark`, `regn` and `strg` chunks (whole, with headers) for validated markers and loops.
    static func chunks(markers: [AudioFileMarker], loops: [AudioFileLoop]) -> [UInt8] {
        var result: [UInt8] = []
        if !markers.isEmpty {
            var mark = ChunkWriter()
            mark.u32(0)  // no SMPTE time
            mark.u32(UInt32(markers.count))
            for marker in markers { writeMarker(&mark, type: 0, frame: marker.frame, id: UInt32(marker.id)) }
            result += ChunkWriter.chunk("mark", mark.bytes, caf: true)
        }
        if !loops.isEmpty {
            var regn = ChunkWriter()
            regn.u32(0)
            regn.u32(UInt32(loops.count))
            for (index, loop) in loops.enumerated() {
                regn.u32(UInt32(index + 1))
                let direction: UInt32 = switch loop.mode {
                case .backward: playBackward
                case .alternating: playForward | playBackward
                default: playForward
                }
                regn.u32(loopEnable | direction)
                regn.u32(2)
                writeMarker(&regn, type: regionStart, frame: loop.start, id: 0)
                writeMarker(&regn, type: regionEnd, frame: loop.end, id: 0)
            }
            result += ChunkWriter.chunk("regn", regn.bytes, caf: true)
        }
        let named = markers.filter { !$0.name.isEmpty }
        if !named.isEmpty {
            var table = ChunkWriter(), strings: [UInt8] = []
            table.u32(UInt32(named.count))
            for marker in named {
                table.u32(UInt32(marker.id))
                table.u64(UInt64(strings.count))
                strings += Array(marker.name.utf8.filter { $0 != 0 }) + [0]
            }
            result += ChunkWriter.chunk("strg", table.bytes + strings, caf: true)
        }
        return result
    }

    private static func writeMarker(_ writer: inout ChunkWriter, type: UInt32, frame: Int, id: UInt32) {
        writer.u32(type)
        writer.u64(Double(frame).bitPattern)
        writer.u32(id)
        writer.bytes += [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]  // no SMPTE time
        writer.u32(0)  // all channels
    }
}
