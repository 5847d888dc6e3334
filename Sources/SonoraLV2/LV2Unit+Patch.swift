import SonoraCore

/// Patch parameters (lv2:Parameter properties set with patch:Set, read with patch:Get) and
/// what plugins write to their atom outputs. Control side; the realtime side copies the
/// forged messages into the control atom input at the start of the next render.
extension LV2Unit {
    /// The atom input patch messages go to: one that supports patch:Message or is designated lv2:control.
    var patchInputPort: LV2Port? {
        let inputs = plugin.ports.filter { $0.kind == .atom && $0.direction == .input }
        return inputs.first { $0.supports.contains(LV2URI.patchMessage) || $0.designation == LV2URI.control } ?? inputs.first
    }

    /// Sends patch:Set for a patch:writable parameter (reaching the plugin at the start of the next render).
    public func setPatchParameter(_ uri: String, to value: LV2PatchValue) throws(AudioError) {
        guard let parameter = plugin.patchParameters.first(where: { $0.uri == uri }), parameter.isWritable else {
            throw AudioError(.invalidProperty, "\(name) (\(plugin.uri)) has no writable patch parameter \(uri)")
        }
        if let range = parameter.range, range != value.typeURI {
            throw AudioError(.invalidPropertyValue, "\(name): \(parameter.label) takes \(range), not \(value.typeURI)")
        }
        if case .float(let number) = value, let minimum = parameter.minimum, let maximum = parameter.maximum,
            !(minimum...maximum).contains(number)
        {
            throw AudioError(.invalidPropertyValue, "\(name): \(parameter.label) = \(number) is outside \(minimum)…\(maximum)")
        }
        try send(LV2AtomForge(urids: world.urids).patchSet(uri, value))
    }

    /// Asks the plugin for every patch parameter's value (patch:Get); its answers arrive on its
    /// atom outputs and are read by `drainAtomOutputs()`.
    public func requestPatchValues() throws(AudioError) {
        try send(LV2AtomForge(urids: world.urids).patchGet())
    }

    func send(_ atom: [UInt8]) throws(AudioError) {
        guard patchInputPort != nil else {
            throw AudioError(.invalidProperty, "\(name) (\(plugin.uri)) has no atom input for patch messages")
        }
        let sent = atom.withUnsafeBytes { patchQueue.push(tag: 0, $0.baseAddress, count: $0.count) }
        guard sent else { throw AudioError(.cannotDoInCurrentContext, "\(name): patch message queue full") }
    }

    /// One event a plugin wrote to an atom output.
    public struct AtomEvent: Sendable {
        public var port: Int
        public var frame: Int64
        public var type: String
        public var body: [UInt8]
    }

    /// Takes what the plugin wrote to its atom outputs since the last call (control side),
    /// updating `patchValues` from its patch:Set messages.
    @discardableResult
    public func drainAtomOutputs() -> [AtomEvent] {
        var events: [AtomEvent] = []
        let forge = LV2AtomForge(urids: world.urids)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        while let record = atomOutputRing.pop(into: buffer.baseAddress!, capacity: buffer.count) {
            guard record.count <= buffer.count else { continue }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<record.count])
            for (property, value) in forge.patchSets(inEvents: bytes) { patchValues[property] = value }
            var offset = 0
            while offset + 16 <= record.count {
                let frame = bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self)
                let size = Int(bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
                let type = bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)
                guard offset + 16 + size <= record.count else { break }
                events.append(
                    AtomEvent(
                        port: Int(record.tag), frame: frame, type: world.urids.uri(of: type) ?? "\(type)",
                        body: Array(bytes[(offset + 16)..<(offset + 16 + size)])))
                offset += 16 + (size + 7) / 8 * 8
            }
        }
        return events
    }

}
