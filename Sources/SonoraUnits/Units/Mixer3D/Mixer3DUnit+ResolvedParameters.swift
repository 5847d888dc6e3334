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
