import SonoraCore
import Synchronization

/// A property's value, typed by property.
public enum AudioUnitPropertyValue {
    case streamFormat(StreamFormat)
    case sampleRate(Double)
    case elementCount(Int)
    case maximumFramesPerSlice(Int)
    case latency(Double)
    case tailTime(Double)
    case bypass(Bool)
    case parameterList([AudioUnitParameterID])
    case parameterInfo(AudioUnitParameterInfo)
    case parameterValueStrings([String])
    case renderCallback(RenderCallback?)
    case connection(AudioUnitConnection?)
    case lastRenderError(AudioError.Code)
    case factoryPresets([AudioUnitPreset])
    case presentPreset(AudioUnitPreset?)
    case classInfo(AudioUnitState)
    case elementName(String?)
    /// A switch: EnableIO, IsRunning, HasIO, MeteringMode.
    case flag(Bool)
    /// A device, by the name that opens it (CurrentDevice).
    case device(String)
    /// What each channel carries (AudioChannelLayout); nil removes the layout.
    case channelLayout(AudioChannelLayout?)
    /// A 3D mixer input's placement (SpatializationAlgorithm).
    case spatializationAlgorithm(Mixer3DUnit.SpatializationAlgorithm)
    /// A 3D mixer input's RenderingFlags.
    case renderingFlags(Mixer3DUnit.RenderingFlags)
    /// A 3D mixer input's DistanceParams.
    case distanceParameters(Mixer3DUnit.DistanceParameters)
    /// A 3D mixer input's AttenuationCurve.
    case attenuationCurve(Mixer3DUnit.AttenuationCurve)
    /// A file, by path (the 3D mixer's HRTF file).
    case filePath(String)
}

/// Size in bytes (as Core Audio's C API would report it) and writability of a property.
public struct AudioUnitPropertyInfo: Hashable, Sendable {
    public var size: Int
    public var isWritable: Bool

    /// For units outside this module that add properties (`extendedPropertyInfo`).
    public init(size: Int, isWritable: Bool) {
        self.size = size
        self.isWritable = isWritable
    }
}

extension AudioUnit {
    // MARK: Generic addressing

    /// Size and writability of a property at an address, or the matching Core Audio error.
    public func propertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError) -> AudioUnitPropertyInfo
    {
        if let info = try extendedPropertyInfo(id, scope: scope, element: element) { return info }
        try checkAddress(id, scope: scope, element: element)
        switch id {
        case .streamFormat: return AudioUnitPropertyInfo(size: 40, isWritable: true)
        case .sampleRate: return AudioUnitPropertyInfo(size: 8, isWritable: true)
        case .elementCount:
            return AudioUnitPropertyInfo(size: 4, isWritable: scope == .input ? inputCountIsWritable : scope == .output && outputCountIsWritable)
        case .maximumFramesPerSlice: return AudioUnitPropertyInfo(size: 4, isWritable: true)
        case .latency, .tailTime: return AudioUnitPropertyInfo(size: 8, isWritable: false)
        case .bypassEffect: return AudioUnitPropertyInfo(size: 4, isWritable: true)
        case .parameterList: return AudioUnitPropertyInfo(size: 4 * (try parameterList(scope: scope)).count, isWritable: false)
        case .parameterInfo: return AudioUnitPropertyInfo(size: 104, isWritable: false)
        case .parameterValueStrings: return AudioUnitPropertyInfo(size: 8, isWritable: false)
        case .setRenderCallback: return AudioUnitPropertyInfo(size: 16, isWritable: true)
        case .makeConnection: return AudioUnitPropertyInfo(size: 12, isWritable: true)
        case .lastRenderError: return AudioUnitPropertyInfo(size: 4, isWritable: false)
        case .factoryPresets: return AudioUnitPropertyInfo(size: 8, isWritable: false)
        case .presentPreset: return AudioUnitPropertyInfo(size: 16, isWritable: true)
        case .classInfo: return AudioUnitPropertyInfo(size: 8, isWritable: true)
        case .elementName: return AudioUnitPropertyInfo(size: 8, isWritable: true)
        case .audioChannelLayout:
            // The size of the layout set, or of a bare header when none is (so a first set can ask).
            let layout = scope == .input ? inputs[element].layout : outputs[element].layout
            return AudioUnitPropertyInfo(size: layout?.byteSize ?? 12, isWritable: true)
        default: throw AudioError(.invalidProperty, "\(name) has no \(id)")
        }
    }

    /// A property's value at an address. For ParameterInfo and ParameterValueStrings
    /// the element is the parameter ID, as in Core Audio.
    public func property(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError) -> AudioUnitPropertyValue
    {
        if try extendedPropertyInfo(id, scope: scope, element: element) != nil {
            return try extendedProperty(id, scope: scope, element: element)
        }
        try checkAddress(id, scope: scope, element: element)
        switch id {
        case .streamFormat: return .streamFormat(try streamFormat(scope: scope, element: element))
        case .sampleRate:
            return .sampleRate(
                scope == .global
                    ? outputs.first?.format.sampleRate ?? inputs.first?.format.sampleRate ?? 0
                    : try streamFormat(scope: scope, element: element).sampleRate)
        case .elementCount: return .elementCount(elementCount(scope))
        case .maximumFramesPerSlice: return .maximumFramesPerSlice(maximumFramesPerSlice)
        case .latency: return .latency(latency)
        case .tailTime: return .tailTime(tailTime)
        case .bypassEffect: return .bypass(bypassEnabled)
        case .parameterList: return .parameterList(try parameterList(scope: scope))
        case .parameterInfo: return .parameterInfo(try parameterInfo(AudioUnitParameterID(element), scope: scope))
        case .parameterValueStrings:
            let info = try parameterInfo(AudioUnitParameterID(element), scope: scope)
            guard info.unit == .indexed, !info.valueStrings.isEmpty else {
                throw AudioError(.propertyNotInUse, "\(name): parameter \(element) has no value strings")
            }
            return .parameterValueStrings(info.valueStrings)
        case .setRenderCallback: return .renderCallback(inputs[element].callback)
        case .makeConnection: return .connection(inputs[element].connection)
        case .lastRenderError: return .lastRenderError(lastRenderError)
        case .factoryPresets: return .factoryPresets(factoryPresets)
        case .presentPreset: return .presentPreset(presentPresetValue)
        case .classInfo: return .classInfo(state)
        case .elementName: return .elementName(scope == .input ? inputs[element].name : outputs[element].name)
        case .audioChannelLayout: return .channelLayout(try channelLayout(scope: scope, element: element))
        default: throw AudioError(.invalidProperty, "\(name) has no \(id)")
        }
    }

    /// Sets a property. The value's case must match the property (else `-10851`).
    public func setProperty(
        _ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue
    ) throws(AudioError) {
        let info = try propertyInfo(id, scope: scope, element: element)
        guard info.isWritable else { throw AudioError(.propertyNotWritable, "\(name): \(id) is read-only") }
        if try extendedPropertyInfo(id, scope: scope, element: element) != nil {
            try setExtendedProperty(id, scope: scope, element: element, to: value)
            return
        }
        func mismatch() -> AudioError { AudioError(.invalidPropertyValue, "\(name): wrong kind of value for \(id)") }
        switch (id, value) {
        case (.streamFormat, .streamFormat(let format)): try setStreamFormat(format, scope: scope, element: element)
        case (.sampleRate, .sampleRate(let rate)): try setSampleRate(rate, scope: scope, element: element)
        case (.elementCount, .elementCount(let count)): try setElementCount(count, scope: scope)
        case (.maximumFramesPerSlice, .maximumFramesPerSlice(let frames)): try setMaximumFramesPerSlice(frames)
        case (.bypassEffect, .bypass(let on)): try setBypass(on)
        case (.setRenderCallback, .renderCallback(let callback)): try setRenderCallback(callback, input: element)
        case (.makeConnection, .connection(let connection)):
            if let connection {
                guard connection.destinationInput == element else { throw mismatch() }
                try connect(input: element, from: connection.sourceUnit, bus: connection.sourceBus)
            } else {
                try disconnect(input: element)
            }
        case (.presentPreset, .presentPreset(let preset)):
            guard let preset else { throw mismatch() }
            try setPresentPreset(preset)
        case (.classInfo, .classInfo(let state)): try restore(state)
        case (.audioChannelLayout, .channelLayout(let layout)): try setChannelLayout(layout, scope: scope, element: element)
        case (.elementName, .elementName(let text)):
            if scope == .input { inputs[element].name = text } else { outputs[element].name = text }
            notifyListeners(id, scope, element)
        default: throw mismatch()
        }
    }

    /// Checks that `scope` and `element` are valid for `id` on this unit.
    func checkAddress(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) {
        func scopes(_ allowed: AudioUnitScope...) throws(AudioError) {
            guard allowed.contains(scope) else {
                throw AudioError(.invalidScope, "\(name): \(id) is not available in the \(scope) scope")
            }
        }
        func requireElement(in scope: AudioUnitScope) throws(AudioError) {
            guard element >= 0 && element < elementCount(scope) else {
                throw AudioError(
                    .invalidElement, "\(name): \(scope) scope has \(elementCount(scope)) elements, not element \(element)")
            }
        }
        switch id {
        case .streamFormat, .elementName:
            try scopes(.input, .output)
            try requireElement(in: scope)
        case .audioChannelLayout:
            guard hasChannelLayouts else { throw AudioError(.invalidProperty, "\(name) has no \(id)") }
            try scopes(.input, .output)
            try requireElement(in: scope)
        case .sampleRate:
            try scopes(.global, .input, .output)
            if scope != .global { try requireElement(in: scope) }
        case .elementCount, .parameterList:
            try scopes(.global, .input, .output)
        case .parameterInfo, .parameterValueStrings:
            try scopes(.global, .input, .output)
        case .setRenderCallback, .makeConnection:
            try scopes(.input)
            try requireElement(in: .input)
        case .maximumFramesPerSlice, .latency, .tailTime, .bypassEffect, .lastRenderError, .factoryPresets,
            .presentPreset, .classInfo:
            try scopes(.global)
            if element != 0 { throw AudioError(.invalidElement, "\(name): \(id) has only global element 0") }
        default:
            throw AudioError(.invalidProperty, "\(name) has no \(id)")
        }
    }

    // MARK: Typed accessors

    public func streamFormat(scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> StreamFormat {
        try checkAddress(.streamFormat, scope: scope, element: element)
        return scope == .input ? inputs[element].format : outputs[element].format
    }

    public func setStreamFormat(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError)
    {
        try checkAddress(.streamFormat, scope: scope, element: element)
        if isInitialized {
            // Only the rate may change while initialized, and only on units that allow it.
            var sameButRate = scope == .input ? inputs[element].format : outputs[element].format
            sameButRate.sampleRate = format.sampleRate
            if sameButRate == format && canChangeSampleRateWhileInitialized(scope: scope) {
                try setSampleRate(format.sampleRate, scope: scope, element: element)
                notifyListeners(.streamFormat, scope, element)
                return
            }
        }
        try requireUninitialized(.streamFormat)
        guard supports(format, scope: scope, element: element) else {
            throw AudioError(.formatNotSupported, "\(name) cannot take \(format) on \(scope) element \(element)")
        }
        // A layout describes the channels it was set for; a new channel count drops it.
        if scope == .input {
            if inputs[element].format.channelsPerFrame != format.channelsPerFrame { inputs[element].layout = nil }
            inputs[element].format = format
        } else {
            if outputs[element].format.channelsPerFrame != format.channelsPerFrame { outputs[element].layout = nil }
            outputs[element].format = format
        }
        elementsDidChange(scope)
        notifyListeners(.streamFormat, scope, element)
    }

    /// The element's channel layout (AudioChannelLayout), or `-10850` if none was set.
    public func channelLayout(scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioChannelLayout {
        try checkAddress(.audioChannelLayout, scope: scope, element: element)
        guard let layout = scope == .input ? inputs[element].layout : outputs[element].layout else {
            throw AudioError(.propertyNotInUse, "\(name): \(scope) element \(element) has no channel layout set")
        }
        return layout
    }

    /// Sets (or, with nil, removes) an element's channel layout. A layout must describe as
    /// many channels as the element's stream format has (else `-10851`, as Core Audio refuses it).
    public func setChannelLayout(_ layout: AudioChannelLayout?, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError)
    {
        try checkAddress(.audioChannelLayout, scope: scope, element: element)
        if let layout {
            let channels = Int(try streamFormat(scope: scope, element: element).channelsPerFrame)
            guard layout.channelCount == channels else {
                throw AudioError(
                    .invalidPropertyValue,
                    "\(name): a layout of \(layout.channelCount) channels (\(layout)) does not fit \(scope) element \(element), which has \(channels)")
            }
        }
        if scope == .input { inputs[element].layout = layout } else { outputs[element].layout = layout }
        notifyListeners(.audioChannelLayout, scope, element)
    }

    /// Sets the sample rate of one element, or of every element for the global scope.
    public func setSampleRate(_ rate: Double, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) {
        try checkAddress(.sampleRate, scope: scope, element: element)
        guard rate > 0 && rate.isFinite else {
            throw AudioError(.invalidPropertyValue, "\(name): sample rate \(rate) is not a positive rate")
        }
        let live = isInitialized && canChangeSampleRateWhileInitialized(scope: scope)
        if !live { try requireUninitialized(.sampleRate) }
        let saved = (inputs.map(\.format), outputs.map(\.format))
        if scope == .global {
            for index in inputs.indices { inputs[index].format.sampleRate = rate }
            for index in outputs.indices { outputs[index].format.sampleRate = rate }
        } else if scope == .input {
            inputs[element].format.sampleRate = rate
        } else {
            outputs[element].format.sampleRate = rate
        }
        if live {
            do {
                try sampleRateDidChangeWhileInitialized()
            } catch {
                for (index, format) in saved.0.enumerated() { inputs[index].format = format }
                for (index, format) in saved.1.enumerated() { outputs[index].format = format }
                throw error
            }
        }
        notifyListeners(.sampleRate, scope, element)
    }

    public func setElementCount(_ count: Int, scope: AudioUnitScope) throws(AudioError) {
        let info = try propertyInfo(.elementCount, scope: scope, element: 0)
        guard info.isWritable else {
            throw AudioError(.propertyNotWritable, "\(name): the \(scope) element count is fixed at \(elementCount(scope))")
        }
        guard count >= 0 && count <= 4096 else {
            throw AudioError(.invalidPropertyValue, "\(name): element count \(count) is outside 0…4096")
        }
        try requireUninitialized(.elementCount)
        let old = parameterValuesByAddress
        if scope == .input {
            let template = inputs.first?.format ?? outputs.first?.format ?? .canonical(sampleRate: 48000, channels: 2)
            if count < inputs.count { inputs.removeLast(inputs.count - count) }
            while inputs.count < count { inputs.append(InputElement(format: template)) }
        } else {
            let template = outputs.first?.format ?? inputs.first?.format ?? .canonical(sampleRate: 48000, channels: 2)
            if count < outputs.count { outputs.removeLast(outputs.count - count) }
            while outputs.count < count { outputs.append(OutputElement(format: template)) }
        }
        rebuildParameterSlots(keeping: old)
        elementsDidChange(scope)
        notifyListeners(.elementCount, scope, 0)
    }

    public func setMaximumFramesPerSlice(_ frames: Int) throws(AudioError) {
        guard frames > 0 && frames <= 1 << 16 else {
            throw AudioError(.invalidPropertyValue, "\(name): maximum frames per slice \(frames) is outside 1…65536")
        }
        try requireUninitialized(.maximumFramesPerSlice)
        maximumFramesPerSlice = frames
        notifyListeners(.maximumFramesPerSlice, .global, 0)
    }

    public var isBypassed: Bool { bypassEnabled }

    public func setBypass(_ on: Bool) throws(AudioError) {
        guard supportsBypass else { throw AudioError(.invalidProperty, "\(name) cannot be bypassed") }
        bypassEnabled = on
        send(.setBypass(on))
        notifyListeners(.bypassEffect, .global, 0)
    }

    /// Feeds input `input` from `callback` (nil removes it). Allowed while initialized.
    public func setRenderCallback(_ callback: RenderCallback?, input: AudioUnitElement) throws(AudioError) {
        try checkAddress(.setRenderCallback, scope: .input, element: input)
        retire(inputs[input].callbackTarget)
        retire(inputs[input].connection?.sourceUnit)
        inputs[input].callback = callback
        inputs[input].callbackTarget = nil
        inputs[input].connection = nil
        send(.setInput(element: Int32(input), source: source(of: inputs[input])))
        notifyListeners(.setRenderCallback, .input, input)
    }

    /// Feeds input `input` from a Swift object; the unit keeps it alive while it may be called.
    public func setRenderCallback(_ target: RenderCallbackTarget, input: AudioUnitElement) throws(AudioError) {
        try setRenderCallback(RenderCallback(target), input: input)
        inputs[input].callbackTarget = target
    }

    /// Pulls input `input` from output element `bus` of `source` (MakeConnection).
    public func connect(input: AudioUnitElement, from source: AudioUnit, bus: AudioUnitElement) throws(AudioError) {
        try checkAddress(.makeConnection, scope: .input, element: input)
        guard bus >= 0 && bus < source.outputs.count else {
            throw AudioError(.invalidElement, "\(source.name) has \(source.outputs.count) output elements, not \(bus)")
        }
        guard source !== self else { throw AudioError(.invalidPropertyValue, "\(name) cannot feed itself") }
        let sourceChannels = source.outputs[bus].format.channelsPerFrame
        guard sourceChannels == inputs[input].format.channelsPerFrame else {
            throw AudioError(
                .formatNotSupported,
                "\(source.name) output \(bus) has \(sourceChannels) channels; \(name) input \(input) takes \(inputs[input].format.channelsPerFrame)")
        }
        retire(inputs[input].callbackTarget)
        retire(inputs[input].connection?.sourceUnit)
        inputs[input].callback = nil
        inputs[input].callbackTarget = nil
        inputs[input].connection = AudioUnitConnection(from: source, bus: bus, to: input)
        send(.setInput(element: Int32(input), source: self.source(of: inputs[input])))
        notifyListeners(.makeConnection, .input, input)
    }

    public func disconnect(input: AudioUnitElement) throws(AudioError) {
        try checkAddress(.makeConnection, scope: .input, element: input)
        retire(inputs[input].callbackTarget)
        retire(inputs[input].connection?.sourceUnit)
        inputs[input].callback = nil
        inputs[input].callbackTarget = nil
        inputs[input].connection = nil
        send(.setInput(element: Int32(input), source: .none))
        notifyListeners(.makeConnection, .input, input)
    }

    /// Records a connection made by a running graph, which applies it on the
    /// realtime side itself (atomically with the rest of its update).
    func recordConnection(input: AudioUnitElement, from source: AudioUnit?, bus: AudioUnitElement) {
        inputs[input].callback = nil
        inputs[input].callbackTarget = nil
        inputs[input].connection = source.map { AudioUnitConnection(from: $0, bus: bus, to: input) }
        notifyListeners(.makeConnection, .input, input)
    }

    /// The status of the last render that failed, or `.noError`.
    public var lastRenderError: AudioError.Code {
        guard let core else { return .noError }
        return AudioError.Code(rawValue: core.pointee.lastError.pointee.load(ordering: .relaxed))
    }

    public var presentPreset: AudioUnitPreset? { presentPresetValue }

    /// Applies a factory preset (by number) and makes it the present preset.
    public func setPresentPreset(_ preset: AudioUnitPreset) throws(AudioError) {
        guard let factory = factoryPresets.first(where: { $0.number == preset.number }) else {
            throw AudioError(
                .invalidPropertyValue, "\(name) has no factory preset \(preset.number) ('\(preset.name)')")
        }
        try applyFactoryPreset(factory)
        presentPresetValue = factory
        notifyListeners(.presentPreset, .global, 0)
    }

    /// The whole restorable state (ClassInfo).
    public var state: AudioUnitState {
        var parameters: [AudioUnitState.ParameterValue] = []
        for (index, definition) in parameterDefinitions.enumerated() where definition.info.flags.contains(.isWritable) {
            for element in 0..<elementCount(definition.scope) {
                parameters.append(
                    .init(id: definition.id, scope: definition.scope.rawValue, element: element,
                          value: slotValues[slotBases[index] + element]))
            }
        }
        func code(_ value: FourCharCode) -> String { value.characters ?? String(value.rawValue) }
        return AudioUnitState(
            type: code(componentDescription.type), subType: code(componentDescription.subType),
            manufacturer: code(componentDescription.manufacturer), version: 1, presentPreset: presentPresetValue,
            parameters: parameters, extra: extraState)
    }

    /// Restores a state saved from a unit of the same component.
    public func restore(_ state: AudioUnitState) throws(AudioError) {
        let saved = self.state
        guard state.type == saved.type, state.subType == saved.subType, state.manufacturer == saved.manufacturer else {
            throw AudioError(
                .invalidPropertyValue,
                "state is for \(state.type)/\(state.subType)/\(state.manufacturer), not \(componentDescription)")
        }
        try restoreExtraState(state.extra)
        for value in state.parameters {
            guard let scope = AudioUnitScope(rawValue: value.scope) else {
                throw AudioError(.invalidScope, "state names scope \(value.scope)")
            }
            try setParameter(value.id, scope: scope, element: value.element, to: value.value)
        }
        presentPresetValue = state.presentPreset
        notifyListeners(.classInfo, .global, 0)
    }

    /// Calls `handler` on the control thread after the property changes. Returns a token for removal.
    @discardableResult
    public func addPropertyListener(_ property: AudioUnitPropertyID, handler: @escaping PropertyListener) -> Int {
        nextListenerID += 1
        listeners.append((nextListenerID, property, handler))
        return nextListenerID
    }

    public func removePropertyListener(_ token: Int) {
        listeners.removeAll { $0.id == token }
    }

    func requireUninitialized(_ id: AudioUnitPropertyID) throws(AudioError) {
        guard !isInitialized else {
            throw AudioError(.initialized, "\(name): \(id) cannot change while initialized; uninitialize first")
        }
    }
}
