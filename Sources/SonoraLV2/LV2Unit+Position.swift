import CLilv
import SonoraCore
import SonoraUnits

/// The URIDs a time:Position object needs, mapped once on the control side.
struct LV2PositionURIDs: BitwiseCopyable {
    /// Positions one slice can carry: its first one and the transport's changes in a cycle.
    static let sliceCapacity = 32

    var object, position, long, float, double, int: UInt32
    var frame, speed, beatsPerMinute, bar, barBeat, beat, beatsPerBar, beatUnit: UInt32

    init(_ urids: URIDMap) {
        object = urids.map(LV2URI.atomObject)
        position = urids.map(LV2URI.timePosition)
        long = urids.map(LV2URI.atomLong)
        float = urids.map(LV2URI.atomFloat)
        double = urids.map(LV2URI.atomDouble)
        int = urids.map(LV2URI.atomInt)
        frame = urids.map(LV2URI.timeFrame)
        speed = urids.map(LV2URI.timeSpeed)
        beatsPerMinute = urids.map(LV2URI.timeBeatsPerMinute)
        bar = urids.map(LV2URI.timeBar)
        barBeat = urids.map(LV2URI.timeBarBeat)
        beat = urids.map(LV2URI.timeBeat)
        beatsPerBar = urids.map(LV2URI.timeBeatsPerBar)
        beatUnit = urids.map(LV2URI.timeBeatUnit)
    }
}

/// The graph's transport as time:Position events: one at the plugin's first frame, then one at
/// the exact frame of every change (play, stop, locate, tempo, time signature). Written on the
/// realtime side straight into the atom sequence; no allocation.
extension LV2Unit {
    /// The atom input that takes time:Position (the first that declares it supported).
    var transportInputPort: LV2Port? {
        plugin.ports.first { $0.kind == .atom && $0.direction == .input && $0.supports.contains(LV2URI.timePosition) }
    }

    /// Puts this slice's positions (frame offsets into the slice) into `positionEvents`; returns how many.
    func collectPositions(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) -> Int {
        guard let callbacks = hostCallbacks else { return 0 }
        let events = state.pointee.positionEvents
        var count = 0
        let sliceEnd = context.frameOffset + context.frameCount
        var firstAtZero = false
        if !state.pointee.positionSent {
            state.pointee.positionSent = true
            events[0] = TransportPositionChange(frameOffset: 0, position: callbacks.position(atFrame: context.frameOffset))
            count = 1
            firstAtZero = true
        }
        for index in 0..<callbacks.changeCount where count < LV2PositionURIDs.sliceCapacity {
            let change = callbacks.change(index)
            guard change.frameOffset >= context.frameOffset && change.frameOffset < sliceEnd else { continue }
            let time = change.frameOffset - context.frameOffset
            if firstAtZero && time == 0 { continue }  // the first position already is this one
            events[count] = TransportPositionChange(frameOffset: time, position: change.position)
            count += 1
        }
        return count
    }

    func appendPositions(
        _ state: UnsafeMutablePointer<LV2RunState>, _ count: Int, _ index: inout Int, through time: Int,
        to sequence: UnsafeMutablePointer<LV2_Atom_Sequence>, capacity: Int
    ) {
        while index < count && state.pointee.positionEvents[index].frameOffset <= time {
            let event = state.pointee.positionEvents[index]
            appendPosition(event.position, time: event.frameOffset, to: sequence, capacity: capacity, urids: state.pointee.positionURIDs)
            index += 1
        }
    }

    /// One time:Position object event (8 properties, 216 bytes) at `time`; skipped if the buffer is full.
    func appendPosition(
        _ position: TransportPosition, time: Int, to sequence: UnsafeMutablePointer<LV2_Atom_Sequence>, capacity: Int,
        urids: LV2PositionURIDs
    ) {
        let properties = 8
        let bodySize = 8 + properties * 24  // object id + otype, then key/context + 8-byte atom header + 8-byte value each
        let eventSize = 8 + 8 + bodySize
        let used = MemoryLayout<LV2_Atom>.size + Int(sequence.pointee.atom.size)
        guard used + eventSize <= capacity else { return }
        let raw = UnsafeMutableRawPointer(sequence) + used
        raw.storeBytes(of: Int64(time), as: Int64.self)
        raw.storeBytes(of: UInt32(bodySize), toByteOffset: 8, as: UInt32.self)
        raw.storeBytes(of: urids.object, toByteOffset: 12, as: UInt32.self)
        raw.storeBytes(of: UInt32(0), toByteOffset: 16, as: UInt32.self)  // blank id
        raw.storeBytes(of: urids.position, toByteOffset: 20, as: UInt32.self)
        let speed = Float(position.isPlaying ? 1 : 0)
        Self.storeProperty(raw, 24, urids.frame, urids.long, 8, UInt64(bitPattern: position.frame))
        Self.storeProperty(raw, 48, urids.speed, urids.float, 4, UInt64(speed.bitPattern))
        Self.storeProperty(raw, 72, urids.beatsPerMinute, urids.float, 4, UInt64(Float(position.tempo).bitPattern))
        Self.storeProperty(raw, 96, urids.bar, urids.long, 8, UInt64(bitPattern: position.bar))
        Self.storeProperty(raw, 120, urids.barBeat, urids.float, 4, UInt64(Float(position.barBeat).bitPattern))
        Self.storeProperty(raw, 144, urids.beat, urids.double, 8, position.beat.bitPattern)
        Self.storeProperty(
            raw, 168, urids.beatsPerBar, urids.float, 4, UInt64(Float(position.timeSignature.beatsPerBar).bitPattern))
        Self.storeProperty(raw, 192, urids.beatUnit, urids.int, 4, UInt64(UInt32(bitPattern: position.timeSignature.beatUnit)))
        sequence.pointee.atom.size += UInt32(eventSize)
    }

    /// One object property: key, context 0, then an atom of `size` bytes whose value is the low
    /// `size` bytes of `bits` (little-endian), padded to 8.
    @inline(__always)
    static func storeProperty(_ raw: UnsafeMutableRawPointer, _ offset: Int, _ key: UInt32, _ type: UInt32, _ size: UInt32, _ bits: UInt64) {
        raw.storeBytes(of: key, toByteOffset: offset, as: UInt32.self)
        raw.storeBytes(of: UInt32(0), toByteOffset: offset + 4, as: UInt32.self)
        raw.storeBytes(of: size, toByteOffset: offset + 8, as: UInt32.self)
        raw.storeBytes(of: type, toByteOffset: offset + 12, as: UInt32.self)
        raw.storeBytes(of: bits.littleEndian, toByteOffset: offset + 16, as: UInt64.self)
    }
}
