import SonoraUnits

/// How control ports become parameters.
///
/// Rule (stable across runs and machines): a control port's parameter ID is its
/// port index, in the global scope; `identifier` is the port symbol, so
/// `parameterDefinition(named: "gain")` finds it too. Control outputs become
/// read-only meter parameters. Ranges of `lv2:sampleRate` ports are multiplied by
/// the unit's sample rate (lilv leaves that to the host), so their values are in Hz.
enum LV2ParameterMapping {
    /// LV2 units (units:*) → Core Audio parameter units.
    static let units: [String: AudioUnitParameterUnit] = [
        "db": .decibels, "hz": .hertz, "khz": .hertz, "ms": .milliseconds, "s": .seconds, "pc": .percent,
        "cent": .cents, "semitone12TET": .relativeSemiTones, "midiNote": .midiNoteNumber, "bpm": .bpm,
        "beat": .beats, "degree": .degrees, "oct": .octaves, "coef": .generic, "frame": .sampleFrames,
    ]

    static func definition(for port: LV2Port, sampleRate: Double) -> AudioUnitParameterDefinition {
        let scale: Float = port.isSampleRateScaled ? Float(sampleRate) : 1
        var minimum = (port.minimum ?? 0) * scale
        var maximum = (port.maximum ?? (port.isToggled ? 1 : max(minimum + 1, 1))) * scale
        if maximum < minimum { swap(&minimum, &maximum) }
        var scaledDefault = port.defaultValue.map { $0 * scale }
        if port.isSampleRateScaled, let declared = port.defaultValue, let low = port.minimum, let high = port.maximum,
            !(min(low, high)...max(low, high)).contains(declared), (minimum...maximum).contains(declared)
        {
            // Some bundles (fomp's filters: range 0…0.5, default 440) give the default in Hz
            // although the range is in fractions of the rate; a fraction outside the range is taken as Hz.
            scaledDefault = declared
        }
        let defaultValue = min(max(scaledDefault ?? minimum, minimum), maximum)

        var unit: AudioUnitParameterUnit = .generic
        var valueStrings: [String] = []
        if port.isToggled {
            unit = .boolean
        } else if port.isEnumeration || port.isInteger {
            unit = .indexed
            // Value strings name each integer step from the minimum up, when scale points cover them.
            if port.isEnumeration, !port.scalePoints.isEmpty, maximum - minimum < 1024 {
                valueStrings = stride(from: minimum, through: maximum, by: 1).map { value in
                    port.scalePoints.first(where: { $0.value == value })?.label ?? String(Int(value))
                }
            }
        } else if let uri = port.unit, let tail = uri.split(separator: "#").last, let mapped = units[String(tail)] {
            unit = mapped
        }
        if port.isSampleRateScaled && unit == .generic { unit = .hertz }
        var flags: AudioUnitParameterFlags = port.direction == .input ? [.readWrite, .canRamp] : [.isReadable, .meterReadOnly]
        if port.direction == .output && unit == .decibels {
            // Read-only decibel parameters would be read back as linear meters; the port already holds dB.
            unit = .customUnit
        }
        if port.isLogarithmic { flags.insert(.displayLogarithmic) }
        if port.isToggled || port.isInteger || port.isEnumeration { flags.remove(.canRamp) }
        return AudioUnitParameterDefinition(
            AudioUnitParameterID(port.index), scope: .global,
            AudioUnitParameterInfo(
                name: port.name, identifier: port.symbol, unit: unit, minValue: minimum, maxValue: maximum,
                defaultValue: defaultValue, flags: flags, valueStrings: valueStrings))
    }
}
