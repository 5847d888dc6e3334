import SonoraCore

/// Metering as Core Audio's mixers do it: average power and peak (dB) per channel, before and
/// after each input's gain and on the output, measured only where MeteringMode is on (off by
/// default). The "post" meters of an input are its "pre" meters scaled by the gain applied in
/// that slice (one pass over the samples, not two).
extension Mixer3DUnit {
    /// Parameter definitions: the fixed ones, and one meter per channel of the widest input and of the output.
    static func definitions(inputChannels: Int, outputChannels: Int) -> [AudioUnitParameterDefinition] {
        func meter(_ id: AudioUnitParameterID, _ scope: AudioUnitScope, _ channels: Int, _ name: String, _ identifier: String)
            -> [AudioUnitParameterDefinition]
        {
            (0..<channels).map { channel in
                AudioUnitParameterDefinition(
                    id + AudioUnitParameterID(channel), scope: scope,
                    AudioUnitParameterInfo(
                        name: "\(name) \(channel)", identifier: "\(identifier)\(channel)", unit: .decibels, minValue: -120,
                        maxValue: 20, defaultValue: -120, flags: [.isReadable, .meterReadOnly]))
            }
        }
        var definitions = Self.fixedDefinitions + Self.auxiliaryDefinitions
        definitions += meter(Parameter.preAveragePower, .input, inputChannels, "Pre Average Power", "preAveragePower")
        definitions += meter(Parameter.prePeakHoldLevel, .input, inputChannels, "Pre Peak Hold Level", "prePeakHoldLevel")
        definitions += meter(Parameter.postAveragePower, .input, inputChannels, "Post Average Power", "postAveragePower")
        definitions += meter(Parameter.postPeakHoldLevel, .input, inputChannels, "Post Peak Hold Level", "postPeakHoldLevel")
        definitions += meter(Parameter.postAveragePower, .output, outputChannels, "Output Average Power", "outputAveragePower")
        definitions += meter(Parameter.postPeakHoldLevel, .output, outputChannels, "Output Peak Hold Level", "outputPeakHoldLevel")
        return definitions
    }

    var widestInput: Int { inputs.map { Int($0.format.channelsPerFrame) }.max() ?? 0 }
    var outputChannelCount: Int { Int(outputs.first?.format.channelsPerFrame ?? 2) }

    /// Re-declares the meters when a format or the input count changed their channels.
    func updateMeterParameters() {
        let inputChannels = widestInput, outputChannels = outputChannelCount
        guard inputChannels != meteredChannels.input || outputChannels != meteredChannels.output else { return }
        meteredChannels = (inputChannels, outputChannels)
        replaceParameterDefinitions(Self.definitions(inputChannels: inputChannels, outputChannels: outputChannels))
    }

    /// Slot of element 0 of each meter: [pre average, pre peak, post average, post peak][input channel],
    /// then [output average, output peak][output channel].
    func meterSlotTable() throws(AudioError) -> [Int] {
        var table: [Int] = []
        let inputChannels = meteredChannels.input, outputChannels = meteredChannels.output
        if !inputs.isEmpty {
            for id in [Parameter.preAveragePower, Parameter.prePeakHoldLevel, Parameter.postAveragePower, Parameter.postPeakHoldLevel] {
                for channel in 0..<inputChannels {
                    table.append(try parameterSlot(ParameterAddress(id + AudioUnitParameterID(channel), scope: .input, element: 0)))
                }
            }
        } else {
            table += Array(repeating: 0, count: 4 * inputChannels)
        }
        for id in [Parameter.postAveragePower, Parameter.postPeakHoldLevel] {
            for channel in 0..<outputChannels {
                table.append(try parameterSlot(ParameterAddress(id + AudioUnitParameterID(channel), scope: .output, element: 0)))
            }
        }
        return table
    }

    func meteringInfo(scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyInfo {
        guard scope == .input || scope == .output else {
            throw AudioError(.invalidScope, "\(name): MeteringMode is set per input or output element, not in the \(scope) scope")
        }
        guard element >= 0 && element < elementCount(scope) else {
            throw AudioError(.invalidElement, "\(name): \(scope) scope has \(elementCount(scope)) elements, not element \(element)")
        }
        return AudioUnitPropertyInfo(size: 4, isWritable: true)
    }

    /// MeteringMode may change while rendering: the render side picks it up at its next slice.
    func setMetering(_ on: Bool, scope: AudioUnitScope, element: AudioUnitElement) {
        if scope == .input { inputMetering[element] = on } else { outputMetering = on }
        renderer?.pointee.meteringFlags[scope == .input ? element : inputs.count].store(on, ordering: .relaxed)
        propertyDidChange(.meteringMode, scope: scope, element: element)
    }
}
