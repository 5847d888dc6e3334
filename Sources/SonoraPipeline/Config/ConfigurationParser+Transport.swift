import SonoraCore
import Yams
import SonoraUnits

extension ConfigurationParser {
    static let transportKeys = ["tempo", "meter", "playing"]
}

extension ConfigurationParser.Walker {
    /// `transport:` — `tempo` (BPM, 1…999), `meter` ("3/4"), `playing` (true/false).
    mutating func transport(_ node: Node) -> PipelineConfiguration.TransportSettings {
        var transport = PipelineConfiguration.TransportSettings()
        transport.location = location(node)
        for (key, _, value) in pairs(node, what: "transport", allowed: ConfigurationParser.transportKeys) {
            switch key {
            case "tempo":
                transport.tempo = number(value, "transport.tempo", in: PipelineConfiguration.TransportSettings.tempoRange) ?? transport.tempo
            case "meter":
                guard let text = string(value, "transport.meter") else { continue }
                do throws(AudioError) {
                    transport.timeSignature = try TimeSignature(parsing: text)
                } catch {
                    self.error(value, "transport.meter: \(error.message)")
                }
            case "playing":
                transport.isPlaying = boolean(value, "transport.playing") ?? transport.isPlaying
            default: break
            }
        }
        return transport
    }
}
