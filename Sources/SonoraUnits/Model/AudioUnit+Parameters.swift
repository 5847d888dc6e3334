import SonoraCore
import SonoraDSP
import Synchronization

/// A parameter's full address.
public struct ParameterAddress: Hashable, Sendable, CustomStringConvertible {
    public var id: AudioUnitParameterID
    public var scope: AudioUnitScope
    public var element: AudioUnitElement

    public init(_ id: AudioUnitParameterID, scope: AudioUnitScope = .global, element: AudioUnitElement = 0) {
        self.id = id
        self.scope = scope
        self.element = element
    }

    public var description: String { "parameter \(id) (\(scope) \(element))" }
}

extension AudioUnit {
    /// Elements of a scope: 1 for global, the element count for input and output, 0 for group.
    public func elementCount(_ scope: AudioUnitScope) -> Int {
        switch scope {
        case .global: 1
        case .input: inputs.count
        case .output: outputs.count
        case .group: 0
        }
    }

    // Slot layout: definitions in order; a global parameter has one slot, an input or
    // output parameter one per element. Subclasses turn addresses into slots at
    // `allocateRenderResources()` time, and the realtime side indexes slots only.
    func rebuildParameterSlots(keeping old: [ParameterAddress: Float]) {
        var bases: [Int] = []
        var values: [Float] = []
        for definition in parameterDefinitions {
            bases.append(values.count)
            for element in 0..<elementCount(definition.scope) {
                let address = ParameterAddress(definition.id, scope: definition.scope, element: element)
                values.append(old[address] ?? definition.info.defaultValue)
            }
        }
        slotBases = bases
        slotValues = values
    }

    var parameterValuesByAddress: [ParameterAddress: Float] {
        var values: [ParameterAddress: Float] = [:]
        for (index, definition) in parameterDefinitions.enumerated() {
            for element in 0..<elementCount(definition.scope) {
                values[ParameterAddress(definition.id, scope: definition.scope, element: element)] =
                    slotValues[slotBases[index] + element]
            }
        }
        return values
    }

    /// The parameter IDs of a scope (ParameterList property).
    public func parameterList(scope: AudioUnitScope) throws(AudioError) -> [AudioUnitParameterID] {
        guard scope != .group else { throw AudioError(.invalidScope, "\(name) has no group scope") }
        return parameterDefinitions.filter { $0.scope == scope }.map(\.id)
    }

    /// Name, unit, range, default and flags of a parameter (ParameterInfo property).
    public func parameterInfo(_ id: AudioUnitParameterID, scope: AudioUnitScope = .global) throws(AudioError)
        -> AudioUnitParameterInfo
    {
        try definition(id, scope: scope).definition.info
    }

    /// The slot that holds a parameter, or the Core Audio error for a bad address.
    public func parameterSlot(_ address: ParameterAddress) throws(AudioError) -> Int {
        let (index, _) = try definition(address.id, scope: address.scope)
        guard address.element >= 0 && address.element < elementCount(address.scope) else {
            throw AudioError(
                .invalidElement,
                "\(name): \(address.scope) scope has \(elementCount(address.scope)) elements, not element \(address.element)")
        }
        return slotBases[index] + address.element
    }

    /// Looks up a parameter by its identifier (`gain`) or number, in any scope.
    public func parameterDefinition(named text: String) -> AudioUnitParameterDefinition? {
        parameterDefinitions.first { $0.info.identifier == text || $0.info.name == text || String($0.id) == text }
    }

    func definition(_ id: AudioUnitParameterID, scope: AudioUnitScope) throws(AudioError)
        -> (index: Int, definition: AudioUnitParameterDefinition)
    {
        if let index = parameterDefinitions.firstIndex(where: { $0.id == id && $0.scope == scope }) {
            return (index, parameterDefinitions[index])
        }
        if scope == .group || parameterDefinitions.contains(where: { $0.id == id }) {
            throw AudioError(.invalidScope, "\(name): parameter \(id) does not live in the \(scope) scope")
        }
        throw AudioError(.invalidParameter, "\(name) has no parameter \(id)")
    }

    /// The parameter's current value (the last one set; ramps report their target).
    public func parameter(_ id: AudioUnitParameterID, scope: AudioUnitScope = .global, element: AudioUnitElement = 0)
        throws(AudioError) -> Float
    {
        let slot = try parameterSlot(ParameterAddress(id, scope: scope, element: element))
        if let source = parameterSource { return try source.parameter(id, scope: scope, element: element) }
        let info = try definition(id, scope: scope).definition.info
        if info.flags.contains(.meterReadOnly) {
            guard let core else { return info.defaultValue }
            let value = Float(bitPattern: core.pointee.published[slot].load(ordering: .relaxed))
            if publishesMeanSquare(id) {
                return info.unit == .decibels ? max(info.minValue, Decibels.fromPower(value)) : value.squareRoot()
            }
            return info.unit == .decibels ? max(info.minValue, Decibels.fromLinear(value)) : value
        }
        return slotValues[slot]
    }

    /// Sets a parameter, taking effect `bufferOffset` frames into the next render
    /// (sample-accurately) when the unit is initialized. Values outside the
    /// parameter's range are clamped; the returned change says so.
    @discardableResult
    public func setParameter(
        _ id: AudioUnitParameterID, scope: AudioUnitScope = .global, element: AudioUnitElement = 0,
        to value: Float, bufferOffset: Int = 0
    ) throws(AudioError) -> ParameterChange {
        try scheduleParameter(
            ParameterAddress(id, scope: scope, element: element), from: nil, to: value, duration: 0,
            bufferOffset: bufferOffset)
    }

    /// Ramps a parameter from `start` (nil: its current value) to `end` over
    /// `duration` frames, starting `bufferOffset` frames into the next render.
    @discardableResult
    public func rampParameter(
        _ id: AudioUnitParameterID, scope: AudioUnitScope = .global, element: AudioUnitElement = 0,
        from start: Float? = nil, to end: Float, duration: Int, bufferOffset: Int = 0
    ) throws(AudioError) -> ParameterChange {
        try scheduleParameter(
            ParameterAddress(id, scope: scope, element: element), from: start, to: end, duration: duration,
            bufferOffset: bufferOffset)
    }

    func scheduleParameter(
        _ address: ParameterAddress, from start: Float?, to end: Float, duration: Int, bufferOffset: Int
    ) throws(AudioError) -> ParameterChange {
        let slot = try parameterSlot(address)
        let definition = try definition(address.id, scope: address.scope).definition
        guard definition.info.flags.contains(.isWritable) else {
            throw AudioError(.invalidParameter, "\(name): \(definition.info.name) is read-only")
        }
        guard bufferOffset >= 0, duration >= 0 else {
            throw AudioError(.invalidParameterValue, "\(name): buffer offset and ramp duration cannot be negative")
        }
        let applied = definition.info.clamp(end)
        let startValue = start.map { definition.info.clamp($0) }
        slotValues[slot] = applied
        if isInitialized {
            send(
                .parameter(
                    ParameterEvent(
                        slot: Int32(slot), frameOffset: Int32(clamping: bufferOffset), duration: Int32(clamping: duration),
                        startValue: startValue ?? 0, endValue: applied, hasStartValue: startValue != nil)))
        }
        parameterWasScheduled(address, from: startValue, to: applied, duration: duration, bufferOffset: bufferOffset)
        return ParameterChange(requested: end, applied: applied)
    }
}
