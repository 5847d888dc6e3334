import CLilv

/// Builds and reads the few atoms the host exchanges with plugins (patch:Set, patch:Get),
/// on the control side: the realtime side only copies the finished bytes.
struct LV2AtomForge {
    let urids: URIDMap

    private static func pad(_ bytes: inout [UInt8]) {
        while bytes.count % 8 != 0 { bytes.append(0) }
    }

    private static func append<T>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }

    /// An atom (header + body, padded) for `value`.
    func atom(_ value: LV2PatchValue) -> [UInt8] {
        var body: [UInt8] = []
        switch value {
        case .int(let v): Self.append(v, to: &body)
        case .long(let v): Self.append(v, to: &body)
        case .float(let v): Self.append(v, to: &body)
        case .double(let v): Self.append(v, to: &body)
        case .bool(let v): Self.append(Int32(v ? 1 : 0), to: &body)
        case .string(let text), .path(let text): body = Array(text.utf8) + [0]
        case .urid(let uri): Self.append(urids.map(uri), to: &body)
        }
        var bytes: [UInt8] = []
        Self.append(UInt32(body.count), to: &bytes)
        Self.append(urids.map(value.typeURI), to: &bytes)
        bytes += body
        Self.pad(&bytes)
        return bytes
    }

    /// An atom:Object of type `otype` with `properties` (key URI, value atom bytes).
    func object(_ otype: String, _ properties: [(String, [UInt8])]) -> [UInt8] {
        var body: [UInt8] = []
        Self.append(UInt32(0), to: &body)  // id: blank
        Self.append(urids.map(otype), to: &body)
        for (key, value) in properties {
            Self.append(urids.map(key), to: &body)
            Self.append(UInt32(0), to: &body)  // context
            body += value
        }
        var bytes: [UInt8] = []
        Self.append(UInt32(body.count), to: &bytes)
        Self.append(urids.map(LV2URI.atomObject), to: &bytes)
        return bytes + body
    }

    func patchSet(_ property: String, _ value: LV2PatchValue) -> [UInt8] {
        object(LV2URI.patchSet, [(LV2URI.patchProperty, atom(.urid(property))), (LV2URI.patchValue, atom(value))])
    }

    func patchGet() -> [UInt8] { object(LV2URI.patchGet, []) }

    /// The properties of an object atom at `atom` (header included): (key URID, value atom pointer).
    func properties(ofObjectAt atom: UnsafeRawPointer) -> [(UInt32, UnsafeRawPointer)] {
        let size = Int(atom.loadUnaligned(as: UInt32.self))
        var result: [(UInt32, UnsafeRawPointer)] = []
        var position = 16  // atom header + id + otype
        while position + 16 <= 8 + size {
            let key = atom.loadUnaligned(fromByteOffset: position, as: UInt32.self)
            let value = atom + position + 8
            let valueSize = Int(value.loadUnaligned(as: UInt32.self))
            result.append((key, value))
            position += 8 + (8 + valueSize + 7) / 8 * 8
        }
        return result
    }

    /// The value of an atom at `pointer` (header included), if it is a type Sonora reads.
    func value(at pointer: UnsafeRawPointer) -> LV2PatchValue? {
        let size = Int(pointer.load(as: UInt32.self))
        let type = pointer.load(fromByteOffset: 4, as: UInt32.self)
        let body = pointer + 8
        switch urids.uri(of: type) {
        case LV2URI.atomInt where size >= 4: return .int(body.loadUnaligned(as: Int32.self))
        case LV2URI.atomLong where size >= 8: return .long(body.loadUnaligned(as: Int64.self))
        case LV2URI.atomFloat where size >= 4: return .float(body.loadUnaligned(as: Float.self))
        case LV2URI.atomDouble where size >= 8: return .double(body.loadUnaligned(as: Double.self))
        case LV2URI.atomBool where size >= 4: return .bool(body.loadUnaligned(as: Int32.self) != 0)
        case LV2URI.atomString: return .string(Self.text(body, size))
        case LV2URI.atomPath: return .path(Self.text(body, size))
        case LV2URI.atomURID where size >= 4: return urids.uri(of: body.loadUnaligned(as: UInt32.self)).map { .urid($0) }
        default: return nil
        }
    }

    static func text(_ body: UnsafeRawPointer, _ size: Int) -> String {
        let bytes = UnsafeRawBufferPointer(start: body, count: size)
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// patch:Set and patch:Put messages in a sequence's events (bytes after the sequence body): (property, value).
    func patchSets(inEvents events: UnsafeRawBufferPointer) -> [(String, LV2PatchValue)] {
        var result: [(String, LV2PatchValue)] = []
        guard let base = events.baseAddress else { return result }
        var offset = 0
        let setURID = urids.map(LV2URI.patchSet)
        let objectURID = urids.map(LV2URI.atomObject)
        let propertyURID = urids.map(LV2URI.patchProperty)
        let valueURID = urids.map(LV2URI.patchValue)
        let putURID = urids.map(LV2URI.patchPut)
        let bodyURID = urids.map(LV2URI.patchBody)
        while offset + 16 <= events.count {
            let atom = base + offset + 8  // after the event's frame time
            let size = Int(atom.loadUnaligned(as: UInt32.self))
            let type = atom.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
            guard offset + 16 + size <= events.count else { break }
            let otype = size >= 8 ? atom.loadUnaligned(fromByteOffset: 12, as: UInt32.self) : 0
            if type == objectURID && otype == setURID {
                var property: String?
                var value: LV2PatchValue?
                for (key, valueAtom) in properties(ofObjectAt: atom) {
                    if key == propertyURID, case .urid(let uri)? = self.value(at: valueAtom) { property = uri }
                    if key == valueURID { value = self.value(at: valueAtom) }
                }
                if let property, let value { result.append((property, value)) }
            } else if type == objectURID && otype == putURID {
                // patch:Put { patch:body [ key value … ] }: what plugins answer patch:Get with.
                for (key, body) in properties(ofObjectAt: atom) where key == bodyURID
                    && body.loadUnaligned(fromByteOffset: 4, as: UInt32.self) == objectURID
                {
                    for (property, valueAtom) in properties(ofObjectAt: body) {
                        if let uri = urids.uri(of: property), let value = self.value(at: valueAtom) { result.append((uri, value)) }
                    }
                }
            }
            offset += 16 + (size + 7) / 8 * 8
        }
        return result
    }
}
