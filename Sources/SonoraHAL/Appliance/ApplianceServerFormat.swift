import SonoraCore

/// What the appliance runs at, as `hello` reports it: every stream uses this rate and
/// period.
public struct ApplianceServerFormat: Hashable, Sendable {
    public var sampleRate: Int
    public var periodFrames: Int
    public var periods: Int
    public var outputChannels: Int
    public var inputChannels: Int
    /// The name of the appliance's own device (`hw:0`, `null`, …).
    public var device: String

    public init(sampleRate: Int, periodFrames: Int, periods: Int, outputChannels: Int, inputChannels: Int, device: String) {
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.periods = periods
        self.outputChannels = outputChannels
        self.inputChannels = inputChannels
        self.device = device
    }

    var helloFields: [String: ApplianceValue] {
        [
            "server": "sonora", "version": 1, "sample_rate": .int(sampleRate), "period": .int(periodFrames), "periods": .int(periods),
            "output_channels": .int(outputChannels), "input_channels": .int(inputChannels), "device": .string(device),
        ]
    }

    init(hello fields: [String: ApplianceValue]) throws(AudioError) {
        guard fields["server"]?.stringValue == "sonora" else { throw AudioError(.badDevice, "the server did not answer hello as a Sonora appliance") }
        guard fields["version"]?.intValue == 1 else { throw AudioError(.badDevice, "the appliance speaks protocol version \(fields["version"]?.intValue ?? 0); this client speaks 1") }
        self.init(
            sampleRate: try fields.requiredInt("sample_rate", in: "hello reply"), periodFrames: try fields.requiredInt("period", in: "hello reply"),
            periods: try fields.requiredInt("periods", in: "hello reply"), outputChannels: try fields.requiredInt("output_channels", in: "hello reply"),
            inputChannels: try fields.requiredInt("input_channels", in: "hello reply"), device: (try? fields.requiredString("device", in: "hello reply")) ?? "")
        guard (1000...768_000).contains(sampleRate), (16...65536).contains(periodFrames), (2...64).contains(periods) else {
            throw AudioError(.badDevice, "the appliance announced an impossible format (\(sampleRate) Hz, period \(periodFrames), \(periods) periods)")
        }
    }
}
