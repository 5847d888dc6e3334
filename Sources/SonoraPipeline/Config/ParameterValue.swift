import SonoraCore
import SonoraDSP
import SonoraUnits

/// Reads a parameter value as written in a config — in the parameter's unit or a
/// compatible one (`-6 dB`, `1.2 kHz`, `250 ms`, `50 %`, `on`, a value name) or raw — and
/// converts it to the parameter's own unit.
public enum ParameterValue {
    /// The value in the parameter's unit, or a message saying why it cannot be.
    public static func parse(_ text: String, for info: AudioUnitParameterInfo, sampleRate: Double) -> Result<Float, ValueProblem> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let lower = trimmed.lowercased()
        if info.unit == .boolean || ["on", "off", "true", "false", "yes", "no"].contains(lower) {
            switch lower {
            case "on", "true", "yes", "1": return .success(1)
            case "off", "false", "no", "0": return .success(0)
            default:
                if info.unit == .boolean { return .failure(ValueProblem("'\(info.name)' is on or off, not '\(text)'")) }
            }
        }
        if let index = info.valueStrings.firstIndex(where: { $0.lowercased() == lower }) {
            return .success(info.minValue + Float(index))
        }
        // Split a number from a unit suffix.
        var numberEnd = trimmed.startIndex
        for index in trimmed.indices {
            let character = trimmed[index]
            if character.isNumber || "+-.eE".contains(character) { numberEnd = trimmed.index(after: index) } else { break }
        }
        guard let number = Double(trimmed[..<numberEnd]) else {
            let names = info.valueStrings.isEmpty ? "" : " or one of \(info.valueStrings.joined(separator: ", "))"
            return .failure(ValueProblem("'\(text)' is not a value for '\(info.name)' (a number\(info.unit.symbol.isEmpty ? "" : " in \(info.unit.symbol)")\(names))"))
        }
        let suffix = trimmed[numberEnd...].trimmingCharacters(in: .whitespaces).lowercased()
        let converted: Double
        switch (suffix, info.unit) {
        case ("", _): converted = number
        case ("db", .decibels): converted = number
        case ("db", .linearGain): converted = Decibels.toLinear(number)
        case ("hz", .hertz): converted = number
        case ("khz", .hertz): converted = number * 1000
        case ("s", .seconds), ("ms", .milliseconds): converted = number
        case ("ms", .seconds): converted = number / 1000
        case ("s", .milliseconds): converted = number * 1000
        case ("%", .percent): converted = number
        case ("%", .linearGain), ("%", .generic): converted = number / 100
        case ("cents", .cents), ("cents", .absoluteCents): converted = number
        case ("frames", .sampleFrames): converted = number
        case ("ms", .sampleFrames): converted = (number / 1000 * sampleRate).rounded()
        case ("s", .sampleFrames): converted = (number * sampleRate).rounded()
        case ("°", .degrees), ("deg", .degrees): converted = number
        case ("oct", .octaves), ("octaves", .octaves): converted = number
        default:
            let unitText = info.unit == .linearGain ? "a linear gain (a plain number, or in dB)"
                : info.unit.symbol.isEmpty ? "a plain number" : "in \(info.unit.symbol)"
            return .failure(ValueProblem("'\(info.name)' is \(unitText); '\(text)' is not"))
        }
        let value = Float(converted)
        guard value >= info.minValue && value <= info.maxValue else {
            let symbol = info.unit.symbol.isEmpty ? "" : " \(info.unit.symbol)"
            return .failure(ValueProblem("\(text) is out of range for '\(info.name)': \(format(info.minValue))…\(format(info.maxValue))\(symbol)"))
        }
        return .success(value)
    }

    static func format(_ value: Float) -> String {
        value == value.rounded() && abs(value) < 1e7 ? String(Int(value)) : String(value)
    }
}

/// Why a value does not fit a parameter, in words.
public struct ValueProblem: Error, Hashable, Sendable {
    public var message: String
    init(_ message: String) { self.message = message }
}

extension Float {
    var asDouble: Double { Double(self) }
}
