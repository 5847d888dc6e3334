import CSndfile
import SonoraCore

/// A named position in a file (WAV `cue `, AIFF `MARK`), as Core Audio's AudioFileMarker.
public struct AudioFileMarker: Equatable, Sendable {
    public var id: Int
    public var frame: Int
    public var name: String

    public init(id: Int, frame: Int, name: String = "") {
        self.id = id
        self.frame = frame
        self.name = name
    }
}

/// A loop region (WAV `smpl`, AIFF `INST`), as in Core Audio's instrument data.
public struct AudioFileLoop: Equatable, Sendable {
    public enum Mode: Int32, Sendable { case none = 800, forward, backward, alternating }
    public var mode: Mode
    public var start: Int
    public var end: Int
    /// Times to play; 0 means forever.
    public var count: Int

    public init(mode: Mode = .forward, start: Int, end: Int, count: Int = 0) {
        self.mode = mode
        self.start = start
        self.end = end
        self.count = count
    }
}

extension AudioFile {
    /// The file's markers, where the container keeps them.
    public var markers: [AudioFileMarker] {
        if keepsOwnMarkers { return containerMarkers }
        guard let handle = sndfileHandle else { return [] }
        var cues = SF_CUES()
        guard sf_command(handle, Int32(SFC_GET_CUE), &cues, Int32(MemoryLayout<SF_CUES>.size)) == Int32(SF_TRUE) else { return [] }
        let count = min(Int(cues.cue_count), 100)
        return withUnsafeBytes(of: &cues.cue_points) { raw in
            let points = raw.bindMemory(to: SF_CUE_POINT.self)
            return (0..<count).map { index in
                var point = points[index]
                let name = withUnsafeBytes(of: &point.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                return AudioFileMarker(id: Int(point.indx), frame: Int(point.sample_offset), name: name)
            }
        }
    }

    /// Sets the markers of a file being created. WAV (a `cue ` chunk through
    /// libsndfile: positions, not names; at most 100) before any audio is written;
    /// AIFF/AIFC (`MARK`) and CAF (`mark` + `strg` names) any time before `close()`,
    /// which appends the chunks. Other types refuse rather than drop them.
    public func setMarkers(_ markers: [AudioFileMarker]) throws(AudioError) {
        if keepsOwnMarkers { return try setContainerMarkers(markers, loops: containerLoops) }
        guard let handle = sndfileHandle else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        guard fileType == .wave || fileType == .rf64 else {
            throw AudioError(.unsupportedProperty, "\(path): Sonora writes markers into WAV, AIFF and CAF files, not \(fileType)")
        }
        guard markers.count <= 100, markers.allSatisfy({ $0.frame >= 0 && $0.frame <= Int(UInt32.max) }) else {
            throw AudioError(.unsupportedProperty, "\(path): at most 100 markers, at frames 0…\(UInt32.max)")
        }
        var cues = SF_CUES()
        cues.cue_count = UInt32(markers.count)
        withUnsafeMutableBytes(of: &cues.cue_points) { raw in
            let points = raw.bindMemory(to: SF_CUE_POINT.self)
            for (index, marker) in markers.enumerated() {
                var point = SF_CUE_POINT()
                point.indx = Int32(marker.id)
                point.position = UInt32(marker.frame)
                point.fcc_chunk = 0x6174_6164  // 'data', little-endian as libsndfile expects
                point.sample_offset = UInt32(marker.frame)
                withUnsafeMutableBytes(of: &point.name) { name in
                    let bytes = Array(marker.name.utf8.prefix(255))
                    name.copyBytes(from: bytes)
                }
                points[index] = point
            }
        }
        guard sf_command(handle, Int32(SFC_SET_CUE), &cues, Int32(MemoryLayout<SF_CUES>.size)) == Int32(SF_TRUE) else {
            throw AudioError(.unsupportedProperty, "\(path): a \(fileType) file cannot hold markers here (set them before writing audio)")
        }
    }

    /// Where `SF_INSTRUMENT.loops` starts: right after `loop_count`.
    static var loopsOffset: Int { MemoryLayout<SF_INSTRUMENT>.offset(of: \SF_INSTRUMENT.loop_count)! + 4 }

    /// The file's loops, where the container keeps them.
    public var loops: [AudioFileLoop] {
        if keepsOwnMarkers { return containerLoops }
        guard let handle = sndfileHandle else { return [] }
        var instrument = SF_INSTRUMENT()
        guard sf_command(handle, Int32(SFC_GET_INSTRUMENT), &instrument, Int32(MemoryLayout<SF_INSTRUMENT>.size)) == Int32(SF_TRUE) else {
            return []
        }
        let count = min(Int(instrument.loop_count), 16)
        // The loops array is an anonymous struct Swift does not import: read it from its offset.
        return withUnsafeBytes(of: &instrument) { raw in
            let stride = 16
            return (0..<count).map { index in
                let base = Self.loopsOffset + index * stride
                return AudioFileLoop(
                    mode: AudioFileLoop.Mode(rawValue: raw.load(fromByteOffset: base, as: Int32.self)) ?? .none,
                    start: Int(raw.load(fromByteOffset: base + 4, as: UInt32.self)),
                    end: Int(raw.load(fromByteOffset: base + 8, as: UInt32.self)),
                    count: Int(raw.load(fromByteOffset: base + 12, as: UInt32.self)))
            }
        }
    }

    /// Sets the loops of a file being created, as for markers: WAV `smpl` (at most
    /// 16), AIFF `INST` (a sustain and a release loop, forward or alternating, no
    /// count), CAF `regn` (looping regions, no count).
    public func setLoops(_ loops: [AudioFileLoop]) throws(AudioError) {
        if keepsOwnMarkers { return try setContainerMarkers(containerMarkers, loops: loops) }
        guard let handle = sndfileHandle else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        guard fileType == .wave || fileType == .rf64 else {
            throw AudioError(.unsupportedProperty, "\(path): Sonora writes loops into WAV, AIFF and CAF files, not \(fileType)")
        }
        guard loops.count <= 16, loops.allSatisfy({ 0 <= $0.start && $0.start <= $0.end && $0.end <= Int(UInt32.max) }) else {
            throw AudioError(.unsupportedProperty, "\(path): at most 16 loops, each with 0 ≤ start ≤ end")
        }
        var instrument = SF_INSTRUMENT()
        instrument.basenote = 60
        instrument.velocity_hi = 127
        instrument.key_hi = 127
        instrument.loop_count = Int32(loops.count)
        withUnsafeMutableBytes(of: &instrument) { raw in
            for (index, loop) in loops.enumerated() {
                let base = Self.loopsOffset + index * 16
                raw.storeBytes(of: loop.mode.rawValue, toByteOffset: base, as: Int32.self)
                raw.storeBytes(of: UInt32(loop.start), toByteOffset: base + 4, as: UInt32.self)
                raw.storeBytes(of: UInt32(loop.end), toByteOffset: base + 8, as: UInt32.self)
                raw.storeBytes(of: UInt32(loop.count), toByteOffset: base + 12, as: UInt32.self)
            }
        }
        guard sf_command(handle, Int32(SFC_SET_INSTRUMENT), &instrument, Int32(MemoryLayout<SF_INSTRUMENT>.size)) == Int32(SF_TRUE) else {
            throw AudioError(.unsupportedProperty, "\(path): a \(fileType) file cannot hold loops here (set them before writing audio)")
        }
    }
}
