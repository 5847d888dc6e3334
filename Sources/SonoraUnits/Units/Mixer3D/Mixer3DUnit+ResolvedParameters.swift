import SonoraCore

extension Mixer3DUnit {
    /// An input-scope parameter looked up once (`resolveInputParameter(_:)`), for callers that
    /// set thousands a second: `setInputParameter(_:element:to:)` with it neither hashes the
    /// id nor searches the definitions.
    public struct ResolvedInputParameter: Sendable {
        public let id: AudioUnitParameterID
        /// Index of the definition (checked at each use: definitions change with the metering
        /// and auxiliary-bus properties) and its range.
        let index: Int
        let minimum: Float, maximum: Float, initial: Float
    }

    /// The input-scope parameter `id`, resolved; `invalidParameter` when the unit has none.
    public func resolveInputParameter(_ id: AudioUnitParameterID) throws(AudioError) -> ResolvedInputParameter {
        let (index, definition) = try self.definition(id, scope: .input)
        return ResolvedInputParameter(
            id: id, index: index, minimum: definition.info.minValue, maximum: definition.info.maxValue,
            initial: definition.info.defaultValue)
    }

    /// `setInputParameter(parameter.id, element: element, to: value)` without the lookup: the
    /// same clamp, stored value and render command. A parameter whose definition moved since it
    /// was resolved goes the general way.
    public func setInputParameter(_ parameter: ResolvedInputParameter, element: Int, to value: Float) throws(AudioError) {
        let index = parameter.index
        guard index < parameterDefinitions.count, parameterDefinitions[index].id == parameter.id,
            parameterDefinitions[index].scope == .input, element >= 0, element < inputs.count
        else {
            try setInputParameter(parameter.id, element: element, to: value)
            return
        }
        let applied = value.isNaN ? parameter.initial : min(max(value, parameter.minimum), parameter.maximum)
        let slot = slotBases[index] + element
        slotValues[slot] = applied
        if isInitialized {
            send(.parameter(ParameterEvent(slot: Int32(slot), frameOffset: 0, duration: 0, startValue: 0, endValue: applied, hasStartValue: false)))
        }
        parameterWasScheduled(ParameterAddress(parameter.id, scope: .input, element: element), from: nil, to: applied, duration: 0, bufferOffset: 0)
    }
}

extension Mixer3DUnit {
    /// One change for `setInputParameters(_:)`: `parameter` of input `element` to `value`.
    public struct InputParameterChange: Sendable {
        public var parameter: ResolvedInputParameter
        public var element: Int
        public var value: Float

        public init(_ parameter: ResolvedInputParameter, element: Int, value: Float) {
            self.parameter = parameter
            self.element = element
            self.value = value
        }
    }

    /// Makes every change in `changes`, in order, each as `setInputParameter(_:element:to:)`
    /// would (the same clamp, stored value and render command), but the definitions, slots
    /// and values are each reached once per call and the commands are published to the
    /// render side once (as `AudioUnit.send` publishes one). For a caller that changes
    /// parameters of many inputs at every update (the OpenAL-style API, at 60 Hz): per
    /// parameter, the exclusivity checks of those arrays and the publication's atomic
    /// operations were much of what a change cost. If any change names a parameter whose
    /// definition moved since it was resolved, or an element out of range, every change goes
    /// the single way (which throws at the first bad one).
    public func setInputParameters(_ changes: UnsafeBufferPointer<InputParameterChange>) throws(AudioError) {
        guard !changes.isEmpty else { return }
        let inputCount = inputs.count
        let current = parameterDefinitions.withUnsafeBufferPointer { definitions in
            for change in changes {
                let index = change.parameter.index
                guard change.element >= 0, change.element < inputCount, index < definitions.count,
                    definitions[index].id == change.parameter.id, definitions[index].scope == .input
                else { return false }
            }
            return true
        }
        guard current else {
            for change in changes { try setInputParameter(change.parameter, element: change.element, to: change.value) }
            return
        }
        let resources = isInitialized ? self.resources : nil
        var pushed = 0
        slotBases.withUnsafeBufferPointer { bases in
            slotValues.withUnsafeMutableBufferPointer { slots in
                for change in changes {
                    let parameter = change.parameter
                    let applied = change.value.isNaN ? parameter.initial : min(max(change.value, parameter.minimum), parameter.maximum)
                    let slot = bases[parameter.index] + change.element
                    slots[slot] = applied
                    guard let resources else { continue }
                    let command = RealtimeCommand.parameter(
                        ParameterEvent(slot: Int32(slot), frameOffset: 0, duration: 0, startValue: 0, endValue: applied, hasStartValue: false))
                    if push(command, to: resources) { pushed += 1 }
                }
            }
        }
        if let resources { publishCommands(pushed, to: resources) }  // once for the batch
        for change in changes {
            let parameter = change.parameter
            let applied = change.value.isNaN ? parameter.initial : min(max(change.value, parameter.minimum), parameter.maximum)
            parameterWasScheduled(
                ParameterAddress(parameter.id, scope: .input, element: change.element), from: nil, to: applied, duration: 0,
                bufferOffset: 0)
        }
    }
}
